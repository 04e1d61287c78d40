"""verl's own keys in a verl config, checked against the config of the verl installed.

verl ships each trainer config fully composed, every key with its default, as
`verl/trainer/config/_generated_<trainer>.yaml` (its CI regenerates them from the YAML
files that `ppo_trainer` composes). Where a section names a dataclass (`_target_:
verl.trainer.config.AlgoConfig`), verl builds it, after Ray starts, and refuses a key that
is not one of its fields: such a key is a problem, with the closest field. The YAML lists
only some fields (AlgoConfig's gdpo_reward_keys is not in it), so the fields are read from
the dataclass's source. In a plain section (`data`) verl ignores a key it does not read, and
reads a few it does not declare (`data.cache_dir`): an undeclared key close to a declared
one (`data.train_batch_sz`) is a problem naming it, any other a note. Under a declared
null, empty mapping or value (`sampler_kwargs: {}`) anything goes. All found without
importing verl (its files are read, not run), so no torch and no Ray; without verl
installed, the keys are counted and said to be unchecked.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.metadata
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from frontier_rft.core.config import closest
from frontier_rft.integrations.preflight import Report, shown

__all__ = ["NEAR_MISS", "check_verl_keys"]

NEAR_MISS = 0.8
"""A key of a plain section at least this close (difflib's ratio) to a declared sibling is
taken for a typo of it: a one-letter slip of a 10-letter key scores 0.9 or more."""
MAX_NAMED = 100
"""Undeclared keys given a closest-name search and named; the rest are counted (a hostile
file may hold 70,000)."""
SKIPPED = ("hydra", "defaults", "model_engine")
"""Top-level keys that are Hydra's, not the trainer config's: a launch file's, and the
config group `ppo_trainer`'s defaults choose (`model_engine: dp`), which Hydra keeps."""
PLAIN_BASES = frozenset({"object", "ABC", "Mapping", "Generic"})
"""Base classes of verl's config dataclasses that add no field."""


class Undeclared(NamedTuple):
    """A key verl's config does not declare."""

    path: str
    """Its dotted path (the first undeclared part)."""
    near: str | None
    """The closest declared sibling, if close."""
    owner: str | None
    """The dataclass verl builds the section into (and that refuses the key), if any."""


def check_verl_keys(config: Mapping[str, Any], ours: str, report: Report) -> None:
    """Check every key of `config` outside `ours` (the dotted path of the frontier-rft
    sampler's fields) against the installed verl's config, into `report`."""
    found = _schemas(_primary(config))
    keys = _leaves(config, ours)
    if isinstance(found, str):
        if keys:
            report.notes.append(
                f"not checked: verl's own keys ({len(keys)} here), as {found}; in verl's "
                "environment this command checks them against verl's config (verl itself "
                "ignores a misspelt key in a YAML file's data section)"
            )
        return
    version, names, root, schemas = found
    unknown: dict[str, Undeclared] = {}  # by path: a section's keys share its prefix
    for path in keys:
        hit = _undeclared(path, root, schemas, search=len(unknown) < MAX_NAMED)
        if hit is not None:
            unknown.setdefault(hit.path, hit)
    named = list(unknown.values())[:MAX_NAMED]
    report.add("", [f"unknown key {shown(u.path)}: not a field of verl {version}'s "
                    f"{u.owner}{_hint(u)}" for u in named if u.owner])  # fmt: skip
    report.add("", [f"unknown key {shown(u.path)}: not in verl {version}'s config, which "
                    f"ignores it{_hint(u)}" for u in named if not u.owner and u.near])  # fmt: skip
    others = [shown(u.path) for u in named if not u.owner and not u.near]
    if others:
        report.notes.append(
            f"not in verl {version}'s {names} config (verl reads a few keys it does not "
            f"declare; check the spelling): {', '.join(others)}"
        )
    if len(unknown) > len(named):
        report.notes.append(f"{len(unknown) - len(named)} more keys not in verl's config")
    report.notes.append(f"verl's own keys: {len(keys)} checked against verl {version}'s {names} "
                        "config")  # fmt: skip


def _hint(key: Undeclared) -> str:
    return f" (did you mean {key.near!r}?)" if key.near else ""


def _leaves(config: Mapping[str, Any], ours: str) -> list[str]:
    """The dotted path of every leaf of `config`, outside `ours` and Hydra's keys; a mapping
    is walked, anything else (lists included) is a leaf. Iterative: no recursion limit."""
    out: list[str] = []
    stack = [(str(k), v) for k, v in reversed(list(config.items())) if str(k) not in SKIPPED]
    while stack:
        path, value = stack.pop()
        if path == ours:
            continue
        if isinstance(value, Mapping) and value:
            stack += [(f"{path}.{k}", v) for k, v in reversed(list(value.items()))]
        else:
            out.append(path)
    return out


def _undeclared(
    path: str, root: Path, schemas: list[Mapping[str, Any]], *, search: bool
) -> Undeclared | None:
    """None when some schema allows `path`; else its first undeclared part (with the
    closest sibling when `search`), the refusing dataclass's hit preferred."""
    best: Undeclared | None = None
    parts = path.split(".")
    for schema in schemas:
        node: Any = schema
        for depth, part in enumerate(parts):
            if not isinstance(node, Mapping) or not node:
                return None  # declared as a value, null or {}: open below
            target = node.get("_target_")
            target = target if isinstance(target, str) else ""
            fields = _fields(root, target) if target else None
            if part in node:
                node = node[part]
                continue
            if fields is not None and part in fields:
                return None  # a field the YAML leaves out: its default, whatever its type
            declared = [str(k) for k in node] + sorted(fields or ())
            near: str | None = None
            if search and fields is not None:  # refused anyway: the closest name helps
                near = closest(part, declared)
            elif search:  # ignored by verl: a problem only when it is plainly a typo
                close = difflib.get_close_matches(part, declared, 1, NEAR_MISS)
                near = close[0] if close else None
            owner = target.rpartition(".")[2] if fields is not None else None  # refuses it
            hit = Undeclared(".".join(parts[: depth + 1]), near, owner)
            if best is None or _rank(hit) > _rank(best):
                best = hit
            break
        else:
            return None
    return best


def _rank(key: Undeclared) -> tuple[bool, bool]:
    """Which schema's verdict on a key to report: a refusing dataclass's, then a typo's."""
    return key.owner is not None, key.near is not None


def _fields(root: Path, target: str) -> frozenset[str] | None:
    """The fields of the dataclass `target` (verl's dotted name, e.g.
    verl.trainer.config.AlgoConfig) and its bases, read from verl's source; None when a
    class in the chain is not found there (then no key of the section is refused)."""
    module, _, name = target.rpartition(".")
    return _fields_in(str(root), module, name)


@functools.lru_cache(maxsize=256)
def _fields_in(root: str, module: str, name: str) -> frozenset[str] | None:
    base = Path(root).parent.joinpath(*module.split("."))
    files = sorted(base.glob("*.py")) if base.is_dir() else []
    if base.with_suffix(".py").is_file():  # a module: it, then its package's other modules
        files = [base.with_suffix(".py"), *sorted(base.parent.glob("*.py"))]
    files.append(Path(root) / "base_config.py")  # BaseConfig, the root of verl's configs
    classes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for file in files:
        for key, value in _classes(str(file)).items():
            classes.setdefault(key, value)
    out: set[str] = set()
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        if current in seen or current in PLAIN_BASES:
            continue
        seen.add(current)
        if current not in classes:
            return None
        bases, fields = classes[current]
        out.update(fields)
        todo += bases
    return frozenset(out)


@functools.lru_cache(maxsize=512)
def _classes(path: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each top-level class of a source file: (its bases' names, its annotated fields, not
    ClassVars); {} for a file that cannot be read or parsed."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = tuple(
            b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "?"
            for b in node.bases
        )
        fields = tuple(
            s.target.id
            for s in node.body
            if isinstance(s, ast.AnnAssign)
            and isinstance(s.target, ast.Name)
            and "ClassVar" not in ast.unparse(s.annotation)
        )
        out[node.name] = (bases, fields)
    return out


def _primary(config: Mapping[str, Any]) -> str | None:
    """The trainer config a launch file composes (`defaults: [ppo_trainer, _self_]`); None
    when it names none (a config Hydra already composed)."""
    defaults = config.get("defaults")
    if isinstance(defaults, list):
        for entry in defaults:
            if isinstance(entry, str) and entry.endswith("_trainer"):
                return entry
    return None


def _schemas(primary: str | None) -> str | tuple[str, str, Path, list[Mapping[str, Any]]]:
    """(verl's version, the configs' names, verl's package folder, their generated YAML)
    for `primary`, or every PPO trainer config when it is None or not verl's; a reason
    when there are none."""
    try:
        spec = importlib.util.find_spec("verl")  # finds the package without running it
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return "verl is not installed"
    root = Path(next(iter(spec.submodule_search_locations)))
    try:
        version = importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError:
        version = "(version unknown)"
    files = sorted((root / "trainer" / "config").glob("_generated_ppo*_trainer.yaml"))
    chosen = [f for f in files if f.name == f"_generated_{primary}.yaml"] or files
    if not chosen:
        return f"verl {version} ships no _generated_ppo_trainer.yaml"
    names = chosen[0].name.removeprefix("_generated_").removesuffix(".yaml")
    names = names if len(chosen) == 1 else "PPO trainer"  # a composed config: any of them
    return version, names, root, [_read(str(f)) for f in chosen]


@functools.lru_cache(maxsize=8)
def _read(path: str) -> Mapping[str, Any]:
    """verl's generated config (its own file, trusted; libyaml's reader where there is one)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as f:
        data = yaml.load(f, Loader=loader)  # a safe loader either way
    return data if isinstance(data, Mapping) else {}
