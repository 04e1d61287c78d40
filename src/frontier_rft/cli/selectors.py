"""`frontier selectors [NAME]`: what each selector reads, derives from prompts, and can take.

Each selector's class declares what it reads (`Selector.needs`, a `core.facts.Needs`); a
test builds every selector from prompts alone and checks its `evidence` against it.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from typing import Any

from frontier_rft.cli.common import UsageError
from frontier_rft.core.config import SelectorConfig, did_you_mean, field_docs
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.plan import keeps_full
from frontier_rft.selectors import SELECTORS
from frontier_rft.selectors.registry import RETIRED

__all__ = ["WRAPPERS", "add_command", "describe"]

WRAPPERS = (
    "DAPO's dynamic sampling wraps any selector: DynamicSampling(selector, "
    "DynamicSamplingConfig(...)) (docs/selectors/dapo.md)"
)
"""What `frontier selectors` says about the wrapper that is not a selector."""


def describe(name: str, full: bool) -> str:
    """The text `frontier selectors` prints for one selector."""
    cls = SELECTORS[name]
    lines = [f"{name}: {_summary(cls)}"]
    lines.append(f"  uses:         {cls.needs.uses}")
    lines.append(f"  from prompts: {cls.needs.from_prompts}")
    lines.append(f"  can take:     {cls.needs.richer}")
    lines.append(f"  requires:     {_requires(cls)}")
    lines.append(f"  rollouts auto: {_auto(cls)}")
    if full:
        lines += _config_lines(cls)
    return "\n".join(lines)


def _config_lines(cls: type[Selector]) -> list[str]:
    """Every documented field of the selector's config with its default and its docstring on
    one line, then its documented class constants (bounds such as min_keep_floor), marked
    fixed: a user reads each rule the config checks against."""
    docs = field_docs(cls.config_class)
    defaults = cls.config_class()
    names = [f.name for f in dataclasses.fields(defaults)]
    rows = [(f"{k} = {getattr(defaults, k)!r}", docs.get(k, "")) for k in names]
    shared = field_docs(SelectorConfig)  # the base's settings for its own checks (infinite_ok)
    fixed = [k for k in docs if k not in names and k not in shared and not k.startswith("_")]
    rows += [(f"{k} = {getattr(defaults, k)!r} (fixed)", docs[k]) for k in fixed]
    width = max(len(left) for left, _ in rows)
    out = ["  config (make_selector(name, pool, KEY=VALUE), --set KEY=VALUE):"]
    out += [f"    {left:<{width}}  {' '.join(doc.split())}" for left, doc in rows]
    return out


def _summary(cls: type[Selector]) -> str:
    """The class docstring's first paragraph, on one line (a sentence may span lines)."""
    paragraph = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
    return " ".join(paragraph.split())


def _auto(cls: type[Selector]) -> str:
    """What an adapter's `rollouts: auto` does with it, where the trainer allows `kept`."""
    why = keeps_full(cls)
    kept = "each step generates only the prompts it keeps (same steps, fewer rollouts)"
    if why is None and cls.kept_level_epochs is not None:
        return (
            f"kept for a run of up to {cls.kept_level_epochs:g} epochs: {kept}; full "
            f"(uniform's bill) for a longer run: {cls.kept_loses}"
        )
    if why is None:
        return f"kept: {kept}"
    return f"full (uniform's bill): {why.removeprefix(f'selector {cls.name!r}').lstrip(': ')}"


def _requires(cls: type[Selector]) -> str:
    """What its default configuration refuses a pool without (one rule for every selector)."""
    need = cls.requirement(cls.config_class())
    if need is None:
        return "nothing but rewards"
    if len(need.fields) == 1:
        text = f"{need.fields[0]} (a pool without it is refused)"
    else:
        text = "one of " + ", ".join(need.fields) + " (a pool with none is refused)"
    settings = " or ".join(f"{k}={v!r}" for k, v, _ in need.instead)
    return f"{text}; {settings} runs without" if settings else text


def _cmd(args: argparse.Namespace) -> int:
    if args.name in RETIRED:  # a former selector, now a wrapper: say what to use
        raise UsageError(f"{RETIRED[args.name]} (docs/selectors/{args.name}.md)")
    if args.name and args.name not in SELECTORS:
        hint = did_you_mean(args.name, SELECTORS)
        known = ", ".join(sorted(SELECTORS))
        raise UsageError(f"unknown selector {args.name!r}{hint}; known: {known}")
    names = [args.name] if args.name else sorted(SELECTORS)
    print("\n\n".join(describe(n, full=bool(args.name)) for n in names))
    if not args.name:
        print(
            f"\n{WRAPPERS}.\n`frontier selectors NAME` adds the config fields with their defaults."
        )
    return 0


def add_command(sub: Any) -> None:
    """Register `selectors` on the `frontier` subparsers object."""
    p = sub.add_parser(
        "selectors",
        help="list selectors with the metadata each reads; NAME adds its config and defaults",
    )
    p.add_argument("name", nargs="?", help="a registered selector name (default: list all)")
    p.set_defaults(func=_cmd)
