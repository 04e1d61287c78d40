"""A reward function named in a TRL YAML file, found and read from its source: what
`frontier check-config` knows of it without importing the user's module.

The `trl.grpo` script imports `reward_funcs: [my_rewards.format_reward]` from the working
directory, and TRL calls it with the dataset's columns as keyword arguments. Before a model
loads, check-config finds the module as that import would, parses it and reads the
function's arguments: a module or a function that is not there is a mistake; the
arguments without a default that TRL does not pass itself are the columns it reads. A name
the source does not define as a plain `def` (a `functools.partial`, a class instance, a
name made at run time) is reported as not checked, never as a mistake.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from frontier_rft.core.config import did_you_mean
from frontier_rft.integrations.source_scan import imported_from, locate, parsed

__all__ = ["RewardSource", "reward_source"]

_MAX_HOPS = 8
"""`from x import name` re-exports followed before giving up."""


@dataclass(frozen=True)
class RewardSource:
    """What the source says of one reward function: its file and required arguments, or
    why it is a mistake (`problem`), or why it could not be read (`unchecked`)."""

    path: Path | None = None
    required: tuple[str, ...] = ()
    """Arguments without a default that can be passed by keyword (TRL passes all so)."""
    named: tuple[str, ...] = ()
    """Every argument that can be passed by keyword."""
    any_keyword: bool = True
    """Whether it takes **kwargs (then any keyword TRL passes is accepted)."""
    problem: str | None = None
    unchecked: str | None = None


def _signature(path: Path, args: ast.arguments) -> RewardSource:
    """The keyword-passable arguments of `args`, and those of them without a default."""
    positional = args.args  # after any positional-only ones, which TRL cannot fill
    without_default = positional[: len(positional) - len(args.defaults)]
    required = [a.arg for a in without_default]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return RewardSource(
        path,
        required=tuple(required),
        named=tuple(a.arg for a in [*positional, *args.kwonlyargs]),
        any_keyword=args.kwarg is not None,
    )


def _binds(node: ast.AST, name: str) -> bool:
    """Whether `node` binds `name` (an assignment target, a def, a class, an import)."""
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    return False


def _top_level_names(tree: ast.Module) -> list[str]:
    """Every name a module's top-level statements bind (defs, classes, assignments, imports)."""
    out = []
    for statement in tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.append(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.append(node.name)
            elif isinstance(node, ast.alias):
                out.append(node.asname or node.name.split(".")[0])
    return out


def _defined(tree: ast.Module, name: str) -> ast.AST | None:
    """The top-level statement that binds `name` last (a def, a class, an assignment)."""
    found: ast.AST | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                found = node
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                found = node
        elif any(_binds(n, name) for n in ast.walk(node)):
            found = node  # bound under an if/try/with: the source cannot say how
    return found


def _open(tree: ast.Module) -> bool:
    """Whether the module may bind names the source does not spell: `from x import *` or
    a module-level `__getattr__` or writes to `globals()`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("globals", "setattr"):
            return True
    return False


def reward_source(dotted: str, cwd: str | os.PathLike[str] | None = None) -> RewardSource:
    """The function `dotted` (`module.function`) as the `trl.grpo` script would import it,
    from `cwd` (default: the working directory) first, then sys.path; read, not run."""
    folder = os.fspath(cwd) if cwd is not None else os.getcwd()
    shown = f"reward function {dotted!r}"
    file, colon, function = dotted.rpartition(":")
    if colon and file.endswith(".py"):  # the last ':' after .py: C:/x.py:f keeps its drive
        return _file_and_function(file, function, shown, folder)
    module, _, name = dotted.rpartition(".")
    return _find(module, name, shown, folder, hops=0)


def _file_and_function(file: str, function: str, shown: str, folder: str) -> RewardSource:
    """A reward function named FILE.py:FUNCTION, which neither this script nor TRL's imports
    (both take a dotted path): a problem naming the file and the function, with the dotted
    path to write where the file is under `folder`."""
    path = Path(folder, file).expanduser()
    try:
        relative = path.resolve().relative_to(Path(folder).resolve()).with_suffix("")
    except (OSError, RuntimeError, ValueError):  # outside the folder: no dotted path to it
        relative = None
    dotted = ".".join(relative.parts) if relative is not None else ""
    importable = dotted and all(part.isidentifier() for part in dotted.split("."))
    fix = (
        f"write reward_funcs: [{dotted}.{function}] (a dotted import path, run from {folder})"
        if importable
        else f"move {Path(file).name} into {folder} and write reward_funcs: "
        f"[{Path(file).stem}.{function}] (a dotted import path)"
    )
    named = f"file {file}, function {function!r}"
    try:
        tree = parsed(path) if path.is_file() else None
    except (OSError, UnicodeDecodeError, ValueError, SyntaxError):
        tree = None  # the dotted path's own check reads it again and says why
    if not path.is_file():
        return RewardSource(problem=f"{shown} ({named}): no such file {str(path)!r}")
    if tree is not None and _defined(tree, function) is None and not _open(tree):
        bound = sorted(set(_top_level_names(tree)))
        hint = did_you_mean(function, bound)
        return RewardSource(path, problem=f"{shown}: {path} defines no {function!r}{hint}")
    return RewardSource(
        path,
        problem=f"{shown} ({named}): the script imports a reward function by its dotted path, "
        f"not FILE:FUNCTION: {fix}",
    )


def _find(module: str, name: str, shown: str, folder: str, hops: int) -> RewardSource:
    path = locate(module, [folder])
    if isinstance(path, str):
        return RewardSource(
            unchecked=f"{shown}: module {module!r} has no Python source to read, so its "
            "columns are not checked"
        )
    if path is None:
        where = module.replace(".", "/")
        return RewardSource(
            problem=f"{shown}: no module {module!r} is importable from {folder} (no "
            f"{where}.py there, nor an installed one); fix the dotted path, or run from the "
            "folder that holds it"
        )
    try:
        tree = parsed(path)
    except SyntaxError as exc:
        return RewardSource(
            path, problem=f"{shown}: {path} is not valid Python (line {exc.lineno}: {exc.msg})"
        )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return RewardSource(path, unchecked=f"{shown}: {path} cannot be read ({exc})")
    node = _defined(tree, name)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _signature(path, node.args)
    if isinstance(node, ast.ImportFrom) and hops < _MAX_HOPS:
        source = imported_from(tree, module, path, name)
        original = next(a.name for a in node.names if (a.asname or a.name) == name)
        if source is not None:
            return _find(source, original, shown, folder, hops + 1)
    if node is not None or _open(tree):
        return RewardSource(
            path, unchecked=f"{shown}: not a plain def in {path}, so its columns are not checked"
        )
    bound = sorted({n for n in _top_level_names(tree)})
    return RewardSource(
        path, problem=f"{shown}: {path} defines no {name!r}{did_you_mean(name, bound)}"
    )
