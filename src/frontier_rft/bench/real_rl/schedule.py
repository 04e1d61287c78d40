"""One evaluation schedule for every arm of a report (docs/results/device_cost.md, "How a
comparison is read").

A time-to-score is read at evaluations, so two arms evaluated at different intervals (every 4
steps against every 8) compare their schedules as much as what they learned. Every arm of one
report therefore shares one schedule: the same step interval (`eval_every`) and the same grid
of cost (`eval_grid`: passes, rollouts or a device's projected seconds, training.eval_grid).
`frontier bench-rl --eval-every N --eval-grid ...` puts every entry of a comparison on one; a
report whose arms differ is refused in one line that names them and the fix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from frontier_rft.bench.real_rl.entries import BenchEntry
from frontier_rft.bench.real_rl.testbed import Testbed
from frontier_rft.training.eval_grid import parse_grid

__all__ = ["Schedule", "check_one_schedule", "on_schedule", "schedule_of"]


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Where a run was evaluated: every `every` steps (0: start and end only) and on `grid`."""

    every: int
    """Steps between evaluations (TrainConfig.eval_every)."""
    grid: tuple[str, ...] = ()
    """Grid lines of cost (TrainConfig.eval_grid), in the order written."""

    def words(self) -> str:
        """E.g. 'every 4 steps' or 'every 8 steps and every 3.5 h200-projected seconds'."""
        steps = f"every {self.every} steps" if self.every else "at start and end"
        grid = [line.words() for line in parse_grid(self.grid)]
        return " and ".join([steps, *grid])

    def flags(self) -> str:
        """The bench-rl flags that put an arm on this schedule."""
        grid = f" --eval-grid {','.join(self.grid)}" if self.grid else ""
        return f"--eval-every {self.every}{grid}"


def schedule_of(run: Mapping[str, Any]) -> Schedule:
    """A loaded run's schedule, from its recorded config."""
    config = run.get("info", {}).get("config", {})
    return Schedule(int(config.get("eval_every", 0) or 0), tuple(config.get("eval_grid", ())))


def on_schedule(
    entries: Sequence[BenchEntry],
    tb: Testbed,
    every: int | None = None,
    grid: Sequence[str] | None = None,
) -> list[BenchEntry]:
    """The entries, each evaluated every `every` steps and on `grid` (None: as it is). A
    setting equal to the testbed's is left out of an entry's own fields, so an entry on the
    testbed's own schedule keeps the digest its records were made under."""
    if grid is not None:
        parse_grid(tuple(grid))  # a bad line is named before any entry is rebuilt
    out = []
    for entry in entries:
        own = dict(entry.train)
        for name, value, default in (
            ("eval_every", every, tb.train.eval_every),
            ("eval_grid", None if grid is None else tuple(grid), tb.train.eval_grid),
        ):
            if value is None:
                continue
            if value == default:
                own.pop(name, None)
            else:
                own[name] = value
        out.append(entry if own == dict(entry.train) else dataclasses.replace(entry, train=own))
    return out


def check_one_schedule(runs: Mapping[str, Mapping[int, Mapping[str, Any]]]) -> Schedule:
    """The one schedule every run of every arm shares; a ValueError naming the arms on each
    schedule and the flags that put them on one otherwise."""
    by_schedule: dict[Schedule, list[str]] = {}
    for label, by_seed in runs.items():
        for run in by_seed.values():
            arms = by_schedule.setdefault(schedule_of(run), [])
            if label not in arms:
                arms.append(label)
    if len(by_schedule) == 1:
        return next(iter(by_schedule))
    finest = min(by_schedule, key=lambda s: (s.every or 10**9, -len(s.grid)))
    named = "; ".join(f"{', '.join(arms)}: {s.words()}" for s, arms in by_schedule.items())
    raise ValueError(
        f"the arms were evaluated on different schedules ({named}), so their times to a score "
        f"would compare the schedules: rerun every arm on one, e.g. {finest.flags()}"
    )
