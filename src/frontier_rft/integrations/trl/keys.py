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

from frontier_rft.integrations.source_scan import imported_from, module_file, parsed

__all__ = ["TRL_CLASSES", "dataclass_fields_from_source"]

TRL_CLASSES = {
    "grpo": ("GRPOConfig", "ScriptArguments", "ModelConfig"),
    "rloo": ("RLOOConfig", "ScriptArguments", "ModelConfig"),
}
"""The classes whose fields TrlParser accepts, per trainer (all exported by `trl`)."""

_MAX_HOPS = 12
"""Imports and base classes followed for one class before giving up (TRL needs ~5)."""


def _is_classvar(annotation: ast.expr) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar"))


def dataclass_fields_from_source(module: str, name: str, hops: int = 0) -> set[str] | None:
    """The field names of dataclass `name` exported by `module` (its own annotated
    attributes and its bases'), read from source; None when the source cannot be followed."""
    path = module_file(module)
    if path is None or hops > _MAX_HOPS:
        return None
    try:
        tree = parsed(path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        source = imported_from(tree, module, path, name)
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
