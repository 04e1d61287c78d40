"""Python definitions read from source files with `ast`, without importing (running) anything.

`frontier check-config` reads what a config names this way: TRL's dataclass fields
(trl/keys.py) and the arguments of a user's reward functions (trl/reward_source.py).
Importing would run the code: torch and transformers for TRL (~2 CPU s), anything at all
for a user's module named in a config file. A module is located as Python's import system
would locate it (`PathFinder`, which imports nothing), its source parsed, and a name
followed through `from x import name` and lazy `_import_structure` tables.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Sequence
from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec, PathFinder
from pathlib import Path

__all__ = ["MAX_SOURCE_BYTES", "NOT_SOURCE", "imported_from", "locate", "module_file", "parsed"]

MAX_SOURCE_BYTES = 4 << 20
"""Largest source file parsed (a module of 4 MiB is generated code, not a reward function)."""


def _top_spec(top: str, search: Sequence[str]) -> ModuleSpec | None:
    """Where top-level module `top` is: in the folders `search` first, then wherever the
    import system finds it (sys.path, an editable install's finder). For a top-level name
    neither imports anything."""
    try:
        spec = PathFinder.find_spec(top, list(search)) if search else None
        return spec if spec is not None else importlib.util.find_spec(top)
    except (ImportError, ValueError, OSError):
        return None


NOT_SOURCE = "not source"
"""What `locate` says of a module that exists but has no Python source file to read (a
compiled extension, a namespace package, a package spread over several folders)."""


def locate(module: str, search: Sequence[str] = ()) -> Path | str | None:
    """Where dotted `module` is, looked for in the folders `search` and then as the import
    system would find it, without importing anything: its source file; NOT_SOURCE when it
    exists without one; None when it is not there."""
    top, *rest = module.split(".")
    if not top.isidentifier() or not all(part.isidentifier() for part in rest):
        return None
    spec = _top_spec(top, search)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        folders = list(spec.submodule_search_locations)
        if len(folders) != 1:
            return NOT_SOURCE
        base = Path(folders[0]).joinpath(*rest)
        for candidate in (base / "__init__.py", base.parent / f"{base.name}.py"):
            if candidate.is_file():
                return candidate
        compiled = (base.parent / f"{base.name}{s}" for s in EXTENSION_SUFFIXES)
        if base.is_dir() or any(c.is_file() for c in compiled):
            return NOT_SOURCE  # a namespace package, or a compiled extension
        return None
    origin = spec.origin
    if origin is None or not origin.endswith(".py"):
        return NOT_SOURCE  # a compiled extension, a frozen or built-in module
    return None if rest else Path(origin)  # a plain module has no submodules


def module_file(module: str, search: Sequence[str] = ()) -> Path | None:
    """The source file of dotted `module` (see `locate`), or None."""
    found = locate(module, search)
    return found if isinstance(found, Path) else None


@cache
def _parse(path: Path, mtime: float) -> ast.Module:
    del mtime  # part of the cache key only: an edited file is parsed again
    with open(path, encoding="utf-8") as fh:
        text = fh.read(MAX_SOURCE_BYTES + 1)
    if len(text) > MAX_SOURCE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB")
    return ast.parse(text)


def parsed(path: Path) -> ast.Module:
    """The syntax tree of source file `path` (OSError, SyntaxError, UnicodeDecodeError or
    ValueError when it cannot be read)."""
    return _parse(path, os.stat(path).st_mtime)


def imported_from(tree: ast.Module, module: str, path: Path, name: str) -> str | None:
    """The module `name` is imported from in `tree` (a `from x import name [as name]`, or a lazy
    `_import_structure = {"x": [..., "name"]}` table), as a dotted name; None if neither."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == name for a in node.names
        ):
            if node.level == 0:
                return node.module
            parts = package.split(".")
            parts = parts[: len(parts) - (node.level - 1)]
            return ".".join([*parts, *([node.module] if node.module else [])])
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and isinstance(value, ast.List)
                    and any(isinstance(e, ast.Constant) and e.value == name for e in value.elts)
                ):
                    return f"{package}.{key.value}"
    return None
