"""layout.plan_rows: the rows each process trains on in a TRL step (no torch, no TRL)."""

from __future__ import annotations

import pytest

from frontier_rft.integrations.trl.layout import plan_rows


def rows(count: int, round_: int = 0) -> list[tuple[int, int]]:
    return [(round_, i) for i in range(count)]


@pytest.mark.parametrize(
    ("trained", "processes", "micro", "per"),
    [
        (16, 1, 1, 16),  # one process, one micro-batch: exactly the trained rows
        (16, 2, 1, 8),
        (12, 2, 4, 8),  # 6 a process, padded to the 4-row micro-batches' multiple
        (4, 2, 8, 8),  # 2 a process, one row per micro-batch at least
        (9, 2, 1, 5),  # odd: the second process gets 4 and one filler
        (0, 2, 4, 4),  # nothing trained: one masked row per micro-batch, every process
        (24, 4, 2, 6),
    ],
)
def test_each_process_gets_its_balanced_share_padded_to_the_micro_batches(
    trained: int, processes: int, micro: int, per: int
) -> None:
    live = rows(trained)
    plan = plan_rows(live, rows(5, 1), processes, micro)
    assert plan.per_process == per and len(plan.rows) == len(plan.trained) == per * processes
    assert per % micro == 0 and per >= micro
    # every trained row exactly once, in order; the rest are fillers
    assert [plan.rows[i] for i, t in enumerate(plan.trained) if t >= 0] == live
    assert [t for t in plan.trained if t >= 0] == list(range(trained))
    assert plan.live == trained
    share = -(-trained // processes)
    for q in range(processes):
        mine = plan.trained[q * per : (q + 1) * per]
        got = [t for t in mine if t >= 0]
        assert got == list(range(q * share, min((q + 1) * share, trained)))
        assert all(t < 0 for t in mine[len(got) :])  # trained rows first, then fillers


def test_fillers_copy_the_process_own_rows_else_the_spare_ones() -> None:
    plan = plan_rows(rows(3), rows(2, 1), 2, 1)  # 2 + (1 and a filler)
    assert plan.rows == [(0, 0), (0, 1), (0, 2), (0, 2)]
    empty = plan_rows([], rows(2, 1), 2, 2)
    assert empty.rows == [(1, 0), (1, 1), (1, 0), (1, 1)] and empty.live == 0
    uniform_rows = 16
    assert len(plan_rows(rows(uniform_rows), [], 2, 4).rows) == uniform_rows  # no padding


def test_nothing_to_lay_out_or_bad_counts_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="nothing to lay out"):
        plan_rows([], [], 2, 1)
    with pytest.raises(ValueError, match="must be >= 1"):
        plan_rows(rows(4), [], 0, 1)
