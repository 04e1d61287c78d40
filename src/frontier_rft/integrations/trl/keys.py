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
from collections.abc import Mapping
from typing import Any

from frontier_rft.integrations.source_scan import imported_from, module_file, parsed

__all__ = [
    "TRL_CLASSES",
    "TRL_TYPES",
    "converter",
    "dataclass_annotations_from_source",
    "dataclass_fields_from_source",
    "parsed_as_trl",
]

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


def dataclass_fields_from_source(module: str, name: str) -> set[str] | None:
    """The field names of dataclass `name` exported by `module` (its own annotated
    attributes and its bases'), read from source; None when the source cannot be followed."""
    found = dataclass_annotations_from_source(module, name)
    return None if found is None else set(found)


def dataclass_annotations_from_source(
    module: str, name: str, hops: int = 0
) -> dict[str, str] | None:
    """Each field of dataclass `name` exported by `module` (its bases' first, its own
    overriding them) with its annotation's text, read from source; None when the source
    cannot be followed."""
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
        return None if source is None else dataclass_annotations_from_source(source, name, hops + 1)
    out: dict[str, str] = {}
    for base in cls.bases:
        if not isinstance(base, ast.Name):
            return None  # `module.Base` or a call: not followed
        if base.id == "object":
            continue
        inherited = dataclass_annotations_from_source(module, base.id, hops + 1)
        if inherited is None:
            return None
        out.update(inherited)
    for n in cls.body:
        if (
            isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name)
            and not _is_classvar(n.annotation)
        ):
            out[n.target.id] = ast.unparse(n.annotation)
    return out


TRL_TYPES = {
    **dict.fromkeys(
        ("per_device_train_batch_size", "gradient_accumulation_steps",
         "per_device_eval_batch_size", "max_steps", "num_iterations", "steps_per_generation",
         "generation_batch_size", "num_generations", "num_generations_eval",
         "max_completion_length", "vllm_tensor_parallel_size", "seed"),
        "int",
    ),
    "num_train_epochs": "float",
    **dict.fromkeys(("use_vllm", "use_cpu", "use_adaptive_entropy", "eval_on_start"), "bool"),
}  # fmt: skip
"""The annotations of the TRL 1.16 GRPOConfig fields `frontier check-config trl` reads, for a
check without TRL's source to read them from (a test keeps them equal to it)."""

_TRUE = ("yes", "true", "t", "y", "1")
_FALSE = ("no", "false", "f", "n", "0")
"""transformers' `string_to_bool` words (HfArgumentParser's type of a bool field)."""


def converter(annotation: str) -> str | None:
    """How TRL's parser (HfArgumentParser) converts a quoted value of a field annotated
    `annotation`: 'bool', 'int' or 'float' where that (or it or None) is the type; None: the
    string is kept (str, a Literal, a union with str, a list or a mapping)."""
    text = annotation.replace(" ", "")
    for wrapper in ("Optional[", "typing.Optional["):
        if text.startswith(wrapper) and text.endswith("]"):
            text = text[len(wrapper) : -1]
    names = {part for part in text.split("|") if part not in ("None", "NoneType")}
    return names.pop() if len(names) == 1 and names <= {"bool", "int", "float"} else None


def parsed_as_trl(
    values: Mapping[str, Any], annotations: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """A YAML file's `values` as TRL's parser hands them to the configs: a quoted value of a
    bool, int or float field (`annotations`: each field's annotation) converted as argparse
    converts a string default by the field's type (`num_generations: "4"` is 4,
    `use_cpu: "true"` is True); and one line per value it would refuse ("four" for an int),
    starting with its key, that value left as written (the check that reads it may word it)."""
    out, problems = dict(values), []
    for key, value in values.items():
        kind = converter(annotations.get(key, "")) if isinstance(value, str) else None
        if kind is None:
            continue
        text = value.strip()
        try:
            if kind == "bool":
                if text.lower() not in _TRUE + _FALSE:
                    raise ValueError(text)
                out[key] = text.lower() in _TRUE
            else:
                out[key] = int(text) if kind == "int" else float(text)
        except ValueError:
            words = "true or false (yes/no, 1/0)" if kind == "bool" else f"a number ({kind})"
            problems.append(
                f"{key} must be {words}, got {value[:40]!r}: TRL's parser refuses it before "
                "the run starts"
            )
    return out, problems
