"""One shard of a sharded selector service: a SelectorService over a slice of the pool.

Everything of SelectorService holds (staleness, leases, de-duplication by (step, task)
before staleness is judged, checkpoint + write-ahead log, exact resume); a shard differs
in how feedback reaches its selector. Accepted rollouts are held in a fold buffer; the
driver folds them in rounds (`sharded.py`):

- `prepare()` (read only) returns how many buffered pieces the round may fold (`cut`)
  and, for BOTS-family selectors, their per-step summary (`bots.shard.summarize`);
- `propose(round, plan, cuts, k, candidates)` folds the first `cut` pieces by the
  driver's plan and returns this shard's k best tasks; `commit(round, ids)` leases the
  ones the driver kept. Other selectors use `select_split(round, cut, n)`: fold, then
  this shard's own select(n).

Rounds are numbered; a round already applied returns its logged reply, so the driver
may retry a call whose reply was lost (a killed shard, a dead driver) without applying
it twice. Ids are local to the shard (0 .. its size - 1); the driver maps them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.config import config_to_dict
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.selectors.bots.shard import (
    Coordinator,
    PlanStep,
    apply_plan,
    propose,
    summarize,
)
from frontier_rft.service.config import SelectorSpec, ServiceConfig
from frontier_rft.service.selector_service import SelectorService

__all__ = ["ShardService"]

Piece = tuple[I64, F64, int, int | None]


class ShardService(SelectorService):
    """A SelectorService that buffers de-duplicated feedback until the driver's round."""

    def __init__(
        self,
        selector: Selector | SelectorSpec | None,
        config: ServiceConfig | None = None,
        *,
        shard: int = 0,
        bounds: tuple[int, ...] = (),
        clock: Callable[[], float] = time.time,
    ):
        self.shard = shard
        self.bounds = tuple(bounds)  # the partition's task-id boundaries (for clients)
        self._pieces: list[Piece] = []  # accepted, de-duplicated, not yet folded
        self._round = 0
        self._reply: dict[str, Any] | None = None  # the last round's reply
        self._shard_counts = {"rounds": 0}
        super().__init__(selector, config, clock=clock)

    @property
    def coordinated(self) -> bool:
        """BOTS-family selectors fold by the driver's plan and are selected by merging."""
        return isinstance(self.selector, BOTSSelector)

    def select(self, batch_size: int, policy_version: int | None = None) -> NDArray[np.int64]:
        raise RuntimeError("a shard selects in the driver's rounds; call the sharded service")

    def info(self) -> dict[str, Any]:
        """What a driver or client needs to know about this shard."""
        sel = self.selector
        return {
            "shard": self.shard,
            "bounds": list(self.bounds),
            "num_tasks": sel.num_tasks,
            "selector": sel.name,
            "coordinated": self.coordinated,
            "candidates": int(getattr(sel.config, "candidates", 0)),
            "reward_bounds": None if sel.reward_bounds is None else list(sel.reward_bounds),
            "max_version_jump": self.config.max_version_jump,
            "policy_version": self.policy_version,
            "round": self._round,
        }

    # ------------------------------------------------------------------ rounds
    def prepare(self) -> dict[str, Any]:
        """What the next round may fold: the buffered pieces now (changes nothing)."""
        self._check_alive()
        out: dict[str, Any] = {"cut": len(self._pieces), "round": self._round}
        if self.coordinated:
            assert isinstance(self.selector, BOTSSelector)
            pieces = [(p[0], p[1], p[2]) for p in self._pieces]
            offset = self.bounds[self.shard] if self.bounds else 0
            out["summary"] = summarize(self.selector, pieces, offset)
        return out

    def coordinator_state(self) -> dict[str, Any]:
        """The BOTS global state (clock, logged steps, mu~, rho) and the last round."""
        assert isinstance(self.selector, BOTSSelector)
        state = Coordinator.state_of(self.selector)
        config = config_to_dict(self.selector.config)
        return {**state, "config": config, "round": self._round, "reply": self._reply}

    def propose(
        self,
        round_: int,
        plan: list[list[Any]],
        cuts: list[int],
        k: int,
        candidates: int | None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """Fold this shard's cut of the buffer by `plan`, then return its k best tasks;
        `version` is the trainer's policy version of the round (the driver checked it)."""
        self._check_alive()
        if self._repeat(round_):
            assert self._reply is not None
            return {k_: self._reply[k_] for k_ in ("ids", "scores", "keys")}
        call = {"op": "propose", "round": round_, "plan": plan, "cuts": cuts, "k": k}
        return self._propose({**call, "v": version, "c": candidates})

    def commit(self, round_: int, ids: list[int]) -> int:
        """Lease the tasks of round `round_` that the driver kept; returns the seq."""
        self._check_alive()
        return self._lease_round(round_, ids, self.clock())

    def _lease_round(self, round_: int, ids: list[int], now: float) -> int:
        call = self._counts["selects"]
        self._counts["selects"] += 1
        self.leases.expire(call, now)
        self.leases.lease(np.asarray(ids, dtype=np.int64), call, now)
        record = {"op": "commit", "round": round_, "ids": list(ids), "t": now}
        return self._commit(record, durable=False)

    def select_split(self, round_: int, cut: int, n: int, version: int | None) -> list[int]:
        """Fold the first `cut` buffered pieces (-1: all), then this shard's own select(n)."""
        self._check_alive()
        if self._repeat(round_):
            assert self._reply is not None
            return list(self._reply["ids"])
        return self._split(round_, cut, n, version, self.clock())

    # ------------------------------------------------------------------ internals
    def _repeat(self, round_: int) -> bool:
        if round_ == self._round and self._reply is not None:
            return True  # a retry of the round just applied: the same reply
        if round_ != self._round + 1:
            raise ValueError(f"shard {self.shard}: round {round_} after round {self._round}")
        return False

    def _take(self, cut: int) -> list[Piece]:
        if not 0 <= cut <= len(self._pieces):
            raise ValueError(f"shard {self.shard}: cut {cut} of {len(self._pieces)} pieces")
        taken, self._pieces = self._pieces[:cut], self._pieces[cut:]
        return taken

    def _propose(self, call: dict[str, Any], logged: list[int] | None = None) -> dict[str, Any]:
        """Apply the proposal `call`, its journal record (op, round, plan, cuts, k, v, c), as
        `propose` makes it and a replay reads it (`logged`: the ids it replied then)."""
        round_, plan, cuts = call["round"], call["plan"], call["cuts"]
        version = call.get("v")  # logs before v: no version
        sel = self.selector
        assert isinstance(sel, BOTSSelector)
        pieces = self._take(cuts[self.shard])
        steps = [PlanStep.from_state(p) for p in plan]
        apply_plan(sel, steps, [(p[0], p[1], p[2]) for p in pieces])
        got = propose(sel, call["k"], call["c"])
        reply = {"ids": got.ids.tolist(), "scores": got.scores.tolist(), "keys": got.keys.tolist()}
        self._check_logged(logged, reply["ids"])
        self._round, self._reply = round_, {**reply, "plan": plan, "cuts": cuts, "v": version}
        self._shard_counts["rounds"] += 1
        self._see_version(version)
        # Durable: a driver that got this reply has moved on, even if the machine has not.
        self._commit({**call, "ids": reply["ids"]}, durable=True)
        return reply

    def _split(
        self, round_: int, cut: int, n: int, version: int | None, now: float, logged: Any = None
    ) -> list[int]:
        sel = self.selector
        cut = len(self._pieces) if cut < 0 else cut  # -1: everything buffered now
        for piece_ids, rewards, step, v in self._take(cut):
            sel.update(Feedback(piece_ids, rewards, step, v))
        ids: list[int] = [int(i) for i in sel.select(n)] if n > 0 else []
        if n == 0:
            sel.flush()
        self._check_logged(logged, ids)
        call = self._counts["selects"]
        self._counts["selects"] += 1
        self.leases.expire(call, now)
        self.leases.lease(np.asarray(ids, dtype=np.int64), call, now)
        self._round, self._reply = round_, {"ids": ids, "v": version}
        self._shard_counts["rounds"] += 1
        self._see_version(version)
        record = {"op": "split", "round": round_, "cut": cut, "n": n, "v": version, "t": now}
        self._commit({**record, "ids": ids}, durable=True)
        return ids

    def _see_version(self, version: int | None) -> None:
        """The trainer's version of a round, as SelectorService.select records it: later
        feedback is judged stale against it (staleness='drop' / 'downweight')."""
        if version is not None:
            self.policy_version = max(self.policy_version, int(version))

    def _check_logged(self, logged: list[int] | None, ids: list[int]) -> None:
        if logged is not None and ids != logged:
            raise RuntimeError(f"shard {self.shard}: replay diverged at operation {self.seq + 1}")

    def _deliver(
        self, ids: I64, rewards: F64, step: int, version: int | None, idempotent: bool
    ) -> None:
        """Hold the new, kept rollouts for the driver's next round (`_screen` de-duplicated)."""
        if ids.shape[0]:
            self._pieces.append((ids, rewards, step, version))

    def _replay_op(self, r: dict[str, Any]) -> None:
        op = r["op"]
        if op == "propose":
            self._propose(r, logged=r["ids"])
        elif op == "split":
            self._split(r["round"], r["cut"], r["n"], r["v"], float(r["t"]), logged=r["ids"])
        elif op == "commit":
            self._lease_round(r["round"], r["ids"], float(r["t"]))
        else:
            super()._replay_op(r)

    def service_state(self) -> dict[str, Any]:
        state = super().service_state()
        state["shard"] = {
            "index": self.shard,
            "pieces": [[p[0].tolist(), p[1].tolist(), p[2], p[3]] for p in self._pieces],
            "round": self._round,
            "reply": self._reply,
            "counts": dict(self._shard_counts),
        }
        return state

    def _load_service_state(self, state: dict[str, Any]) -> None:
        super()._load_service_state(state)
        sh = state["shard"]
        self._pieces = [
            (np.asarray(i, dtype=np.int64), np.asarray(r, dtype=np.float64), int(s), v)
            for i, r, s, v in sh["pieces"]
        ]
        self._round, self._reply = int(sh["round"]), sh["reply"]
        self._shard_counts = {"rounds": int(sh["counts"]["rounds"])}
        if "seen" in sh:  # checkpoints from before the shared screen kept them here
            self._seen = self._read_seen(sh["seen"], "service checkpoint")
            self._counts["duplicates_dropped"] = int(sh["counts"].get("duplicates_dropped", 0))

    def metrics(self) -> dict[str, float]:
        out = super().metrics()
        for k, v in self._shard_counts.items():
            out[f"service/{k}"] = float(v)
        out["service/buffered_rollouts"] = float(sum(p[0].shape[0] for p in self._pieces))
        return out
