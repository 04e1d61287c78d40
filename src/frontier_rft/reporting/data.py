"""Read a benchmark results dict: validate its shape, group runs by label, average over seeds."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "FORMAT_PREFIX",
    "check_results",
    "display_label",
    "label_notes",
    "moving_average",
    "runs_by_label",
    "series",
    "smoothing_note",
    "smoothing_window",
    "step_bins",
    "tenth_window",
]

FORMAT_PREFIX = "frontier-rft-benchmark/"
PER_STEP = ("etr", "mean_abs_adv", "distinct_trained", "overhead_ms")


def _fail(message: str) -> None:
    raise ValueError(f"results: {message}")


def check_results(results: Mapping[str, Any]) -> int:
    """Raise a ValueError naming the problem unless `results` has the benchmark schema; return T."""
    fmt = results.get("format")
    if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
        _fail(f"format must start with {FORMAT_PREFIX!r} (a results.json), got {fmt!r}")
    for key in ("scenario", "settings", "labels", "runs", "summary"):
        if key not in results:
            _fail(
                f"missing key {key!r}; write results with frontier_rft.bench.simulation.benchmark"
            )
    labels = results["labels"]
    if not labels or len(set(labels)) != len(labels):
        _fail(f"labels must be a non-empty list of distinct names, got {labels!r}")
    baseline = results["settings"].get("baseline")
    if baseline not in labels:
        _fail(f"settings.baseline {baseline!r} is not one of the labels {labels}")
    steps: int | None = None
    seen: set[str] = set()
    n_bins = max(len(results.get("success_bins") or []) - 1, 0)
    n_cats = len(results.get("category_names") or [])
    for run in results["runs"]:
        where = f"run {run.get('label')!r} seed {run.get('seed')!r}"
        if run.get("label") not in labels:
            _fail(f"{where}: label is not listed in results['labels'] {labels}")
        seen.add(run["label"])
        t = len(run["score"]) - 1
        if steps is None:
            steps = t
        if t != steps or t < 1:
            _fail(f"{where}: score has {t + 1} entries, expected steps+1 = {steps + 1} (>= 2)")
        for key in PER_STEP:
            if key in run and len(run[key]) != steps:
                _fail(f"{where}: {key} has {len(run[key])} entries, expected {steps}")
        for key, width in (("success_hist", n_bins), ("category_counts", n_cats)):
            rows = run.get(key)
            if width and rows is not None and np.shape(rows) != (steps, width):
                _fail(f"{where}: {key} has shape {np.shape(rows)}, expected ({steps}, {width})")
    missing = [label for label in labels if label not in seen]
    if missing:
        _fail(f"labels {missing} have no runs; drop them from results['labels']")
    assert steps is not None
    return steps


def runs_by_label(results: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The runs of each label, in display order, each label's runs sorted by seed."""
    grouped: dict[str, list[Mapping[str, Any]]] = {label: [] for label in results["labels"]}
    for run in results["runs"]:
        grouped[run["label"]].append(run)
    return {k: sorted(v, key=lambda r: str(r.get("seed"))) for k, v in grouped.items()}


def series(runs: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """Stack one field over seeds: shape (seeds, T, ...); JSON nulls become NaN."""
    rows = [[np.nan if v is None else v for v in run[key]] for run in runs]
    return np.asarray(rows, dtype=float)


def label_notes(results: Mapping[str, Any]) -> dict[str, str]:
    """The non-empty notes of each label (e.g. 'non-LLM heuristic judge'), joined with '; '."""
    notes: dict[str, list[str]] = {label: [] for label in results["labels"]}
    for run in results["runs"]:
        note = str(run.get("note") or "").strip()
        if note and note not in notes[run["label"]]:
            notes[run["label"]].append(note)
    return {label: "; ".join(n) for label, n in notes.items() if n}


def display_label(label: str, results: Mapping[str, Any], notes: Mapping[str, str]) -> str:
    """How a label is shown in tables and legends: the baseline and any note made explicit."""
    extras = []
    if label == results["settings"].get("baseline"):
        extras.append("baseline")
    if label in notes:
        extras.append(notes[label])
    return f"{label} ({'; '.join(extras)})" if extras else label


def smoothing_window(steps: int) -> int:
    """Odd moving-average window of about 5% of the run (1 for short runs, at most 25)."""
    return int(min(25, 2 * (steps // 40) + 1))


def tenth_window(steps: int) -> int:
    """Odd moving-average window of about 10% of a run (the real-model training figures)."""
    return max(1, 2 * (steps // 20) + 1)


def smoothing_note(windows: Iterable[int]) -> str:
    """The smoothing of a figure's curves in words, for its title."""
    found = sorted(set(windows))
    if not found or found == [1]:
        return "not smoothed"
    if len(found) == 1:
        return f"smoothed: centred moving average over {found[0]} steps"
    return f"smoothed: centred moving average over {found[0]}–{found[-1]} steps (~10% of a run)"


def moving_average(x: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average along the last axis; shrinks at the edges and skips NaN."""
    if window <= 1:
        return np.asarray(x, dtype=float)
    x = np.asarray(x, dtype=float)
    valid = np.isfinite(x)
    half = window // 2
    pad = [(0, 0)] * (x.ndim - 1) + [(1, 0)]
    csum = np.cumsum(np.pad(np.where(valid, x, 0.0), pad), axis=-1)
    ccount = np.cumsum(np.pad(valid.astype(float), pad), axis=-1)
    n = x.shape[-1]
    hi = np.minimum(np.arange(n) + half + 1, n)
    lo = np.maximum(np.arange(n) - half, 0)
    total = csum[..., hi] - csum[..., lo]
    count = ccount[..., hi] - ccount[..., lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def step_bins(steps: int, max_bins: int = 50) -> np.ndarray:
    """Edges 0, w, 2w, ..., T of bins of w = ceil(T / max_bins) steps (the last may be short)."""
    width = max(1, math.ceil(steps / max_bins))
    return np.unique(np.append(np.arange(0, steps, width), steps))
