"""Which rows of a step's generation each process trains on: the trained groups' rows only,
balanced across processes, padded only as far as TRL's loop needs.

TRL's `_prepare_inputs` splits each process's training batch into `steps_per_generation`
equal micro-batches (`split_tensor_dict`), one per `training_step`, and every process runs
the same number of them (DDP, FSDP and ZeRO all-reduce in each backward). So each process
gets ceil(T / P) of the T trained rows (P processes, the last one fewer), and the rows are
padded to the same count R on every process, R the smallest multiple of steps_per_generation
that holds that share, at least one row per micro-batch: a step that trains no group still
runs its micro-batches (on filler rows) and keeps the ranks in step. Filler rows are copies
of the process's own trained rows where it has any (no exchange, no wider prompt), else of
any generated row; the caller zeroes their completion mask and advantage.

Uniform lays out generation_batch_size / P rows per process; a step training G of its B
groups lays out R = ceil(ceil(G n / P) / S) x S (S = steps_per_generation), i.e. G n rows
plus fewer than P x S fillers in all.

Pure Python: no torch, so the arithmetic is tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RowPlan", "plan_rows"]

Row = tuple[int, int]
"""(round, row of the round): one generated completion."""


@dataclass(frozen=True)
class RowPlan:
    """Every process's rows, in process order: process q trains rows[q * per_process :
    (q + 1) * per_process]."""

    rows: list[Row]
    """The laid-out rows, trained rows and fillers."""
    trained: list[int]
    """Per laid-out row, its index among the trained rows; -1 for a filler."""
    per_process: int
    """Rows each process trains on (the same on every process)."""

    @property
    def live(self) -> int:
        """Trained rows laid out (fillers excluded)."""
        return sum(1 for i in self.trained if i >= 0)


def plan_rows(trained: list[Row], spare: list[Row], processes: int, micro_batches: int) -> RowPlan:
    """The rows each of `processes` trains on: `trained` balanced across them in order,
    each share padded to the same multiple of `micro_batches` (at least one row each) with
    copies of its own trained rows, or of `spare` (the step's generated rows) where it has
    none. A ValueError when there is nothing to copy."""
    if processes < 1 or micro_batches < 1:
        raise ValueError(
            f"processes and micro_batches must be >= 1, got {processes}, {micro_batches}"
        )
    if not trained and not spare:
        raise ValueError("a step with no generated row has nothing to lay out")
    share = -(-len(trained) // processes)
    per = micro_batches * max(1, -(-share // micro_batches))
    rows: list[Row] = []
    index: list[int] = []
    for q in range(processes):
        start = min(q * share, len(trained))
        mine = list(range(start, min(start + share, len(trained))))
        rows += [trained[i] for i in mine]
        index += mine
        fill = per - len(mine)
        if mine:  # copies of this process's own rows: nothing to fetch from another
            rows += [trained[mine[i % len(mine)]] for i in range(fill)]
        else:
            rows += [spare[(q * per + i) % len(spare)] for i in range(fill)]
        index += [-1] * fill
    return RowPlan(rows, index, per)
