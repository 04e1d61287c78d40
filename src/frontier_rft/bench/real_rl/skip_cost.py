"""What an entry that passes over groups cost in signal, per epoch, against its paired uniform run.

An entry that trains fewer groups a step than uniform's B while walking uniform's window (the
`rollouts: kept` entries: the same prompt order as the same-seed uniform run, only the kept
prompts rolled out; screening's screened-out groups count as left out too) left out
L = sum_t (B - groups trained at t) groups in an epoch. Uniform rolled all of them out, so the
paired run estimates what they held:

- mixed groups lost = sum_t I_u(t) - sum_t I_s(t), I the step's mixed (informative) groups
  (`train/informative_groups`, uniform's and the entry's); as a share of uniform's sum;
- the left-out groups' mixed rate = lost / L, against the base rate sum_t I_u(t) / (B x steps):
  their ratio is 1 for a blind skip, 0 for one that left out only zero-variance groups.

These are estimates: after the first skip the two arms' policies differ a little, so the
entry's kept groups are not exactly what uniform's were (lost can even be negative). Entries
that roll out an audit share of would-be-skipped prompts are counted by their trained groups.
Over paired seeds each quantity is the mean of the per-seed values with a bootstrap 95% CI
(`mean_ci`); the ratio is the mean of per-seed ratios (a seed that left nothing out has none).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci

__all__ = [
    "GROUPS_TRAINED",
    "INFORMATIVE",
    "ledger_runs",
    "ledger_skip_cost",
    "passes_over_groups",
    "read_record",
    "skip_cost",
    "skip_cost_lines",
    "skip_cost_summary",
]

INFORMATIVE = "train/informative_groups"
"""Mixed groups among those a step rolled out (the trained ones where nothing is dropped)."""
GROUPS_TRAINED = "train/groups_trained"
"""Fresh groups a step trained on (screened-out and replayed groups not counted)."""
ROLLED_OUT = "train/prompts"
"""Groups a step rolled out (screened-out ones included)."""
SHARES = ("lost_share", "left_out_share", "left_out_rate", "base_rate", "rate_ratio")
"""The per-seed quantities summarised over seeds."""


def _column(run: Mapping[str, Any], key: str) -> np.ndarray | None:
    """A per-step training metric, or None where any step lacks it."""
    vals = [r.get(key) for r in run["train"]]
    if not vals or any(v is None for v in vals):
        return None
    return np.asarray(vals, dtype=float)


def passes_over_groups(run: Mapping[str, Any], batch: int) -> bool:
    """Whether a run trained fewer than `batch` groups at some step while rolling out at most
    `batch` a step (it walked a window of B, as `rollouts: kept` does; dynamic sampling,
    which rolls out more to fill B, is not one)."""
    trained, rolled = _column(run, GROUPS_TRAINED), _column(run, ROLLED_OUT)
    if trained is None or rolled is None or _column(run, INFORMATIVE) is None:
        return False
    return bool((trained < batch).any() and (rolled <= batch).all())


def _div(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def skip_cost(
    entry_run: Mapping[str, Any], uniform_run: Mapping[str, Any], batch: int, epoch_steps: int
) -> dict[int, dict[str, Any]]:
    """Per epoch (1, 2, ...; epoch_steps steps each, a last partial one included), the paired
    counts and shares of one seed (see the module docstring): steps (first, last; 1-based),
    uniform_mixed, entry_mixed, lost, lost_share, left_out, left_out_share (of B x steps),
    left_out_rate, base_rate and rate_ratio (nan where undefined)."""
    if batch < 1 or epoch_steps < 1:
        raise ValueError(f"batch and epoch_steps must be positive, got {batch}, {epoch_steps}")
    mixed_u, mixed_s = _column(uniform_run, INFORMATIVE), _column(entry_run, INFORMATIVE)
    trained = _column(entry_run, GROUPS_TRAINED)
    if mixed_u is None or mixed_s is None or trained is None:
        raise ValueError(
            f"skip_cost needs {INFORMATIVE} at every step of both runs and {GROUPS_TRAINED} at "
            "every step of the entry's"
        )
    steps = min(len(mixed_u), len(mixed_s))
    out: dict[int, dict[str, Any]] = {}
    for epoch, start in enumerate(range(0, steps, epoch_steps), 1):
        part = slice(start, min(start + epoch_steps, steps))
        n = part.stop - part.start
        u, s = float(mixed_u[part].sum()), float(mixed_s[part].sum())
        left = float((batch - trained[part]).sum())
        lost = u - s
        rate, base = _div(lost, left), u / (batch * n)
        out[epoch] = {
            "steps": (part.start + 1, part.stop),
            "uniform_mixed": u,
            "entry_mixed": s,
            "lost": lost,
            "lost_share": _div(lost, u),
            "left_out": left,
            "left_out_share": left / (batch * n),
            "left_out_rate": rate,
            "base_rate": base,
            "rate_ratio": _div(rate, base) if math.isfinite(rate) else float("nan"),
        }
    return out


def skip_cost_summary(
    entry_runs: Mapping[int, Mapping[str, Any]],
    uniform_runs: Mapping[int, Mapping[str, Any]],
    batch: int,
    epoch_steps: int,
) -> dict[str, Any]:
    """`skip_cost` over the seeds both ran: per epoch ("1", "2", ...: JSON keys), its steps
    and each of SHARES as `mean_ci` over the seeds (the ratio: the mean of per-seed ratios)."""
    seeds = sorted(set(entry_runs) & set(uniform_runs))
    per_seed = [skip_cost(entry_runs[s], uniform_runs[s], batch, epoch_steps) for s in seeds]
    epochs: dict[str, Any] = {}
    for epoch in sorted(set.intersection(*(set(c) for c in per_seed)) if per_seed else ()):
        cells = [c[epoch] for c in per_seed]
        epochs[str(epoch)] = {
            "steps": list(cells[0]["steps"]),
            **{k: mean_ci([c[k] for c in cells]) for k in SHARES},
        }
    return {"seeds": seeds, "batch": batch, "epoch_steps": epoch_steps, "epochs": epochs}


def _cell(ci: Mapping[str, Any], fmt: str = ".2f", percent: bool = False) -> str:
    """A mean [CI] (in percent), '—' where none; no minus sign on a rounded zero."""
    if ci["mean"] is None:
        return "—"
    k = 100.0 if percent else 1.0

    def text(v: float) -> str:
        s = f"{k * v:{fmt}}"
        return s.lstrip("-") if float(s) == 0 else s

    mean, lo, hi = (text(v) for v in (ci["mean"], *ci["ci"]))
    return f"{mean}{'%' if percent else ''} [{lo}, {hi}]"


CAPTION = (
    "Per epoch, paired with the same-seed uniform run that walked the same prompts: the share "
    "of B x steps the entry left out (B minus its trained groups, summed), the mixed rate of "
    "what it left out ((uniform's mixed groups − the entry's) / left out) against the base "
    "rate (uniform's mixed groups / (B x steps)) and their ratio (1: blind, 0: only "
    "zero-variance groups left out; noisy where few were left out), and the mixed groups "
    "lost as a share of uniform's. "
    "Estimates: after the first skip the two arms' policies differ a little. Means over "
    "paired seeds [bootstrap 95% CI]; the ratio is the mean of per-seed ratios."
)


def skip_cost_lines(costs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A markdown table of `skip_cost_summary` per entry label, and its caption."""
    lines = [
        "| entry | epoch (steps) | left out, share of B x steps | left-out mixed rate "
        "(base rate) | left-out / base rate | mixed groups lost, share of uniform's |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, cost in costs.items():
        for epoch, c in cost["epochs"].items():
            rate, base = c["left_out_rate"]["mean"], c["base_rate"]["mean"]
            rates = "—" if rate is None or base is None else f"{rate:.2f} ({base:.2f})"
            lines.append(
                f"| {label} ({len(cost['seeds'])} seeds) | {epoch} ({c['steps'][0]}-"
                f"{c['steps'][1]}) | {_cell(c['left_out_share'], '.1f', True)} | {rates} | "
                f"{_cell(c['rate_ratio'])} | {_cell(c['lost_share'], '.1f', True)} |"
            )
    return [*lines, "", CAPTION]


def read_record(path: Path) -> dict[str, Any]:
    """One ledger record file, read and checked by the ledger's own reader
    (`ledger.read_record`: bounded, every value checked; a ValueError for anything else)."""
    from frontier_rft.bench.real_rl.ledger import read_record as read_ledger_record

    return read_ledger_record(path)


def _record_run(path: Path) -> dict[str, Any]:
    """The curves of one ledger record file (`ledger.run_from_record`), its start state kept."""
    from frontier_rft.bench.real_rl.ledger import run_from_record

    record = read_record(path)
    run = run_from_record(record)
    run["start_state"] = record.get("start_state")
    return run


def ledger_runs(folder: Path, seeds: Sequence[int]) -> dict[int, dict[str, Any]]:
    """One entry's runs of `seeds` under <digest>/<device>/<entry>: its first definition
    (in name order) that holds any of them."""
    for definition in sorted(p for p in folder.glob("*") if p.is_dir()):
        runs = {
            s: _record_run(definition / f"seed{s}.json.gz")
            for s in seeds
            if (definition / f"seed{s}.json.gz").is_file()
        }
        if runs:
            return runs
    return {}


def ledger_skip_cost(
    roots: Sequence[Path],
    digest: str,
    device: str,
    entries: Sequence[str],
    seeds: Sequence[int],
    batch: int | None = None,
    epoch_steps: int | None = None,
    against: str = "uniform",
) -> dict[str, dict[str, Any]]:
    """`skip_cost_summary` per entry from run ledgers alone: each entry paired with `against`'s
    runs in the first of `roots` that holds the entry on testbed `digest` and device class
    `device`; B and the epoch's steps (pool size / B) from the testbed's settings unless
    given. Entries with no paired seed are left out, and so are entries that never trained
    fewer than B groups a step in uniform's window (`passes_over_groups`: full steps, as a
    `fewer_steps` run or C-GRPO's rule takes, walk other prompts than uniform's steps do, so
    the pairing above does not hold), as the bench report leaves them out."""
    settings = next((r / digest / "testbed.json" for r in roots if (r / digest).is_dir()), None)
    if settings is None or not settings.is_file():
        raise ValueError(f"no ledger in {', '.join(map(str, roots))} holds testbed {digest}")
    train = json.loads(settings.read_text(encoding="utf-8"))["train"]
    batch = batch or int(train["batch_size"])
    epoch_steps = epoch_steps or int(train["train_size"]) // batch
    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        root = next((r for r in roots if (r / digest / device / entry).is_dir()), None)
        if root is None:
            continue
        runs = ledger_runs(root / digest / device / entry, seeds)
        base = ledger_runs(root / digest / device / against, seeds)
        windowed = any(passes_over_groups(run, batch) for run in runs.values())
        if set(runs) & set(base) and windowed:
            out[entry] = skip_cost_summary(runs, base, batch, epoch_steps)
    return out
