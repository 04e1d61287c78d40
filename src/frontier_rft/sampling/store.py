"""One store for the groups a step rolled out that a later step may train: a Pilot-Commit
pilot waiting for its commit, or any group a sampler holds across steps.

A store row is one group: its prompt, the step, round and position it was rolled out at, its
rewards and the payload its rollout carried (`Rolled`: the reference trainer's completions;
None where the rollout returned bare rewards). A sampler keeps its store in its own state, so
a checkpoint saves it with the sampler and a resume continues exactly, the way optax keeps
state inside a transform: no trainer keeps a copy by round and row.

The store is the one place that saves a payload, so it holds only payloads a checkpoint can
hold: token lists (a list of lists of ints, one per completion) or None. Anything else is
refused when the state is saved, with the reason (`payload_state`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_STEP
from frontier_rft.core.state_check import check_keys, read_array
from frontier_rft.sampling.filtered_batch import FilteredBatch, csr, gather
from frontier_rft.sampling.step import Round

__all__ = ["GroupStore"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
_KEYS = ("task", "step", "round", "group", "rewards")
_NEWER = ("counts", "payloads")
"""Keys a store's state gained with payloads; a state without them (a Pilot-Commit buffer
saved before) holds groups of one size as a (rows, k) reward matrix and no payloads."""
MAX_TOKEN = (1 << 31) - 1
"""Largest token id a saved payload may hold (vocabularies are far smaller)."""


@dataclass(frozen=True, eq=False)
class GroupStore:
    """Groups held for a later step, in the order they came (immutable: each change is a new
    store, so a sampler's step can work on copies and commit them at its end)."""

    task: I64
    """(M,) the prompt of each held group."""
    step: I64
    """(M,) the step that rolled it out."""
    round: I64
    """(M,) its round in that step."""
    group: I64
    """(M,) its position among that round's prompts."""
    counts: I64
    """(M,) its rollouts."""
    rewards: F64
    """Its rewards, group after group (CSR by `counts`)."""
    payloads: tuple[Any, ...]
    """(M,) the payload its rollout carried (None where it carried none)."""

    @staticmethod
    def empty() -> GroupStore:
        z = np.zeros(0, dtype=np.int64)
        return GroupStore(z, z, z, z, z, np.zeros(0), ())

    @property
    def size(self) -> int:
        return int(self.task.shape[0])

    @property
    def offsets(self) -> I64:
        return csr(self.counts)

    def group_rewards(self, i: int) -> F64:
        """The rewards of held group i."""
        off = self.offsets
        return self.rewards[off[i] : off[i + 1]]

    def keys(self) -> list[tuple[int, int, int]]:
        """(step, round, position) of every held group, in order: a sampler's `held()`."""
        return list(zip(self.step.tolist(), self.round.tolist(), self.group.tolist(), strict=True))

    def matrix(self) -> F64:
        """(M, k) rewards, one row a group (groups of one size only; (0, 0) when empty)."""
        if self.size == 0:
            return np.zeros((0, 0))
        if np.any(self.counts != self.counts[0]):
            raise ValueError("the store's groups differ in size: read them with group_rewards")
        return self.rewards.reshape(self.size, -1)

    def keep(self, mask: NDArray[np.bool_]) -> GroupStore:
        """The store with only the rows where `mask` is True, in order."""
        rows = np.flatnonzero(mask)
        counts, pos = gather(self.offsets, rows)
        return GroupStore(
            self.task[rows],
            self.step[rows],
            self.round[rows],
            self.group[rows],
            counts,
            self.rewards[pos],
            tuple(self.payloads[i] for i in rows.tolist()),
        )

    def add(self, rnd: Round, positions: I64, step: int, index: int) -> GroupStore:
        """The store with groups `positions` of round `rnd` (round `index` of step `step`)
        appended, with their rewards and payloads."""
        positions = np.asarray(positions, dtype=np.int64)
        rows = [rnd.group(g) for g in positions.tolist()]
        many = positions.shape[0]
        return self._then(
            GroupStore(
                rnd.task_ids[positions],
                np.full(many, step, dtype=np.int64),
                np.full(many, index, dtype=np.int64),
                positions,
                np.array([row.shape[0] for row in rows], dtype=np.int64),
                np.concatenate([np.zeros(0), *rows]),
                tuple(rnd.payload(g) for g in positions.tolist()),
            )
        )

    def add_trained(self, batch: FilteredBatch, positions: I64) -> GroupStore:
        """The store with groups `positions` of `batch` appended, each whole: its rewards and
        its parts' payloads joined in order (a group and its rescue: one list of completions),
        kept under its first part's step, round and position."""
        positions = np.asarray(positions, dtype=np.int64)
        counts, pos = gather(batch.offsets, positions)
        return self._then(
            GroupStore(
                batch.task_ids[positions],
                batch.steps[positions],
                batch.source_round[positions],
                batch.source_group[positions],
                counts,
                batch.rewards[pos],
                tuple(_joined(batch.payload_parts(g)) for g in positions.tolist()),
            )
        )

    def _then(self, more: GroupStore) -> GroupStore:
        """This store's groups, then `more`'s."""
        return GroupStore(
            np.concatenate([self.task, more.task]),
            np.concatenate([self.step, more.step]),
            np.concatenate([self.round, more.round]),
            np.concatenate([self.group, more.group]),
            np.concatenate([self.counts, more.counts]).astype(np.int64),
            np.concatenate([self.rewards, more.rewards]),
            self.payloads + more.payloads,
        )

    def held_batch(self, rows: I64) -> FilteredBatch:
        """Held groups `rows` as a batch of their own, each trained whole as it was rolled
        out (its step, round and position kept; its payload)."""
        rows = np.asarray(rows, dtype=np.int64)
        counts, pos = gather(self.offsets, rows)
        k = rows.shape[0]
        carries = any(self.payloads[i] is not None for i in rows.tolist())
        return FilteredBatch(
            task_ids=self.task[rows],
            steps=self.step[rows],
            counts=counts,
            offsets=csr(counts),
            rewards=self.rewards[pos],
            from_surplus=np.zeros(k, dtype=np.bool_),
            source_round=self.round[rows],
            source_group=self.group[rows],
            deficit=0,
            payloads=tuple((self.payloads[i],) for i in rows.tolist()) if carries else (),
        )

    def trained_first(self, rows: I64, fresh: FilteredBatch) -> FilteredBatch:
        """Held groups `rows` (`held_batch`), then the groups of `fresh` (this step's)."""
        held = self.held_batch(rows)
        return _then(held, fresh, max(0, fresh.deficit - held.num_groups))

    def trained_after(self, fresh: FilteredBatch, rows: I64) -> FilteredBatch:
        """The groups of `fresh` (this step's), then held groups `rows` (`held_batch`)."""
        held = self.held_batch(rows)
        return _then(fresh, held, max(0, fresh.deficit - held.num_groups))

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        """The store as a sampler's state holds it (arrays; payloads as `payload_state`)."""
        return {
            "task": self.task.copy(),
            "step": self.step.copy(),
            "round": self.round.copy(),
            "group": self.group.copy(),
            "counts": self.counts.copy(),
            "rewards": self.rewards.copy(),
            "payloads": payload_state(self.payloads),
        }

    @staticmethod
    def read(raw: Any, who: str, num_tasks: int, *, unit: bool = True) -> GroupStore:
        """A store from a state (`state`'s, or an older Pilot-Commit buffer's), every column
        checked (prompts below `num_tasks`; rewards in [0, 1] when `unit`); a ValueError
        naming `who` and the problem otherwise."""
        raw = check_keys(raw, f"{who} state: buffer", _KEYS, optional=_NEWER)
        cols = {
            key: read_array(raw, key, who, np.int64, lo=0, hi=hi)
            for key, hi in (
                ("task", num_tasks - 1),
                ("step", MAX_STEP),
                ("round", 10_000),
                ("group", 1 << 40),
            )
        }
        size = cols["task"].shape[0]
        lo, hi = (0.0, 1.0) if unit else (None, None)
        if "counts" in raw:
            counts = read_array(raw, "counts", who, np.int64, lo=1, hi=1 << 20)
            rewards = read_array(raw, "rewards", who, np.float64, lo=lo, hi=hi)
        else:  # an older buffer: a (rows, k) matrix of pilots of one size
            matrix = read_array(raw, "rewards", who, np.float64, shape=(None, None), lo=lo, hi=hi)
            if matrix.shape[0] != size:
                raise ValueError(f"{who} state: the buffer's columns differ in length")
            counts = np.full(size, matrix.shape[1], dtype=np.int64)
            rewards = matrix.reshape(-1)
        if any(v.shape != (size,) for v in (*cols.values(), counts)):
            raise ValueError(f"{who} state: the buffer's columns differ in length")
        if rewards.shape != (int(counts.sum()),):
            raise ValueError(f"{who} state: the buffer's rewards do not match its counts")
        payloads = read_payloads(raw.get("payloads"), who, size)
        return GroupStore(
            cols["task"], cols["step"], cols["round"], cols["group"], counts, rewards, payloads
        )


def _then(first: FilteredBatch, second: FilteredBatch, deficit: int) -> FilteredBatch:
    """`first`'s groups then `second`'s, one batch of `deficit` (the held groups fill slots
    the fresh ones left open)."""
    counts = np.concatenate([first.counts, second.counts]).astype(np.int64)
    return FilteredBatch(
        task_ids=np.concatenate([first.task_ids, second.task_ids]),
        steps=np.concatenate([first.steps, second.steps]),
        counts=counts,
        offsets=csr(counts),
        rewards=np.concatenate([first.rewards, second.rewards]),
        from_surplus=np.concatenate([first.from_surplus, second.from_surplus]),
        source_round=np.concatenate([first.source_round, second.source_round]),
        source_group=np.concatenate([first.source_group, second.source_group]),
        deficit=deficit,
        continued=(
            (first.continued or ((),) * first.num_groups)
            + (second.continued or ((),) * second.num_groups)
            if first.continued or second.continued
            else ()
        ),
        payloads=(
            (first.payloads or ((None,),) * first.num_groups)
            + (second.payloads or ((None,),) * second.num_groups)
            if first.payloads or second.payloads
            else ()
        ),
    )


def _joined(parts: Sequence[Any]) -> Any:
    """One group's payload from its parts' (token lists: one list of completions; None when
    a part carried none)."""
    if len(parts) == 1:
        return parts[0]
    if any(p is None for p in parts):
        return None
    return [c for part in parts for c in part]


def payload_state(payloads: Sequence[Any]) -> dict[str, Any]:
    """Payloads as a state holds them: {'form': 'none'} when every one is None, else token
    lists flattened ({'form': 'tokens', 'rows': completions per group, 'lengths': tokens per
    completion, 'tokens': every token}); a ValueError for a payload of any other kind."""
    if all(p is None for p in payloads):
        return {"form": "none"}
    rows: list[int] = []
    lengths: list[int] = []
    tokens: list[int] = []
    for p in payloads:
        if not _token_lists(p):
            raise ValueError(
                f"a held group's payload is a {type(p).__name__}: a checkpoint keeps payloads "
                "that are token lists (a list of lists of ints, one per completion); return "
                "those from the rollout function, or a sampler that holds no group across steps"
            )
        rows.append(len(p))
        for completion in p:
            lengths.append(len(completion))
            tokens.extend(int(t) for t in completion)
    return {
        "form": "tokens",
        "rows": np.array(rows, dtype=np.int64),
        "lengths": np.array(lengths, dtype=np.int64),
        "tokens": np.array(tokens, dtype=np.int64),
    }


def read_payloads(raw: Any, who: str, size: int) -> tuple[Any, ...]:
    """Inverse of `payload_state` for a store of `size` groups (None: a state saved before
    payloads, none held); a ValueError naming `who` for a state that does not fit."""
    if raw is None:
        return (None,) * size
    what = f"{who} state: buffer payloads"
    form = check_keys(raw, what, ("form",), optional=("rows", "lengths", "tokens"))["form"]
    if form == "none":
        return (None,) * size
    if form != "tokens":
        raise ValueError(f"{what}: form must be 'none' or 'tokens', got {form!r}")
    raw = check_keys(raw, what, ("form", "rows", "lengths", "tokens"))
    rows = read_array(raw, "rows", who, np.int64, lo=0, hi=1 << 20)
    lengths = read_array(raw, "lengths", who, np.int64, lo=0, hi=1 << 30)
    tokens = read_array(raw, "tokens", who, np.int64, lo=0, hi=MAX_TOKEN)
    if rows.shape != (size,) or lengths.shape != (int(rows.sum()),):
        raise ValueError(f"{what}: completions do not match the buffer's groups")
    if tokens.shape != (int(lengths.sum()),):
        raise ValueError(f"{what}: tokens do not match the completions' lengths")
    flat = tokens.tolist()
    ends = np.cumsum(lengths).tolist()
    completions = [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    cut = np.cumsum(rows).tolist()
    return tuple(completions[a:b] for a, b in zip([0, *cut[:-1]], cut, strict=True))


def _token_lists(payload: Any) -> bool:
    """Whether `payload` is a list (or tuple) of lists of ints in [0, MAX_TOKEN]."""
    if not isinstance(payload, list | tuple):
        return False
    for completion in payload:
        if not isinstance(completion, list | tuple):
            return False
        for t in completion:
            if isinstance(t, bool) or not isinstance(t, int | np.integer):
                return False
            if not 0 <= t <= MAX_TOKEN:
                return False
    return True
