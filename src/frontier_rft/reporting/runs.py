"""Tables (and the figure) comparing finished `frontier train` runs, callable from Python.

```python
from frontier_rft.reporting.runs import compare_runs, compare_seeds, failure_taxonomy_table
print(compare_runs(["runs/cd-uniform", "runs/cd-bots"]))
```

A run directory holds run.json (its config), metrics.jsonl (one line per step) and, once
finished, eval.json and eval_records.jsonl (the final held-out evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.core.jsonsafe import load_json_file, loads_bounded
from frontier_rft.metrics_log import MAX_LINE_CHARS, MAX_LINE_DEPTH, read_metrics_jsonl

__all__ = [
    "compare_runs",
    "compare_seeds",
    "failure_taxonomy_table",
    "group_runs",
    "plot_compared_runs",
    "run_label",
    "run_summary",
    "runs_table",
]

_SEED_METRICS = (
    ("start eval/mean_score", "start score"),
    ("eval/mean_score", "held-out score"),
    ("eval/pass@1", "pass@1"),
    ("eval/pass@8", "pass@8"),
    ("mean train/effective_task_ratio", "train ETR"),
    ("mean train/mean_abs_advantage", "train mean abs adv"),
    ("mean perf/step_s", "s/step"),
)
_COLUMN_ORDER = ("start eval/mean_score", "eval/mean_score", "eval/pass@", "eval/success", "mean ")


def _read_json(path: Path, what: str) -> Any:
    if not path.exists():
        raise ValueError(f"{path.parent} has no {path.name}: it is not {what}")
    data = load_json_file(path, f"the {path.name} of {what}")
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not the {path.name} of {what} (a JSON object expected)")
    return data


def run_label(run: str | Path) -> str:
    """A run's selector, marked "+ refs" when BOTS had reference pass rates."""
    config = _read_json(Path(run) / "run.json", "a frontier train run")["config"]
    return str(config["selector"]) + (" + refs" if config.get("reference_pass_rates") else "")


def group_runs(runs: Sequence[str | Path]) -> dict[str, list[str]]:
    """Runs grouped by label, in first-seen order (several runs of one label = seeds)."""
    groups: dict[str, list[str]] = {}
    for run in runs:
        groups.setdefault(run_label(run), []).append(str(run))
    return groups


def run_summary(run: str | Path) -> dict[str, Any]:
    """A finished run's final eval.json plus its training means and start score."""
    path = Path(run)
    if not path.is_dir():
        state = "is not a directory" if path.exists() else "does not exist"
        raise ValueError(f"{run} {state}; pass the directory of a frontier train run")
    if not (path / "eval.json").is_file():
        raise ValueError(
            f"{run} has no eval.json: the run has not finished (continue it with "
            f"`frontier train --out {run} --resume`) or is not a frontier train run"
        )
    summary: dict[str, Any] = _read_json(path / "eval.json", "a finished frontier train run")
    steps = read_metrics_jsonl(path / "metrics.jsonl")
    train = [s for s in steps if "train/reward_mean" in s]
    if train:
        for key in ("train/effective_task_ratio", "train/mean_abs_advantage", "perf/step_s"):
            summary[f"mean {key}"] = sum(s[key] for s in train) / len(train)
    starts = [s for s in steps if "eval/mean_score" in s and s["step"] == 0]
    if starts:
        summary["start eval/mean_score"] = starts[0]["eval/mean_score"]
    return summary


def compare_seeds(runs: Sequence[str | Path]) -> str:
    """Markdown table of mean ± std over the runs (seeds) of each selector."""
    rows = {label: [run_summary(r) for r in group] for label, group in group_runs(runs).items()}
    lines = [
        "| selector | seeds | " + " | ".join(name for _, name in _SEED_METRICS) + " |",
        "|---|---:|" + "---:|" * len(_SEED_METRICS),
    ]
    for label, summaries in rows.items():
        cells = []
        for key, _ in _SEED_METRICS:
            values = [s[key] for s in summaries if isinstance(s.get(key), float)]
            if not values:
                cells.append("-")
            elif len(values) == 1:
                cells.append(f"{values[0]:.3f}")
            else:
                mean = sum(values) / len(values)
                std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
                cells.append(f"{mean:.3f} ± {std:.3f}")
        lines.append(f"| {label} | {len(summaries)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _run_names(runs: Sequence[str | Path], summaries: Sequence[dict[str, Any]]) -> list[str]:
    """Row labels: each run's directory name (its path as given where two runs share a name),
    plus its selector, so two runs of one selector stay apart."""
    names = [Path(run).resolve().name for run in runs]
    labels = []
    for run, name, summary in zip(runs, names, summaries, strict=True):
        name = name if names.count(name) == 1 else str(run)
        selector = summary.get("selector")
        labels.append(name if selector in (None, name) else f"{name} ({selector})")
    return labels


def compare_runs(runs: Sequence[str | Path]) -> str:
    """Markdown table of stored final evaluations and training summaries, one row per run."""
    summaries = [run_summary(run) for run in runs]
    return runs_table(list(zip(_run_names(runs, summaries), summaries, strict=True)))


def _failures(path: Path) -> list[Any]:
    """Each held-out completion's failure category from an eval_records.jsonl (bounded
    parsing: a line that is not a record is a ValueError naming the file and line)."""
    out: list[Any] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = loads_bounded(line, max_chars=MAX_LINE_CHARS, max_depth=MAX_LINE_DEPTH)
                out.append(record["failure"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(
                    f"{path}: line {number} is not an evaluation record ({exc})"
                ) from None
    return out


def failure_taxonomy_table(runs: Sequence[str | Path]) -> str:
    """Counts and shares of each failure category among a run's failed eval completions."""
    from frontier_rft.tasks.taxonomy import FAILURE_CATEGORIES

    lines = [
        "| run | failed | " + " | ".join(FAILURE_CATEGORIES) + " |",
        "|---|---:|" + "---:|" * len(FAILURE_CATEGORIES),
    ]
    summaries = [_read_json(Path(r) / "eval.json", "a finished frontier train run") for r in runs]
    for run, name in zip(runs, _run_names(runs, summaries), strict=True):
        path = Path(run)
        failures = _failures(path / "eval_records.jsonl")
        counts = dict.fromkeys(FAILURE_CATEGORIES, 0)
        for f in failures:
            if f is not None:
                counts[f] = counts.get(f, 0) + 1
        total = sum(counts.values())
        cells = [f"{counts[c]} ({counts[c] / max(total, 1):.0%})" for c in FAILURE_CATEGORIES]
        lines.append(f"| {name} | {total} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _column_rank(key: str) -> tuple[int, str]:
    for rank, prefix in enumerate(_COLUMN_ORDER):
        if key.startswith(prefix):
            return rank, key
    return len(_COLUMN_ORDER), key


def runs_table(rows: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Markdown table: scores and pass@k first, then training means, failure shares last."""
    keys = sorted(
        {k for _, s in rows for k, v in s.items() if isinstance(v, float)}, key=_column_rank
    )
    lines = ["| run | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name, summary in rows:
        cells = [f"{summary[k]:.3f}" if isinstance(summary.get(k), float) else "-" for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_compared_runs(runs: Sequence[str | Path], out_png: str | Path) -> list[Path]:
    """The training-runs figure (runs grouped by selector: several seeds -> mean ± std),
    plus one METIS judge figure per METIS run next to it."""
    from frontier_rft.reporting.training_plots import plot_judge_metrics, plot_training_runs
    from frontier_rft.selectors.metis import METISSelector

    out = Path(out_png)
    groups = group_runs(runs)
    written = [plot_training_runs(groups, out)]
    for run in groups.get(METISSelector.name, []):
        name = f"{out.stem}-judge-{Path(run).parent.name}-{Path(run).name}.png"
        written.append(plot_judge_metrics(run, out.with_name(name)))
    return written
