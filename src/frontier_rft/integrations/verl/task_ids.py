"""verl's task ids: each dataset position's stable id (`extra_info.index`, or a column the
sampler names), read once when the sampler is built and checked unique, and any ids a batch
or a caller hands over checked the same way (`as_task_ids`). verl silently uses 0 where the
id is missing, so an all-zero or duplicated column is an error. Imports neither verl nor
torch."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["as_task_ids", "read_task_ids"]


def read_task_ids(dataset: Any, key: str = "index") -> NDArray[np.int64]:
    """Stable task id of every dataset position, checked unique.

    key 'index' (the default): `extra_info.index`, straight from an RLHFDataset's table
    (fast, respects its filtering). Another key: that top-level column of the table, the
    same value verl puts in the batch under that key. Any other dataset is read item by
    item through `dataset[i][key]`.
    """
    n = len(dataset)
    frame = getattr(dataset, "dataframe", None)
    raw: Any = None
    columns = getattr(frame, "column_names", ()) if frame is not None else ()
    if key != "index" and frame is not None and hasattr(frame, "with_format"):
        if key not in columns:
            raise ValueError(
                f"task_id_key {key!r} is not a column of the training file (columns: "
                f"{sorted(columns)}); name the column that holds each row's stable task id, "
                "or leave task_id_key='index' for extra_info.index"
            )
        raw = (
            frame.select_columns([key]).with_format("arrow")[:][key].to_numpy(zero_copy_only=False)
        )
    elif key != "index":
        raw = [dataset[i].get(key) for i in range(n)]
    elif (
        frame is not None
        and hasattr(frame, "with_format")
        and "extra_info" in getattr(frame, "column_names", ())
    ):
        column = frame.select_columns(["extra_info"]).with_format("arrow")[:]["extra_info"]
        struct = column.combine_chunks()
        names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
        if "index" not in names:
            raise ValueError(
                "the training file has an extra_info column without an 'index' field; verl then "
                "uses task id 0 for every prompt. Add extra_info.index = a unique integer per row"
            )
        if struct.null_count:
            raise ValueError(
                f"{struct.null_count} row(s) have no extra_info; give every row a unique "
                "extra_info.index"
            )
        raw = struct.field("index").to_numpy(zero_copy_only=False)
    elif frame is not None and "extra_info" not in getattr(frame, "column_names", ("extra_info",)):
        raise ValueError(
            "the training file has no extra_info column; verl then uses task id 0 for every "
            "prompt. Add extra_info.index = a unique integer per row"
        )
    else:
        raw = [dataset[i].get(key) for i in range(n)]
    if _shape(raw) != (n,):
        raise ValueError(f"every dataset item needs one task id under {key!r}")
    ids = as_task_ids(raw, key, "row")
    _check_unique(ids)
    return ids


def _bad_task_id(value: Any) -> bool:
    """Whether `value` is not a task id: a non-negative integer below 2**63 (an integral
    float such as 3.0 counts; None, NaN, text and bools do not)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return True
    if isinstance(value, numbers.Integral):
        return not 0 <= int(value) < 2**63
    number = float(value)
    return not (math.isfinite(number) and number == round(number) and 0 <= number < 2**63)


def _shape(raw: Any) -> tuple[int, ...] | None:
    """np.shape(raw), None for a ragged nest (numpy's "inhomogeneous shape" error)."""
    try:
        return tuple(np.shape(raw))
    except ValueError:
        return None


def as_task_ids(
    raw: Any, key: str, item: str = "item", fix: str | None = None
) -> NDArray[np.int64]:
    """`raw` as a flat int64 array of task ids, or a ValueError naming `key` (the column or
    batch key they came from), the first offending value and its `item` number, ending
    with `fix` (default: fix `key` or set task_id_key)."""
    # Not np.asarray(list): a list mixing ints and text would turn every int into text.
    ids = (raw if isinstance(raw, np.ndarray) else np.array(raw, dtype=object)).reshape(-1)
    kind = ids.dtype.kind
    if kind in "iu" and (ids.size == 0 or (ids.min() >= 0 and ids.max() < 2**63)):
        return ids.astype(np.int64)  # uint64 from 2**63 on would wrap: checked below
    whole = kind == "f" and np.all(np.isfinite(ids) & (ids == np.round(ids)) & (ids >= 0))
    if whole and (ids.size == 0 or ids.max() < 2**63):
        return ids.astype(np.int64)
    values = ids.tolist()
    for i, value in enumerate(values):
        if _bad_task_id(value):
            missing = value is None or (isinstance(value, float) and math.isnan(value))
            what = "no task id" if missing else f"task id {value!r} ({type(value).__name__})"
            raise ValueError(
                f"{key!r} has {what} at {item} {i}: task ids must be non-negative integers "
                "below 2**63 (each prompt's stable id, e.g. extra_info.index); "
                + (fix or f"fix {key!r} or set task_id_key to the column that holds them")
            )
    return np.array(values, dtype=np.int64)


def _check_unique(ids: NDArray[np.int64]) -> None:
    if ids.size > 1 and np.all(ids == 0):
        raise ValueError(
            f"every one of the {ids.size} task ids is 0: verl falls back to index 0 when "
            "extra_info.index is missing. Give every row a unique extra_info.index"
        )
    uniq, counts = np.unique(ids, return_counts=True)
    if uniq.size != ids.size:
        dup = uniq[counts > 1]
        raise ValueError(
            f"task ids must be unique per prompt; {dup.size} id(s) repeat (first {int(dup[0])}, "
            f"{int(counts.max())} times). Give every row a unique extra_info.index"
        )
