"""Frozen hyperparameter dataclasses: defaults are the papers' values, validated on creation."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import itertools
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "SelectorConfig",
    "check",
    "check_choice",
    "config_from_dict",
    "config_to_dict",
    "field_docs",
]

C = TypeVar("C")


def check(ok: bool, message: str) -> None:
    """Raise ValueError(message) unless ok; used by config __post_init__ validators."""
    if not ok:
        raise ValueError(message)


def check_choice(name: str, value: object, choices: tuple[object, ...]) -> None:
    """Raise a ValueError naming the valid choices when value is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


@dataclass(frozen=True)
class SelectorConfig:
    """Fields every selector shares."""

    dedupe_window: int = 64
    """Steps for which (step, task) pairs are remembered to drop duplicated deliveries."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.dedupe_window, int) and self.dedupe_window >= 1,
            f"dedupe_window must be a positive int, got {self.dedupe_window!r}",
        )


def config_to_dict(config: SelectorConfig) -> dict[str, Any]:
    """JSON-ready dict of a config (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def config_from_dict(cls: type[C], values: Mapping[str, Any], *, what: str = "") -> C:
    """Build dataclass `cls` from a mapping; unknown keys raise a ValueError with close matches."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = [k for k in values if k not in names]
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, names, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        label = what or cls.__name__
        raise ValueError(
            f"unknown option(s) for {label}: {', '.join(hints)}; valid options: {', '.join(names)}"
        )
    hints_by_name = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        hint = str(hints_by_name.get(key, ""))
        if isinstance(value, list) and "tuple" in hint:
            value = tuple(value)
        kwargs[key] = value
    return cls(**kwargs)


def field_docs(cls: type) -> dict[str, str]:
    """The one-line docstring written under each dataclass field, base classes included."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        node = ast.parse(inspect.getsource(klass)).body[0]
        if not isinstance(node, ast.ClassDef):
            continue
        for field_node, doc in itertools.pairwise(node.body):
            if (
                isinstance(field_node, ast.AnnAssign)
                and isinstance(field_node.target, ast.Name)
                and isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                docs[field_node.target.id] = doc.value.value.strip()
    return docs
