"""Your own A/B: two arms of real training runs compared on held-out score at equal rollouts,
equal steps and equal seconds, and final against final (`frontier ab compare A B`,
docs/ab_test.md).

An arm is a run directory (the TRL or verl adapter's `frontier_metrics.jsonl`, or a
`frontier train` run's `metrics.jsonl`), or a folder of such directories: one per seed.
Each evaluation record gives a held-out score (`eval_reward`, TRL's, by default) and, in
the same record or the training record before it, the rollouts spent so far
(`curriculum/trl/rollouts_delivered`, `curriculum/feedback/rollouts` or
`train/rollouts_total`) and the distinct prompts trained (`curriculum/tasks/distinct_trained`).

Each axis (`AXES`) is read at evaluation points, never between them: its budget is the
largest amount every run reached along it (the least of the runs' last evaluations there),
and each run is read at its latest evaluation at or before that budget (the evidence rule of
issue 88; interpolating would credit a run with a score it was never measured at). The axes:

- **rollouts**: the rollouts spent by each evaluation;
- **steps**: the training step each evaluation was logged at;
- **seconds**: wall-clock from the runs' own logs: the summed `perf/step_s` of the steps up to
  each evaluation where every step logs it (`frontier train`: training only), else the
  seconds from the run's first record to the evaluation's (each record's `time` stamp, which
  every adapter's log carries: evaluations and logging included). Compared only when every
  run is timed the same way, and meaningful only between runs that ran under the same load;
- **h200** / **cpu** (`device=`): a named device's projection, each logged training step
  priced on the shipped step-cost curve from its logged shape exactly as the bench prices it
  (`training.eval_grid.cumulative`); only a log with a row per step (`train/rollouts`,
  `frontier train`'s) can be priced: TRL's and verl's adapters log none, and the projection
  then says so in one line.

Final against final compares each run's last evaluation: on one schedule the same steps, how
the evidence for `rollouts: kept` compares it with uniform (a kept arm reaches the end with
fewer rollouts, so at equal rollouts uniform is read part way through its schedule). One run
per arm cannot tell a difference from run-to-run noise, and says so; with several, runs are
paired seed by seed (by folder name, else in name order) and the mean paired difference gets a
percentile bootstrap 95% interval (`bench.metrics.bootstrap_mean_ci`): "within noise" when it
holds 0.
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
from frontier_rft.step_cost import CURVES
from frontier_rft.training.eval_grid import cumulative
from frontier_rft.training.run_info import read_run_info

__all__ = [
    "AXES",
    "LOG_FILES",
    "METRIC_KEYS",
    "ABResult",
    "Arm",
    "RunCurve",
    "arm_label",
    "compare_arms",
    "read_arm",
    "read_run",
    "run_log_file",
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


AXES: dict[str, str] = {
    "rollouts": "rollouts",
    "steps": "steps",
    "seconds": "seconds (wall-clock)",
    **{name: f"{name.upper()} seconds (projected)" for name in CURVES},
}
"""Each axis the arms are compared along, and its name in the output; the last ones are the
shipped step-cost curves' projections (`device=`)."""
STEP_SECONDS_KEY, TIME_KEY = "perf/step_s", "time"
"""A step's seconds in its own row (`frontier train`), and every record's wall-clock stamp
(`metrics_log.JsonlLogger`): the two ways a run is timed, the first preferred."""
TIMED_BY = {
    STEP_SECONDS_KEY: "the summed perf/step_s of the steps up to each evaluation: training only",
    TIME_KEY: "seconds from each run's first record to the evaluation's (the records' time "
    "stamps: evaluations and logging included)",
}
"""What each way of timing a run counts, as the output says it."""
STEP_ROW_KEY = "train/rollouts"
"""The key a per-step row carries (`frontier train`'s): a row the step-cost curve can price."""


@dataclass(frozen=True)
class RunCurve:
    """One run's evaluations, in order of step: the step, rollouts spent, distinct prompts
    trained (NaN where the log has no count), the held-out score, the wall-clock seconds and
    a device's projected seconds by then (NaN where they are unknown: `timed_by` and
    `projection_note` say how, or why not); and the passes over its pool by the end of its
    log (NaN where the log does not say), counted as `passes_by` says."""

    path: Path
    metric: str
    steps: NDArray[np.float64]
    """The step each evaluation was logged at: the training steps taken by then, the
    position along the steps axis."""
    rollouts: NDArray[np.float64]
    distinct: NDArray[np.float64]
    score: NDArray[np.float64]
    seconds: NDArray[np.float64]
    """Wall-clock seconds by each evaluation, counted as `timed_by` says (a key of
    TIMED_BY, or "" with every value NaN where the log cannot say)."""
    timed_by: str
    projected: NDArray[np.float64]
    """Seconds by each evaluation projected on the device named; NaN where none was named
    or the log cannot be priced, and `projection_note` says which."""
    projection_note: str = ""
    passes: float = math.nan
    passes_by: str = ""
    """How `passes` was counted: "epoch" (the trainer's, EPOCH_KEY, or the verl adapter's,
    VERL_EPOCH_KEY), "schedule" (a `frontier train` run: steps x batch_size / pool from its
    run.json) or "groups" (GROUPS_KEY over POOL_KEY)."""

    def along(self, axis: str) -> NDArray[np.float64]:
        """Each evaluation's position along `axis` (a key of AXES)."""
        named = {"rollouts": self.rollouts, "steps": self.steps, "seconds": self.seconds}
        return named.get(axis, self.projected)

    def at(self, budget: float, axis: str = "rollouts") -> tuple[float, float]:
        """(score, distinct prompts trained) of the run's latest evaluation at or before
        `budget` along `axis`, never interpolated between evaluations; NaN when it has none
        there."""
        position = self.along(axis)
        # The budget is some run's own position: a hair of slack for float sums of seconds.
        held = np.flatnonzero(position <= budget + 1e-9 * max(1.0, abs(budget)))
        if not held.size:
            return math.nan, math.nan
        return float(self.score[held[-1]]), float(self.distinct[held[-1]])


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


def run_log_file(path: Path) -> Path | None:
    """The log of a run: `path` itself where it is a file, else the first of LOG_FILES in that
    folder; None where there is none."""
    if path.is_file():
        return path
    return next((path / name for name in LOG_FILES if (path / name).is_file()), None)


def read_run(
    path: str | os.PathLike[str], metric: str | None = None, device: str | None = None
) -> RunCurve:
    """The evaluations of one run (a run directory or its JSONL file), with its steps priced
    on `device`'s step-cost curve where named and its log allows; ValueError naming the file
    and the fix when it has no evaluation, or none after training started."""
    where = Path(path)
    log = run_log_file(where)
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
    # step -> (rollouts, distinct, score, time stamp); a resumed run's repeat: the last
    points: dict[int, tuple[float, float, float, float]] = {}
    step_rows: dict[int, dict[str, Any]] = {}  # step -> its training records' keys, merged
    rollouts, distinct, groups, pool, epoch = 0.0, math.nan, math.nan, math.nan, math.nan
    last_step = math.nan
    first_time = next((t for r in records if (t := _number(r.get(TIME_KEY))) is not None), None)
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
        step = _number(record.get("step"))
        score = _number(record.get(key))
        if score is None:
            if step is not None and step.is_integer():  # a resumed run's repeat: the last
                step_rows.setdefault(int(step), {}).update(record)
            continue
        if step is None or step < 0 or not step.is_integer():
            raise ValueError(
                f"{log}: an evaluation ({key} = {score:g}) has no usable step "
                f"({'none' if 'step' not in record else repr(record['step'])}); each record "
                "needs the training step it was logged at, a non-negative integer 'step'"
            )
        stamp = _number(record.get(TIME_KEY))
        since = math.nan if stamp is None or first_time is None else stamp - first_time
        points[int(step)] = (rollouts, distinct, score, since)
    steps = np.array(sorted(points), dtype=np.float64)
    table = np.array([points[int(s)] for s in steps], dtype=np.float64)
    seconds, timed_by = _wall_clock(steps, table[:, 3], step_rows)
    info = _run_info(log.parent / "run.json")
    projected, note = _projection(device, steps, step_rows, info)
    schedule = _schedule_passes(info, last_step)
    if math.isfinite(epoch) and epoch >= 0:
        passes, passes_by = epoch, "epoch"
    elif math.isfinite(schedule):
        passes, passes_by = schedule, "schedule"
    else:
        passes, passes_by = (groups / pool, "groups") if pool > 0 else (math.nan, "")
    return RunCurve(
        where, key, steps, table[:, 0], table[:, 1], table[:, 2], seconds, timed_by, projected,
        note, passes, passes_by,
    )  # fmt: skip


def _wall_clock(
    steps: NDArray[np.float64], stamped: NDArray[np.float64], rows: dict[int, dict[str, Any]]
) -> tuple[NDArray[np.float64], str]:
    """Seconds by each evaluation and how they were counted (TIMED_BY): the summed
    `perf/step_s` of steps 1 to its step where every such step logs one, else its record's
    time stamp less the run's first, else NaN and ""."""
    last = int(steps[-1])
    step_s = [_number(rows.get(k, {}).get(STEP_SECONDS_KEY)) for k in range(1, last + 1)]
    if last and all(v is not None for v in step_s):
        summed = np.concatenate([[0.0], np.cumsum(np.array(step_s, dtype=np.float64))])
        return summed[steps.astype(int)], STEP_SECONDS_KEY
    if np.isfinite(stamped).all():
        return stamped, TIME_KEY
    return np.full(steps.shape, math.nan), ""


def _run_info(run_json: Path) -> dict[str, Any] | None:
    """A `frontier train` run's run.json, None where there is none or it cannot be read."""
    if not run_json.is_file():
        return None
    try:
        return read_run_info(run_json)
    except ValueError:
        return None


def _projection(
    device: str | None,
    steps: NDArray[np.float64],
    rows: dict[int, dict[str, Any]],
    info: dict[str, Any] | None,
) -> tuple[NDArray[np.float64], str]:
    """Seconds by each evaluation on `device`'s shipped curve, every logged step priced from
    its shape as the bench prices it (`device_report`: the pool and completion cap of its
    run.json); NaN and the reason where no device is named or the log cannot be priced."""
    unknown = np.full(steps.shape, math.nan)
    if device is None:
        return unknown, "no device named"
    last = int(steps[-1])
    missing = [k for k in range(1, last + 1) if STEP_ROW_KEY not in rows.get(k, {})]
    if missing and len(missing) == last:
        return unknown, (
            f"its log has no per-step rows ({STEP_ROW_KEY} and the step's shape, as frontier "
            "train logs them; TRL's and verl's adapters do not) to price a step from"
        )
    if missing:
        return unknown, f"its log has no per-step row for step {missing[0]} to price"
    config = info["config"] if info is not None else {}
    length = config.get("max_new_tokens")
    if info is None or not isinstance(length, int) or isinstance(length, bool) or length < 1:
        return unknown, (
            "no run.json beside its log giving max_new_tokens, the completion length a step "
            "is priced at"
        )
    pool = int(info.get("train_tasks") or config.get("train_size") or 1)
    priced = [rows[k] for k in range(1, last + 1)]
    spent = cumulative(device, priced, pool_size=pool, length=length)
    return np.array(spent, dtype=np.float64)[steps.astype(int)], ""


def _schedule_passes(info: dict[str, Any] | None, steps: float) -> float:
    """A `frontier train` run's passes over its pool on its schedule: steps x the prompts a
    step hands out (`batch_size`, a kept step's passed-over prompts included) / the pool
    (`train_tasks`), from its run.json; NaN where there is none or it does not say."""
    if info is None or not math.isfinite(steps):
        return math.nan
    batch, pool = info["config"].get("batch_size"), info.get("train_tasks")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (batch, pool)):
        return math.nan
    return float(steps * batch / pool)


def read_arm(
    path: str | os.PathLike[str], metric: str | None = None, device: str | None = None
) -> Arm:
    """A run directory (one run), or a folder of run directories (one per seed)."""
    where = Path(path)
    if not where.exists():
        raise ValueError(f"{where}: no such run directory")
    if run_log_file(where) is not None:
        return Arm(where, {where.name: read_run(where, metric, device)})
    folders = sorted(p for p in where.iterdir() if p.is_dir() and run_log_file(p) is not None)
    if not folders:
        raise ValueError(
            f"{where}: neither a run directory (with {' or '.join(LOG_FILES)}) nor a folder "
            "of them (one per seed)"
        )
    if len(folders) > MAX_RUNS:
        raise ValueError(f"{where}: more than {MAX_RUNS} runs in one arm")
    runs = {}
    size = sum(f.stat().st_size for f in (run_log_file(p) for p in folders) if f is not None)
    with progress_bar(
        len(folders), f"reading {where}", unit="run", enabled=size >= LONG_READ_BYTES
    ) as bar:
        for folder in folders:
            runs[folder.name] = read_run(folder, metric, device)
            bar.update(1)
    return Arm(where, runs)


def arm_label(path: Path) -> str:
    """What to call an arm: the last folder of its path named after a selector
    (`runs/ab/greso/seed-0` is greso), else the folder's own name."""
    from frontier_rft.selectors import SELECTORS

    return next((p for p in reversed(path.parts) if p in SELECTORS), path.name)


@dataclass(frozen=True)
class Reading:
    """The arms compared along one axis (a key of AXES) at its budget: the largest amount
    every run reached along it, each run read at its latest evaluation at or before it."""

    axis: str
    budget: float
    """NaN where the axis is not compared (`unavailable` says why)."""
    scores: NDArray[np.float64]
    """(pairs, 2): A's and B's held-out score at `budget`."""
    distinct: NDArray[np.float64]
    """(pairs, 2): their distinct prompts trained by then."""
    interval: tuple[float, float] | None
    verdict: str
    unavailable: str = ""
    """Why the axis is not compared, in words ("" where it is)."""

    @property
    def difference(self) -> float:
        """Mean over pairs of B's score minus A's at the budget."""
        return float(np.mean(self.scores[:, 1] - self.scores[:, 0]))

    def amount(self) -> str:
        """The budget in its unit: '24 rollouts', 'step 4', '61.2 s', '3.05 H200 s'."""
        if self.axis == "rollouts":
            return f"{self.budget:,.0f} rollouts"
        if self.axis == "steps":
            return f"step {self.budget:,.0f}"
        unit = "s" if self.axis == "seconds" else f"{self.axis.upper()} s"
        return f"{self.budget:,.{2 if self.budget < 100 else 0}f} {unit}"


@dataclass(frozen=True)
class ABResult:
    """The comparison: the runs paired, each axis's reading (`readings`, rollouts first), and
    final against final, each run's last evaluation."""

    a: Arm
    b: Arm
    pairs: list[tuple[str, str]]
    paired_by: str
    metric: str
    readings: dict[str, Reading]
    """Each axis compared (or the reason it is not), in the order of AXES."""
    identical: bool = False
    """Every pair of runs logged the same held-out scores at the same rollout counts."""
    finals: NDArray[np.float64] | None = None
    """(pairs, 4): A's and B's held-out score at their last evaluation, and the rollouts
    each had spent by then."""
    final_verdict: str = ""
    """The verdict on final against final, in words."""
    timed_by: str = ""
    """How the seconds axis was timed (a key of TIMED_BY; "" where it is not compared)."""

    @property
    def rollouts(self) -> Reading:
        """The reading at equal rollouts."""
        return self.readings["rollouts"]

    def grid(self) -> NDArray[np.float64]:
        """The rollout counts of the first A run's evaluations up to the budget, each once."""
        first = self.a.runs[self.pairs[0][0]]
        return np.unique(first.rollouts[first.rollouts <= self.rollouts.budget + 1e-9])

    def table(self) -> str:
        """Mean score per arm at each evaluation of the first A run, a short block per axis
        (its budget, the scores there and the verdict), final against final."""
        labels = arm_label(self.a.path), arm_label(self.b.path)
        header = (
            f"{'rollouts':>10}  {'A ' + self.metric:>18}  {'B ' + self.metric:>18}  "
            f"{'B - A':>7}  {'A prompts trained':>17}  {'B prompts trained':>17}"
        )
        lines = [
            f"A/B: held-out {self.metric}, each run read at its latest evaluation at or before "
            "each budget (never between evaluations)",
            f"  A = {self.a.path} ({_runs_note(self.a)})",
            f"  B = {self.b.path} ({_runs_note(self.b)}){self.paired_by}",
        ]
        if self.grid().size:  # none where the rollouts axis is not compared
            lines.append(header)
        for x in self.grid():
            a = np.array([self.a.runs[p].at(x) for p, _ in self.pairs])
            b = np.array([self.b.runs[q].at(x) for _, q in self.pairs])
            lines.append(
                f"{x:>10,.0f}  {a[:, 0].mean():>18.4f}  {b[:, 0].mean():>18.4f}  "
                f"{b[:, 0].mean() - a[:, 0].mean():>+7.4f}  {_count(a[:, 1]):>17}  "
                f"{_count(b[:, 1]):>17}"
            )
        many = f" (mean over {len(self.pairs)} seeds)" if len(self.pairs) > 1 else ""
        shown = [self.rollouts] if self.identical else list(self.readings.values())
        for reading in shown:
            lines.extend(self._block(reading, labels, many))
        lines.extend(self._final(*labels, many))
        lines.extend(self._coverage())
        if self.identical:
            lines.append(self.rollouts.verdict)
        return "\n".join(lines)

    def _block(self, reading: Reading, labels: tuple[str, str], many: str) -> list[str]:
        """One axis: where it is read and the scores there, its verdict, and what its unit
        can and cannot show (seconds: the load they ran under; a device's: a projection)."""
        name = AXES[reading.axis]
        if reading.unavailable:
            return [f"At equal {name}: not compared: {reading.unavailable}."]
        mean_a, mean_b = reading.scores.mean(axis=0)
        lines = [
            f"At equal {name}, read at {reading.amount()} (the most every run reached), "
            f"held-out {self.metric}{many}: A ({labels[0]}) {mean_a:.4f}, B ({labels[1]}) "
            f"{mean_b:.4f}, B - A {reading.difference:+.4f}; distinct prompts trained: "
            f"A {_count(reading.distinct[:, 0])}, B {_count(reading.distinct[:, 1])}."
        ]
        if not self.identical:
            lines.append(f"  {reading.verdict}")
        if reading.axis == "seconds":
            lines.append(
                f"  Timed by {TIMED_BY[self.timed_by]}. Wall-clock compares runs that ran under "
                "the same load (e.g. side by side on one machine); otherwise it measures the "
                "machines, not the selectors."
            )
        elif reading.axis in CURVES:
            lines.append(
                f"  A projection, not a measurement: each logged step priced from its shape on "
                f"the shipped {reading.axis} step-cost curve, as the bench prices it."
            )
        return lines

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
            f"{score_b:.4f} at {spent_b:,.0f} rollouts{ratio}, B - A {score_b - score_a:+.4f}.",
            f"  {self.final_verdict}",
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
    device: str | None = None,
) -> ABResult:
    """Read both arms and compare them along each axis at the largest amount every run
    reached there (rollouts, steps, wall-clock seconds, and `device`'s projected seconds
    where named: one of the shipped curves, CURVES), and final against final."""
    if device is not None and device not in CURVES:
        raise ValueError(
            f"--device {device!r}: name a shipped step-cost curve, one of "
            f"{', '.join(CURVES)}{did_you_mean(device, CURVES)}"
        )
    a = read_arm(a_path, metric, device)
    chosen = metric or next(iter(a.runs.values())).metric  # B is read for A's score
    b = read_arm(b_path, chosen, device)
    pairs, paired_by = _pairs(a, b)
    runs = [a.runs[p] for p, _ in pairs] + [b.runs[q] for _, q in pairs]
    short = min(runs, key=lambda r: float(r.rollouts.max()))
    if short.rollouts.max() <= 0:
        raise ValueError(
            f"{short.path}: no evaluation after its first rollouts were fed back; train "
            "longer than one eval_steps, or lower eval_steps"
        )
    identical = all(_same_curve(a.runs[p], b.runs[q]) for p, q in pairs)
    timed = {r.timed_by for r in runs}
    axes = [axis for axis in AXES if axis not in CURVES or axis == device]
    readings = {axis: _reading(axis, a, b, pairs, seed, identical) for axis in axes}
    finals = np.array(
        [[a.runs[p].score[-1], b.runs[q].score[-1], a.runs[p].rollouts[-1],
          b.runs[q].rollouts[-1]] for p, q in pairs]
    )  # fmt: skip
    final_diffs = finals[:, 1] - finals[:, 0]
    final_interval = (
        bootstrap_mean_ci(final_diffs.tolist(), seed=seed) if final_diffs.size > 1 else None
    )
    return ABResult(
        a, b, pairs, paired_by, chosen, readings, identical, finals,
        _verdict(final_diffs, final_interval), timed.pop() if len(timed) == 1 else "",
    )  # fmt: skip


def _unavailable(axis: str, runs: list[RunCurve]) -> str:
    """Why `axis` cannot compare these runs, in words; "" where it can."""
    if axis == "seconds":
        untimed = next((r for r in runs if not r.timed_by), None)
        if untimed is not None:
            return (
                f"{untimed.path}'s log has neither {STEP_SECONDS_KEY} for every step nor a "
                f"'{TIME_KEY}' stamp on its evaluations"
            )
        timed = sorted({r.timed_by for r in runs})
        if len(timed) > 1:
            return (
                f"the runs were timed differently ({' and '.join(timed)}): seconds compare "
                "only runs timed alike"
            )
    elif axis in CURVES:
        unpriced = next((r for r in runs if r.projection_note), None)
        if unpriced is not None:
            return f"the projection is unavailable: {unpriced.path}: {unpriced.projection_note}"
    return ""


def _reading(
    axis: str,
    a: Arm,
    b: Arm,
    pairs: list[tuple[str, str]],
    seed: int,
    identical: bool,
) -> Reading:
    """The arms compared along `axis` at the largest amount every run reached there."""
    runs = [a.runs[p] for p, _ in pairs] + [b.runs[q] for _, q in pairs]
    empty = np.empty((0, 2))
    why = _unavailable(axis, runs)
    if why:
        return Reading(axis, math.nan, empty, empty, None, "", why)
    short = min(runs, key=lambda r: float(r.along(axis).max()))
    budget = float(short.along(axis).max())
    unread = next((r for r in runs if np.isnan(r.at(budget, axis)[0])), None)
    if budget <= 0:
        why = f"{short.path} spent none before its last evaluation"
    elif unread is not None:  # its first evaluation lies beyond the budget
        why = f"{unread.path} has no evaluation at or before {budget:,.4g}"
    if why:
        return Reading(axis, math.nan, empty, empty, None, "", why)
    at = np.array([[*a.runs[p].at(budget, axis), *b.runs[q].at(budget, axis)]
                   for p, q in pairs])  # fmt: skip
    scores, distinct = at[:, [0, 2]], at[:, [1, 3]]
    diffs = scores[:, 1] - scores[:, 0]
    interval = bootstrap_mean_ci(diffs.tolist(), seed=seed) if diffs.size > 1 else None
    verdict = (
        "Not judged: the arms are identical (B chose what A chose)."
        if identical
        else _verdict(diffs, interval)
    )
    return Reading(axis, budget, scores, distinct, interval, verdict)


def _same_curve(a: RunCurve, b: RunCurve) -> bool:
    """The same evaluations: rollout counts and held-out scores, bit for bit."""
    return np.array_equal(a.rollouts, b.rollouts) and np.array_equal(a.score, b.score)
