"""Your own A/B: two arms of real training runs compared on held-out score against the
rollouts they spent and the distinct prompts they trained (`frontier ab compare A B`,
docs/ab_test.md).

An arm is a run directory (the TRL or verl adapter's `frontier_metrics.jsonl`, or a
`frontier train` run's `metrics.jsonl`), or a folder of such directories: one per seed.
Each evaluation record gives a held-out score (`eval_reward`, TRL's, by default) and, in
the same record or the training record before it, the rollouts spent so far
(`curriculum/trl/rollouts_delivered`, `curriculum/feedback/rollouts` or
`train/rollouts_total`) and the distinct prompts trained (`curriculum/tasks/distinct_trained`).

The arms are compared twice, each labelled: at equal rollouts, the largest rollout count
every run reached (each run's score interpolated linearly between its evaluations), and
final against final, each run's last evaluation: on one schedule the same steps, how the
evidence for `rollouts: kept` compares it with uniform (a kept arm reaches the end with
fewer rollouts, so at equal rollouts uniform is read part way through its schedule). One
run per arm cannot tell a difference from run-to-run noise, and says so; with several,
runs are paired seed by seed (by folder name, else in name order) and the mean paired
difference gets a percentile bootstrap 95% interval (`bench.metrics.bootstrap_mean_ci`):
"within noise" when it holds 0.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.bench.metrics import bootstrap_mean_ci
from frontier_rft.core.config import did_you_mean
from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.progress import progress_bar
from frontier_rft.training.run_info import read_run_info

__all__ = [
    "LOG_FILES",
    "METRIC_KEYS",
    "ABResult",
    "Arm",
    "RunCurve",
    "arm_label",
    "compare_arms",
    "read_arm",
    "read_run",
]

LOG_FILES = ("frontier_metrics.jsonl", "metrics.jsonl")
"""The log a run directory holds: the trainer adapters', then `frontier train`'s."""
METRIC_KEYS = ("eval_reward", "eval/mean_score")
"""Held-out scores looked for when none is named: TRL's eval reward, `frontier train`'s."""
ROLLOUT_KEYS = ("trl/rollouts_delivered", "feedback/rollouts", "train/rollouts_total")
"""Cumulative rollouts, the first a record holds: the TRL adapter's count (up to date at
each evaluation), the selector's (the verl adapter; it trails by the rounds not yet folded
in), `frontier train`'s."""
DISTINCT_KEY = "tasks/distinct_trained"
"""Distinct prompts whose group had mixed rewards at least once (the selector's count)."""
EPOCH_KEY = "epoch"
"""The trainer's epoch (TRL's evaluation records carry transformers' count): the run's
passes over its prompts on its schedule, as `num_train_epochs`, `max_steps` and
`frontier check-config`'s `rollouts: auto` count them (`planned_epochs`), prompts a kept
step passed over included."""
VERL_EPOCH_KEY = "verl/epoch"
"""The verl adapter's count of the same passes (steps fed back over the batches an epoch
holds; a kept window counts whole)."""
GROUPS_KEY, POOL_KEY = "feedback/groups", "tasks/pool_size"
"""Groups folded in so far and the pool's size: their ratio is the passes over the pool
where nothing else says (it leaves out the prompts a kept step passed over, so it is used
only where the log has no trainer epoch and the run no run.json)."""
FEW_PASSES = 2.0
"""Fewer passes over the pool than this: a skip that needs a prompt seen first (greso,
skip) has had little or nothing to skip, and the A/B says so."""
_DEFAULT_SCORES = "(eval_reward, TRL's, or eval/mean_score, frontier train's)"
MAX_RUNS = 1_000
"""Most runs (seeds) read per arm."""
LONG_READ_BYTES = 16 << 20
"""Logs at least this large in all show a progress bar while they are read."""


@dataclass(frozen=True)
class RunCurve:
    """One run's evaluations: rollouts spent, distinct prompts trained (NaN where the log
    has no count) and the held-out score, in order of rollouts; and the passes over its
    pool by the end of its log (NaN where the log does not say), counted as `passes_by`
    says."""

    path: Path
    metric: str
    rollouts: NDArray[np.float64]
    distinct: NDArray[np.float64]
    score: NDArray[np.float64]
    passes: float = math.nan
    passes_by: str = ""
    """How `passes` was counted: "epoch" (the trainer's, EPOCH_KEY, or the verl adapter's,
    VERL_EPOCH_KEY), "schedule" (a `frontier train` run: steps x batch_size / pool from its
    run.json) or "groups" (GROUPS_KEY over POOL_KEY)."""

    def at(self, rollouts: float) -> tuple[float, float]:
        """(score, distinct prompts trained) at `rollouts`, linear between evaluations."""
        score = float(np.interp(rollouts, self.rollouts, self.score))
        known = np.isfinite(self.distinct)
        distinct = (
            float(np.interp(rollouts, self.rollouts[known], self.distinct[known]))
            if known.any()
            else math.nan
        )
        return score, distinct


@dataclass(frozen=True)
class Arm:
    """An arm of the A/B: its folder, and its runs (one per seed) by name."""

    path: Path
    runs: dict[str, RunCurve]


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def _latest(record: dict[str, Any], key: str, before: float) -> float:
    """The record's number under `key`, else the last one seen."""
    value = _number(record.get(key))
    return before if value is None else value


def _log_file(path: Path) -> Path | None:
    if path.is_file():
        return path
    return next((path / name for name in LOG_FILES if (path / name).is_file()), None)


def read_run(path: str | os.PathLike[str], metric: str | None = None) -> RunCurve:
    """The evaluations of one run (a run directory or its JSONL file); ValueError naming
    the file and the fix when it has none, or none after training started."""
    where = Path(path)
    log = _log_file(where)
    if log is None:
        raise ValueError(f"{where}: no {' or '.join(LOG_FILES)} (not a training run's folder)")
    records = read_metrics_jsonl(log)
    keys = [metric] if metric else [k for k in METRIC_KEYS if any(k in r for r in records)][:1]
    if not keys or not any(_number(r.get(keys[0])) is not None for r in records):
        every = sorted({k for r in records for k in r})
        hint = did_you_mean(metric, every) if metric else ""
        seen = [k for k in every if "eval" in k][:8]
        raise ValueError(
            f"{log}: no held-out score {repr(metric) if metric else _DEFAULT_SCORES}{hint}; run "
            "with an evaluation (TRL: eval_strategy: steps, eval_dataset_files: [...], "
            "docs/ab_test.md), or name the score with --metric"
            + (f" (evaluation keys here: {', '.join(seen)})" if seen and not hint else "")
        )
    key = keys[0]
    points: dict[int, tuple[float, float, float]] = {}  # step -> (rollouts, distinct, score)
    rollouts, distinct, groups, pool, epoch = 0.0, math.nan, math.nan, math.nan, math.nan
    last_step = math.nan
    for record in records:
        epoch = _latest(record, EPOCH_KEY, epoch)
        epoch = _latest(record, VERL_EPOCH_KEY, epoch)
        last_step = _latest(record, "step", last_step)
        groups = _latest(record, GROUPS_KEY, groups)
        pool = _latest(record, POOL_KEY, pool)
        spent = next((_number(record.get(k)) for k in ROLLOUT_KEYS if k in record), None)
        rollouts = spent if spent is not None else rollouts
        count = _number(record.get(DISTINCT_KEY))
        distinct = count if count is not None else distinct
        score = _number(record.get(key))
        if score is None:
            continue
        step = _number(record.get("step"))
        if step is None or step < 0 or not step.is_integer():
            raise ValueError(
                f"{log}: an evaluation ({key} = {score:g}) has no usable step "
                f"({'none' if 'step' not in record else repr(record['step'])}); each record "
                "needs the training step it was logged at, a non-negative integer 'step'"
            )
        points[int(step)] = (rollouts, distinct, score)  # a resumed run's repeat: the last
    table = np.array([points[s] for s in sorted(points)], dtype=np.float64)
    order = np.argsort(table[:, 0], kind="stable")
    table = table[order]
    # Two evaluations at one rollout count (an evaluation repeated at one step): the last.
    keep = np.append(np.diff(table[:, 0]) > 0, True)
    table = table[keep]
    schedule = _schedule_passes(log.parent / "run.json", last_step)
    if math.isfinite(epoch) and epoch >= 0:
        passes, passes_by = epoch, "epoch"
    elif math.isfinite(schedule):
        passes, passes_by = schedule, "schedule"
    else:
        passes, passes_by = (groups / pool, "groups") if pool > 0 else (math.nan, "")
    return RunCurve(where, key, table[:, 0], table[:, 1], table[:, 2], passes, passes_by)


def _schedule_passes(run_json: Path, steps: float) -> float:
    """A `frontier train` run's passes over its pool on its schedule: steps x the prompts a
    step hands out (`batch_size`, a kept step's passed-over prompts included) / the pool
    (`train_tasks`), from its run.json; NaN where there is none or it does not say."""
    if not run_json.is_file() or not math.isfinite(steps):
        return math.nan
    try:
        info = read_run_info(run_json)
    except ValueError:
        return math.nan
    batch, pool = info["config"].get("batch_size"), info.get("train_tasks")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (batch, pool)):
        return math.nan
    return float(steps * batch / pool)


def read_arm(path: str | os.PathLike[str], metric: str | None = None) -> Arm:
    """A run directory (one run), or a folder of run directories (one per seed)."""
    where = Path(path)
    if not where.exists():
        raise ValueError(f"{where}: no such run directory")
    if _log_file(where) is not None:
        return Arm(where, {where.name: read_run(where, metric)})
    folders = sorted(p for p in where.iterdir() if p.is_dir() and _log_file(p) is not None)
    if not folders:
        raise ValueError(
            f"{where}: neither a run directory (with {' or '.join(LOG_FILES)}) nor a folder "
            "of them (one per seed)"
        )
    if len(folders) > MAX_RUNS:
        raise ValueError(f"{where}: more than {MAX_RUNS} runs in one arm")
    runs = {}
    size = sum(f.stat().st_size for f in (_log_file(p) for p in folders) if f is not None)
    with progress_bar(
        len(folders), f"reading {where}", unit="run", enabled=size >= LONG_READ_BYTES
    ) as bar:
        for folder in folders:
            runs[folder.name] = read_run(folder, metric)
            bar.update(1)
    return Arm(where, runs)


def arm_label(path: Path) -> str:
    """What to call an arm: the last folder of its path named after a selector
    (`runs/ab/greso/seed-0` is greso), else the folder's own name."""
    from frontier_rft.selectors import SELECTORS

    return next((p for p in reversed(path.parts) if p in SELECTORS), path.name)


@dataclass(frozen=True)
class ABResult:
    """The comparison: the runs paired, the common budget, each pair's scores there, and
    the verdict in words; and final against final, each run's last evaluation."""

    a: Arm
    b: Arm
    pairs: list[tuple[str, str]]
    paired_by: str
    metric: str
    budget: float
    scores: NDArray[np.float64]
    """(pairs, 2): A's and B's held-out score at `budget`."""
    distinct: NDArray[np.float64]
    """(pairs, 2): their distinct prompts trained by then."""
    interval: tuple[float, float] | None
    verdict: str
    identical: bool = False
    """Every pair of runs logged the same held-out scores at the same rollout counts."""
    finals: NDArray[np.float64] | None = None
    """(pairs, 4): A's and B's held-out score at their last evaluation, and the rollouts
    each had spent by then."""
    final_verdict: str = ""
    """The verdict on final against final, in words."""

    @property
    def difference(self) -> float:
        """Mean over pairs of B's score minus A's at the common budget."""
        return float(np.mean(self.scores[:, 1] - self.scores[:, 0]))

    def grid(self) -> NDArray[np.float64]:
        """The rollout counts of the first A run's evaluations up to the budget."""
        first = self.a.runs[self.pairs[0][0]]
        return first.rollouts[first.rollouts <= self.budget + 1e-9]

    def table(self) -> str:
        """Mean score per arm at each evaluation of the first A run, and the verdict."""
        label_a, label_b = arm_label(self.a.path), arm_label(self.b.path)
        header = (
            f"{'rollouts':>10}  {'A ' + self.metric:>18}  {'B ' + self.metric:>18}  "
            f"{'B - A':>7}  {'A prompts trained':>17}  {'B prompts trained':>17}"
        )
        lines = [
            f"A/B: held-out {self.metric} against rollouts spent",
            f"  A = {self.a.path} ({_runs_note(self.a)})",
            f"  B = {self.b.path} ({_runs_note(self.b)}){self.paired_by}",
            header,
        ]
        for x in self.grid():
            a = np.array([self.a.runs[p].at(x) for p, _ in self.pairs])
            b = np.array([self.b.runs[q].at(x) for _, q in self.pairs])
            lines.append(
                f"{x:>10,.0f}  {a[:, 0].mean():>18.4f}  {b[:, 0].mean():>18.4f}  "
                f"{b[:, 0].mean() - a[:, 0].mean():>+7.4f}  {_count(a[:, 1]):>17}  "
                f"{_count(b[:, 1]):>17}"
            )
        many = f" (mean over {len(self.pairs)} seeds)" if len(self.pairs) > 1 else ""
        lines.append(
            f"At {self.budget:,.0f} rollouts, the most every run reached, held-out "
            f"{self.metric}{many}: A ({label_a}) {self.scores[:, 0].mean():.4f}, B ({label_b}) "
            f"{self.scores[:, 1].mean():.4f}, B - A {self.difference:+.4f}; distinct prompts "
            f"trained: A {_count(self.distinct[:, 0])}, B {_count(self.distinct[:, 1])}."
        )
        lines.extend(self._final(label_a, label_b, many))
        lines.extend(self._coverage())
        if self.identical or self.finals is None:
            lines.append(self.verdict)
        else:
            lines.append(f"At equal rollouts: {self.verdict}")
            lines.append(f"Final against final: {self.final_verdict}")
        return "\n".join(lines)

    def _final(self, label_a: str, label_b: str, many: str) -> list[str]:
        """Final against final, labelled: what the evidence for `rollouts: kept` compares."""
        if self.finals is None or self.identical:
            return []
        score_a, score_b, spent_a, spent_b = self.finals.mean(axis=0)
        ratio = f" ({spent_b / spent_a:.2f}x A's)" if spent_a > 0 else ""
        return [
            f"Final against final, each run's last evaluation (the same steps where both arms "
            f"ran one schedule, as with rollouts: kept), held-out {self.metric}{many}: "
            f"A ({label_a}) {score_a:.4f} at {spent_a:,.0f} rollouts, B ({label_b}) "
            f"{score_b:.4f} at {spent_b:,.0f} rollouts{ratio}, B - A {score_b - score_a:+.4f}."
        ]

    def _coverage(self) -> list[str]:
        """The passes each arm made over its pool, and why identical arms are identical."""
        passes = [_mean_passes(self.a, self.pairs, 0), _mean_passes(self.b, self.pairs, 1)]
        lines = []
        if all(math.isfinite(p) for p in passes):
            by = {r.passes_by for arm in (self.a, self.b) for r in arm.runs.values()}
            how = (
                " (the trainer's epoch, as num_train_epochs and check-config count it)"
                if by == {"epoch"}
                else " (steps x batch_size / pool, from each run.json)"
                if by == {"schedule"}
                else " (groups fed back / pool size)"
                if by == {"groups"}
                else ""
            )
            lines.append(
                f"Passes over the pool by the end{how}: A {passes[0]:.2f}, B {passes[1]:.2f}."
            )
        few = math.isfinite(passes[1]) and passes[1] < FEW_PASSES
        short = (
            f"B made {passes[1]:.2f} passes over its pool: a skip that passes over a prompt "
            "only once it has seen it (greso, skip) has little or nothing to skip in a run "
            "shorter than about 2 passes. Subsample the pool so that the run makes 2 or more "
            'passes (docs/ab_test.md, "A large pool").'
        )
        if self.identical:
            why = (
                short
                if few
                else (
                    "Check that the arms ran different selectors (`selector` in each run's "
                    "config), and that training moved the held-out score at all."
                )
            )
            lines.append(
                "The arms are identical: every run of B logged the same held-out scores at the "
                "same rollout counts as its pair in A, so B chose what A chose. " + why
            )
        elif few:
            lines.append(short)
        return lines


def _mean_passes(arm: Arm, pairs: list[tuple[str, str]], side: int) -> float:
    values = [arm.runs[pair[side]].passes for pair in pairs]
    return float(np.mean(values)) if all(math.isfinite(v) for v in values) else math.nan


def _count(values: NDArray[np.float64]) -> str:
    finite = values[np.isfinite(values)]
    return f"{finite.mean():,.0f}" if finite.size else "-"


def _runs_note(arm: Arm) -> str:
    names = list(arm.runs)
    if names == [arm.path.name]:
        return "1 run"
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return f"{len(names)} run{'s' * (len(names) > 1)}: {shown}"


def _pairs(a: Arm, b: Arm) -> tuple[list[tuple[str, str]], str]:
    """Runs paired seed by seed: by folder name when both arms name theirs alike, else in
    name order; a ValueError when the arms hold different numbers of runs."""
    if len(a.runs) == 1 and len(b.runs) == 1:
        return [(next(iter(a.runs)), next(iter(b.runs)))], ""
    if set(a.runs) == set(b.runs):
        return [(name, name) for name in a.runs], ", paired by folder name"
    if len(a.runs) != len(b.runs):
        raise ValueError(
            f"arm A has {len(a.runs)} runs and arm B {len(b.runs)}: runs are compared seed by "
            "seed, so give both arms the same seeds (one folder per seed, named alike)"
        )
    return list(zip(a.runs, b.runs, strict=True)), ", paired in name order"


def _verdict(diffs: NDArray[np.float64], interval: tuple[float, float] | None) -> str:
    if interval is None:
        return (
            f"Not judged: with one run per arm, whether B - A = {float(diffs[0]):+.4f} is "
            "larger than the run-to-run noise cannot be told. Run 3 or more seeds per arm (the "
            "same seeds in both) and compare the folders that hold them."
        )
    lo, hi = interval
    n = diffs.size
    firm = "" if n >= 3 else "; with 2 pairs the interval is rough, 3 or more firm it up"
    where = f"95% paired-bootstrap interval of B - A over {n} seed pairs, [{lo:+.4f}, {hi:+.4f}]"
    if lo <= 0.0 <= hi:
        return f"Within noise: the {where}, includes 0{firm}."
    side = "above" if lo > 0 else "below"
    return f"B is {side} A beyond the seed-to-seed noise: the {where}, excludes 0{firm}."


def compare_arms(
    a_path: str | os.PathLike[str],
    b_path: str | os.PathLike[str],
    metric: str | None = None,
    seed: int = 0,
) -> ABResult:
    """Read both arms and compare them at the largest rollout count every run reached."""
    a = read_arm(a_path, metric)
    chosen = metric or next(iter(a.runs.values())).metric  # B is read for A's score
    b = read_arm(b_path, chosen)
    pairs, paired_by = _pairs(a, b)
    runs = [a.runs[p] for p, _ in pairs] + [b.runs[q] for _, q in pairs]
    budget = min(float(r.rollouts[-1]) for r in runs)
    if budget <= 0:
        short = min(runs, key=lambda r: float(r.rollouts[-1]))
        raise ValueError(
            f"{short.path}: no evaluation after its first rollouts were fed back; train "
            "longer than one eval_steps, or lower eval_steps"
        )
    at = np.array([[*a.runs[p].at(budget), *b.runs[q].at(budget)] for p, q in pairs])
    scores, distinct = at[:, [0, 2]], at[:, [1, 3]]
    diffs = scores[:, 1] - scores[:, 0]
    interval = bootstrap_mean_ci(diffs.tolist(), seed=seed) if diffs.size > 1 else None
    identical = all(_same_curve(a.runs[p], b.runs[q]) for p, q in pairs)
    verdict = (
        "Not judged: the arms are identical (B chose what A chose)."
        if identical
        else _verdict(diffs, interval)
    )
    finals = np.array(
        [[a.runs[p].score[-1], b.runs[q].score[-1], a.runs[p].rollouts[-1],
          b.runs[q].rollouts[-1]] for p, q in pairs]
    )  # fmt: skip
    final_diffs = finals[:, 1] - finals[:, 0]
    final_interval = (
        bootstrap_mean_ci(final_diffs.tolist(), seed=seed) if final_diffs.size > 1 else None
    )
    return ABResult(
        a, b, pairs, paired_by, chosen, budget, scores, distinct, interval, verdict, identical,
        finals, _verdict(final_diffs, final_interval),
    )  # fmt: skip


def _same_curve(a: RunCurve, b: RunCurve) -> bool:
    """The same evaluations: rollout counts and held-out scores, bit for bit."""
    return np.array_equal(a.rollouts, b.rollouts) and np.array_equal(a.score, b.score)
