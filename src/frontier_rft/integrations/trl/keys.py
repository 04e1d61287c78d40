"""The keys TRL's parser accepts, read from TRL's source files instead of importing TRL.

Importing TRL imports torch and transformers: about 2 CPU seconds, more than checking a
whole 1 MiB config file. The fields of a dataclass are its annotated class attributes, so
they are read from the source with `ast` (the class, then each base class, following
imports and lazy `_import_structure` tables), without running any of it. Where the source
cannot be followed (a base class built dynamically, a moved module) the caller imports
TRL instead; a test checks both agree on the installed TRL.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["TRL_CLASSES", "dataclass_fields_from_source"]

TRL_CLASSES = {
    "grpo": ("GRPOConfig", "ScriptArguments", "ModelConfig"),
    "rloo": ("RLOOConfig", "ScriptArguments", "ModelConfig"),
}
"""The classes whose fields TrlParser accepts, per trainer (all exported by `trl`)."""

_MAX_HOPS = 12
"""Imports and base classes followed for one class before giving up (TRL needs ~5)."""


def _module_file(module: str) -> Path | None:
    """The source file of dotted `module`, found without importing anything but a
    top-level package's location (find_spec of a top-level name imports nothing)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    for candidate in (base / "__init__.py", base.parent / f"{base.name}.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _source_of(tree: ast.Module, module: str, path: Path, name: str) -> str | None:
    """The module `name` is imported from in `tree` (a `from x import name`, or a lazy
    `_import_structure = {"x": [..., "name"]}` table), as a dotted name."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
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


def _is_classvar(annotation: ast.expr) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar"))


def dataclass_fields_from_source(module: str, name: str, hops: int = 0) -> set[str] | None:
    """The field names of dataclass `name` exported by `module` (its own annotated
    attributes and its bases'), read from source; None when the source cannot be followed."""
    path = _module_file(module)
    if path is None or hops > _MAX_HOPS:
        return None
    try:
        tree = _tree(path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        source = _source_of(tree, module, path, name)
        return None if source is None else dataclass_fields_from_source(source, name, hops + 1)
    out = {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and not _is_classvar(n.annotation)
    }
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            return None  # `module.Base` or a call: not followed
        if base.id == "object":
            continue
        inherited = dataclass_fields_from_source(module, base.id, hops + 1)
        if inherited is None:
            return None
        out |= inherited
    return out
