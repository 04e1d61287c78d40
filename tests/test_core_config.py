"""check_field_types: one type check from the dataclass annotations, for every config."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from frontier_rft.core.config import check_field_types, check_least
from frontier_rft.core.jsonsafe import json_depth, loads_bounded


@dataclass(frozen=True)
class Example:
    flag: bool = True
    count: int = 3
    rate: float = 0.5
    bound: float = float("inf")
    name: str = "a"
    maybe: float | None = None
    values: tuple[float, ...] = (0.1, 0.2)
    extra: dict[str, int] | None = None

    infinite_ok: ClassVar[frozenset[str]] = frozenset({"bound"})

    def __post_init__(self) -> None:
        check_field_types(self)


def test_numpy_scalars_become_python_ones_and_lists_tuples() -> None:
    ex = Example(flag=np.bool_(False), count=np.int64(4), rate=np.float32(0.25), values=[1, 2.5])
    assert (ex.flag, ex.count, ex.rate, ex.values) == (False, 4, 0.25, (1, 2.5))
    assert type(ex.flag) is bool and type(ex.count) is int and type(ex.rate) is float
    assert Example(rate=2).rate == 2  # an int is a number


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("flag", 0, "Example.flag must be True or False, got 0"),
        ("flag", "yes", "Example.flag must be True or False"),
        ("count", True, "Example.count must be an int, got True"),
        ("count", 2.0, "Example.count must be an int, got 2.0"),
        ("count", 2**60, "at most 2\\*\\*53 - 1 in magnitude"),
        ("rate", "0.5", "Example.rate must be a number, got '0.5'"),
        ("rate", float("nan"), "Example.rate must be a finite number, got nan"),
        ("rate", float("inf"), "Example.rate must be a finite number, got inf"),
        ("rate", 10**400, "at most 2\\*\\*53 - 1 in magnitude"),
        ("bound", float("nan"), "Example.bound must be a finite number"),
        ("name", 3, "Example.name must be a string, got 3"),
        ("maybe", "x", "Example.maybe must be None or a number, got 'x'"),
        ("values", (0.1, None), "Example.values\\[1\\] must be a number, got None"),
        ("values", 0.1, "Example.values must be a tuple"),
        ("extra", [1], "Example.extra must be None or a dict, got \\[1\\]"),
    ],
)
def test_wrong_types_name_the_field_and_what_it_takes(
    field: str, value: object, needle: str
) -> None:
    with pytest.raises(ValueError, match=needle):
        Example(**{field: value})  # type: ignore[arg-type]


def test_infinity_only_where_the_class_allows_it() -> None:
    assert Example(bound=-float("inf")).bound == -float("inf")


def test_json_depth_ignores_brackets_in_strings_and_bounds_parsing() -> None:
    assert json_depth('{"a": "[[[[", "b": [1, [2]]}') == 3
    assert json_depth('"\\"[["') == 0
    assert json_depth("") == 0
    # escaped backslashes before a quote, across the scan's chunk boundaries
    from frontier_rft.core import jsonsafe

    text = json.dumps(["a\\" * 200_000, '"[' * 100_000, [[1, 2], {"a": [3]}]])
    assert jsonsafe.json_shape(text) == (4, 10)
    assert jsonsafe.json_shape("[" * 300_000 + "]" * 300_000) == (300_000, 300_001)
    assert loads_bounded("[[1]]", max_chars=10, max_depth=2) == [[1]]
    with pytest.raises(ValueError, match="nesting depth 300000 exceeds 64"):
        loads_bounded("[" * 300_000, max_chars=10**6, max_depth=64)
    with pytest.raises(ValueError, match="exceeds 4"):
        loads_bounded("[1, 2]", max_chars=4, max_depth=64)


def test_jsonl_records_say_where_and_what_is_wrong() -> None:
    import io

    from frontier_rft.core.jsonsafe import jsonl_records

    def read(text: str, fix: str = "") -> list[tuple[str, object]]:
        return list(jsonl_records(io.StringIO(text), "log", max_chars=20, max_depth=3, fix=fix))

    assert read('{"a": 1}\n\n[2]\n') == [("log: line 1", {"a": 1}), ("log: line 3", [2])]
    with pytest.raises(ValueError, match=r"^log: line 1 is not JSON \(.*\); see docs$"):
        read("nope\n", fix="see docs")
    with pytest.raises(ValueError, match=r"^log: line 2 is cut off"):
        read('{"a": 1}\n{"a": \n'.rstrip("\n"))
    with pytest.raises(ValueError, match=r"^log: line 1 is longer than 20 characters$"):
        read("[" + "1," * 20 + "1]\n")


@dataclass(frozen=True)
class Sizes:
    rows: object = 1
    spare: object = 0


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        (Sizes(rows=0), "rows must be a positive int, got 0"),
        (Sizes(rows=True), "rows must be a positive int, got True"),
        (Sizes(rows=2.0), "rows must be a positive int, got 2.0"),
        (Sizes(rows="4"), "rows must be a positive int, got '4'"),
        (Sizes(spare=-1), "spare must be a non-negative int, got -1"),
        (Sizes(spare=False), "spare must be a non-negative int, got False"),
    ],
)
def test_check_least_takes_only_ints_at_the_bound(sizes: Sizes, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        check_least(sizes, ("rows",), 1)
        check_least(sizes, ("spare",), 0)
    check_least(Sizes(rows=3, spare=0), ("rows",), 1)
    check_least(Sizes(rows=3, spare=0), ("spare",), 0)


@pytest.mark.parametrize("field", ["self_embeddings_batch_size", "self_embeddings_max_length"])
@pytest.mark.parametrize("value", [0, True, 2.5])
def test_adapters_take_self_embedding_sizes_as_positive_ints(field: str, value: object) -> None:
    from frontier_rft.integrations.trl.config import FrontierConfig
    from frontier_rft.integrations.verl.config import VerlSamplerConfig

    message = f"^{field} must be a positive int, got {value!r}$"
    with pytest.raises(ValueError, match=message):
        FrontierConfig(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        VerlSamplerConfig(batch_size=8, **{field: value})  # type: ignore[arg-type]
