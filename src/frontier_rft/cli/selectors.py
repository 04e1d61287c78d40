"""`frontier selectors [NAME]`: what each selector reads, derives from prompts, and can take.

The table below is the user-facing summary of what the selectors do with a TaskPool; a test
builds every selector from prompts alone and checks its `evidence` against `from_prompts`.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

from frontier_rft.cli.common import UsageError
from frontier_rft.core.config import field_docs
from frontier_rft.selectors import SELECTORS

__all__ = ["NEEDS", "Needs", "add_command", "describe"]


@dataclass(frozen=True)
class Needs:
    """What a selector reads, and where that comes from."""

    uses: str
    """What the method reads besides rewards."""
    from_prompts: str
    """What it derives when the TaskPool holds prompt text only."""
    richer: str
    """TaskPool metadata it takes instead, when the user has it."""
    evidence: tuple[str, ...] = ()
    """`evidence/<what>/<source>` keys it reports when built from prompts alone."""


NEEDS: dict[str, Needs] = {
    "uniform": Needs("nothing", "nothing to derive", "nothing"),
    "offline": Needs(
        "a difficulty per task (easy to hard)",
        "difficulty = first observed pass rate, predicted from prompt-text features until seen",
        "difficulty=(N,) e.g. 1 - offline pass rate, or a level column",
        ("evidence/difficulty/observed", "evidence/features/text"),
    ),
    "adcl": Needs(
        "a difficulty per task, re-estimated between chunks",
        "difficulty = first observed pass rate, predicted from prompt-text features until seen",
        "difficulty=(N,); estimator= a pass-rate estimator (4 rollouts per prompt in METIS)",
        ("evidence/difficulty/observed", "evidence/features/text"),
    ),
    "prioritized": Needs(
        "its own running success rates", "nothing to derive", "nothing (rewards only)"
    ),
    "bots": Needs(
        "per-task Beta posteriors + implicit evidence for unselected tasks",
        "implicit evidence from a regression on prompt-text features (evidence/plugin/regression)",
        "reference_pass_rates=(N, 2) weak/strong models (the paper's interpolation); features=",
        ("evidence/plugin/regression", "evidence/features/text"),
    ),
    "mopps": Needs(
        "per-task Beta posteriors from its own rollouts (rho = 0)",
        "nothing to derive",
        "nothing (rewards only)",
        ("evidence/plugin/none",),
    ),
    "dots": Needs(
        "implicit evidence only (lam = rho = 1)",
        "implicit evidence from a regression on prompt-text features",
        "reference_pass_rates=(N, 2) weak/strong models (the paper's DOTS setting); features=",
        ("evidence/plugin/regression", "evidence/features/text"),
    ),
    "sec": Needs(
        "a category per task (the bandit's arms)",
        "categories = k-means clusters of prompt-text features",
        "categories=(N,) or (N, 2), e.g. a dataset's source and level columns",
        ("evidence/categories/kmeans_text",),
    ),
    "frontier": Needs(
        "task embeddings (retrieval of neighbours) and a key per task (de-duplication)",
        "prompt-text features; the prompt text as key",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings); keys=",
        ("evidence/features/text", "evidence/keys/prompts"),
    ),
    "metis": Needs(
        "the prompt text and a judge that predicts reward variance",
        "prompts are required; the judge is not derived",
        "judge= the policy (frontier train does this) or HeuristicJudge() (non-LLM)",
    ),
    "pcl": Needs(
        "task features (an online regressor predicts pass rates from them)",
        "prompt-text features",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings)",
        ("evidence/features/text",),
    ),
}


def describe(name: str, full: bool) -> str:
    """The text `frontier selectors` prints for one selector."""
    cls = SELECTORS[name]
    summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
    lines = [f"{name}: {summary}"]
    needs = NEEDS.get(name)
    if needs is not None:
        lines.append(f"  uses:         {needs.uses}")
        lines.append(f"  from prompts: {needs.from_prompts}")
        lines.append(f"  can take:     {needs.richer}")
    if full:
        docs = field_docs(cls.config_class)
        lines.append("  config (make_selector(name, pool, KEY=VALUE), --set KEY=VALUE):")
        defaults = cls.config_class()
        fields = [(f.name, repr(getattr(defaults, f.name))) for f in dataclasses.fields(defaults)]
        width = max(len(f"{k} = {v}") for k, v in fields)
        for key, value in fields:
            lines.append(f"    {f'{key} = {value}':<{width}}  {docs.get(key, '')}")
    return "\n".join(lines)


def _cmd(args: argparse.Namespace) -> int:
    if args.name and args.name not in SELECTORS:
        import difflib

        close = difflib.get_close_matches(args.name, SELECTORS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(SELECTORS))
        raise UsageError(f"unknown selector {args.name!r}{hint}; known: {known}")
    names = [args.name] if args.name else sorted(SELECTORS)
    print("\n\n".join(describe(n, full=bool(args.name)) for n in names))
    if not args.name:
        print("\n`frontier selectors NAME` adds the config fields with their defaults.")
    return 0


def add_command(sub: Any) -> None:
    """Register `selectors` on the `frontier` subparsers object."""
    p = sub.add_parser(
        "selectors",
        help="list selectors with the metadata each reads; NAME adds its config and defaults",
    )
    p.add_argument("name", nargs="?", help="a registered selector name (default: list all)")
    p.set_defaults(func=_cmd)
