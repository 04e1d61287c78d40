"""Frozen hyperparameter dataclasses: defaults are the papers' values, validated on creation."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import itertools
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from frontier_rft.core.bounds import MAX_STEP

__all__ = [
    "SelectorConfig",
    "check",
    "check_choice",
    "check_field_types",
    "check_least",
    "closest",
    "config_from_dict",
    "config_problems",
    "config_to_dict",
    "did_you_mean",
    "field_docs",
    "help_from_docstrings",
]

C = TypeVar("C")


def check(ok: bool, message: str) -> None:
    """Raise ValueError(message) unless ok; used by config __post_init__ validators."""
    if not ok:
        raise ValueError(message)


def check_least(config: object, names: typing.Iterable[str], lo: int) -> None:
    """Each field of `config` named in `names` an int (not a bool) at least lo (0 or 1), else
    a ValueError naming the first that is not."""
    kind = "non-negative" if lo == 0 else "positive"
    for name in names:
        value = getattr(config, name)
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo
        check(ok, f"{name} must be a {kind} int, got {value!r}")


def closest(word: object, choices: typing.Iterable[str]) -> str | None:
    """The one of `choices` closest to `word` (difflib's ratio >= 0.6), or None."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return close[0] if close else None


def did_you_mean(word: object, choices: typing.Iterable[str]) -> str:
    """' (did you mean 'bots'?)' for the closest of `choices` to `word`; '' when none is close."""
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def check_choice(name: str, value: object, choices: tuple[object, ...]) -> None:
    """Raise a ValueError naming the valid choices when value is not one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_field_types(obj: Any) -> None:
    """Check every field of dataclass `obj` against its annotation; normalise numpy scalars.

    bool fields take only True/False; int fields only ints (not bools) of magnitude at most
    2**53 - 1; float fields ints or floats, never NaN, and never +-inf unless the field is
    listed in the class's `infinite_ok`; str fields only strings; `X | None` also None;
    `tuple[X, ...]` a tuple (a list is converted) of X; dict fields a dict. Other
    annotations are left to the class's own checks. Raises ValueError naming the field.
    """
    cls = type(obj)
    infinite_ok: frozenset[str] = getattr(cls, "infinite_ok", frozenset())
    hints = _field_hints(cls)
    for f in dataclasses.fields(obj):
        if not f.init or f.name not in hints:
            continue
        value = getattr(obj, f.name)
        fixed = _checked(f"{cls.__name__}.{f.name}", value, hints[f.name], f.name in infinite_ok)
        if fixed is not value:
            object.__setattr__(obj, f.name, fixed)  # frozen dataclasses included


_HINTS: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _describe(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return "None or " + (_describe(inner[0]) if len(inner) == 1 else str(hint))
    names = {bool: "True or False", int: "an int", float: "a number", str: "a string"}
    names.update({dict: "a dict", tuple: "a tuple"})
    return names.get(hint, names.get(typing.get_origin(hint), str(hint)))


def _checked(what: str, value: Any, hint: Any, infinite_ok: bool) -> Any:
    """`value` (numpy scalars as Python ones) if it fits `hint`, else a ValueError."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    wrong = ValueError(f"{what} must be {_describe(hint)}, got {value!r}")
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if value is None and len(inner) < len(args):
            return None
        if len(inner) != 1:
            return value  # a union of several types: the class's own checks decide
        try:
            return _checked(what, value, inner[0], infinite_ok)
        except ValueError:
            raise wrong from None
    if hint is bool:
        if not isinstance(value, bool | np.bool_):
            raise wrong
        return bool(value)
    if hint is int:
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise wrong
        if abs(int(value)) > MAX_STEP:
            raise ValueError(f"{what} must be at most 2**53 - 1 in magnitude")
        return int(value)
    if hint is float:
        if isinstance(value, bool | np.bool_) or not isinstance(
            value, int | float | np.integer | np.floating
        ):
            raise wrong
        number = int(value) if isinstance(value, int | np.integer) else float(value)
        if isinstance(number, int) and abs(number) > MAX_STEP:
            raise ValueError(f"{what} must be at most 2**53 - 1 in magnitude")
        if math.isnan(number) or (math.isinf(number) and not infinite_ok):
            raise ValueError(f"{what} must be a finite number, got {value!r}")
        return number
    if hint is str:
        if not isinstance(value, str):
            raise wrong
        return value
    if origin is tuple:
        if not isinstance(value, tuple | list):
            raise wrong
        if len(args) != 2 or args[1] is not Ellipsis:
            return tuple(value)
        return tuple(_checked(f"{what}[{i}]", v, args[0], infinite_ok) for i, v in enumerate(value))
    if (origin or hint) is dict and not isinstance(value, dict):
        raise wrong
    return value


@dataclass(frozen=True)
class SelectorConfig:
    """Fields every selector shares."""

    dedupe_window: int = 64
    """Steps for which (step, task) pairs are remembered to drop duplicated deliveries."""

    infinite_ok: ClassVar[frozenset[str]] = frozenset()
    """Float fields that may be +-inf (every other float field must be finite)."""

    def __post_init__(self) -> None:
        check_field_types(self)  # subclasses call this first, then check ranges
        check(
            self.dedupe_window >= 1,
            f"dedupe_window must be a positive int, got {self.dedupe_window!r}",
        )


def config_to_dict(config: SelectorConfig) -> dict[str, Any]:
    """JSON-ready dict of a config (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def config_from_dict(
    cls: type[C],
    values: Mapping[str, Any],
    *,
    what: str = "",
    fixed: Mapping[str, Any] | None = None,
) -> C:
    """Build dataclass `cls` from a mapping; unknown keys raise a ValueError with close matches.
    `fixed` fields are set by the caller: not options of `values`, nor listed as valid."""
    fixed = fixed or {}
    names = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]  # type: ignore[arg-type]
    unknown = [k for k in values if k not in names]
    if unknown:
        hints = [f"{key!r}{did_you_mean(key, names)}" for key in unknown]
        label = what or cls.__name__
        raise ValueError(
            f"unknown option(s) for {label}: {', '.join(hints)}; valid options: {', '.join(names)}"
        )
    hints_by_name = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = dict(fixed)
    for key, value in values.items():
        hint = str(hints_by_name.get(key, ""))
        if isinstance(value, list) and "tuple" in hint:
            value = tuple(value)
        kwargs[key] = value
    return cls(**kwargs)


def config_problems(
    cls: type, values: Mapping[str, Any], *, fixed: Mapping[str, Any] | None = None
) -> list[str]:
    """Every mistake in `values` for dataclass `cls`, not only the first: each unknown key
    (with the closest field name) and each value the class refuses, judged next to the
    given values it accepts (so `lo: 5, hi: 10` passes when the default hi is 3); a
    combination refused although each value passes alone is the last entry. [] when
    `config_from_dict(cls, values, fixed=fixed)` would succeed."""
    fixed = dict(fixed or {})
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in fixed]
    unknown = [k for k in values if k not in names]
    # The closest name for the first 100 only: difflib per key made 50,000 keys cost seconds.
    # The valid options once, on the first line: a key with no close name still has a fix.
    problems = [
        f"unknown option {k!r}{did_you_mean(k, names) if i < 100 else ''}"
        + (f"; valid options: {', '.join(names)}" if i == 0 else "")
        for i, k in enumerate(unknown)
    ]
    given = {k: v for k, v in values.items() if k in names}

    def refusal(trial: Mapping[str, Any]) -> str | None:
        try:
            config_from_dict(cls, trial, fixed=fixed)
        except (TypeError, ValueError) as exc:
            return " ".join(str(exc).split())
        return None

    whole = refusal(given)
    if whole is None:
        return problems
    accepted: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for key, value in given.items():
        why = refusal({**accepted, key: value})
        if why is None:
            accepted[key] = value
        else:
            refused[key] = why
    progress = True
    while progress:  # a value refused next to defaults may pass next to later values
        progress = False
        for key in list(refused):
            if refusal({**accepted, key: given[key]}) is None:
                accepted[key] = given[key]
                del refused[key]
                progress = True
    return problems + (list(refused.values()) if refused else [whole])


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


def help_from_docstrings(cls: type[C]) -> type[C]:
    """Class decorator: each field's one-line docstring becomes its `metadata["help"]`, the
    convention of transformers' HfArgumentParser and TRL's TrlParser (argparse's `%` escaped),
    so the docstrings stay the single source of a config's `--help`."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in docs and "help" not in f.metadata:
            help_text = " ".join(docs[f.name].split()).replace("%", "%%")
            f.metadata = types.MappingProxyType({**f.metadata, "help": help_text})
    return cls
