"""The service's lease table: which handed-out tasks are still awaited, and since when.

Only tasks in flight are stored (sorted ids with the select call and wall time that
leased them), so memory is O(tasks in flight), not O(pool): a sharded service over 1e9
tasks keeps a few thousand entries. Leases also sit in a FIFO in issue order; both
deadlines (select calls, seconds) grow along it, so expiry pops from the left and costs
O(expired).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import I64

__all__ = ["LeaseTable"]


class LeaseTable:
    """Active leases: task id -> (select call that issued it, wall time)."""

    def __init__(self, timeout_selects: int, timeout_s: float | None, counts: dict[str, int]):
        self.timeout_selects = timeout_selects
        self.timeout_s = timeout_s
        self.counts = counts  # the service's counters, updated in place
        self.ids: I64 = np.zeros(0, dtype=np.int64)
        self.call: I64 = np.zeros(0, dtype=np.int64)
        self.time: NDArray[np.float64] = np.zeros(0)
        self._fifo: deque[tuple[int, float, I64]] = deque()

    @property
    def active(self) -> int:
        return int(self.ids.shape[0])

    def lease(self, ids: I64, call: int, now: float) -> None:
        ids = np.unique(ids)
        self.counts["leases_issued"] += int(ids.shape[0])
        pos, held = self._find(ids)
        self.call[pos[held]] = call  # re-leased: the newer lease replaces the older
        self.time[pos[held]] = now
        new = ids[~held]
        at = np.searchsorted(self.ids, new)
        self.ids = np.insert(self.ids, at, new)
        self.call = np.insert(self.call, at, call)
        self.time = np.insert(self.time, at, now)
        self._fifo.append((call, now, ids))

    def release(self, ids: I64) -> None:
        ids = np.unique(ids)
        pos, held = self._find(ids)
        self.counts["leases_reported"] += int(held.sum())
        self.counts["unleased_reports"] += int((~held).sum())
        self._drop(pos[held])

    def expire(self, call: int, now: float) -> None:
        """Leases issued timeout select calls ago (or timeout seconds ago) expire now."""
        fifo, limit_s = self._fifo, self.timeout_s
        while fifo and (
            fifo[0][0] <= call - self.timeout_selects
            or (limit_s is not None and fifo[0][1] <= now - limit_s)
        ):
            issued, _, ids = fifo.popleft()
            pos, held = self._find(ids)
            live = pos[held][self.call[pos[held]] == issued]  # not reported nor re-leased
            self.counts["leases_expired"] += int(live.shape[0])
            self._drop(live)

    def state(self) -> dict[str, Any]:
        return {
            "lease_ids": self.ids.tolist(),
            "lease_call": self.call.tolist(),
            "lease_time": self.time.tolist(),
        }

    def load(self, state: dict[str, Any]) -> None:
        ids = np.asarray(state["lease_ids"], dtype=np.int64)
        calls = np.asarray(state["lease_call"], dtype=np.int64)
        times = np.asarray(state["lease_time"], dtype=np.float64)
        order = np.argsort(ids, kind="stable")
        self.ids, self.call, self.time = ids[order], calls[order], times[order]
        self._fifo.clear()
        for c in np.unique(calls):  # rebuild the issue-order queue
            self._fifo.append((int(c), float(times[calls == c].min()), ids[calls == c]))

    def _find(self, ids: I64) -> tuple[I64, NDArray[np.bool_]]:
        pos = np.searchsorted(self.ids, ids)
        held = pos < self.ids.shape[0]
        held[held] = self.ids[pos[held]] == ids[held]
        return pos, held

    def _drop(self, pos: I64) -> None:
        if pos.shape[0]:
            self.ids = np.delete(self.ids, pos)
            self.call = np.delete(self.call, pos)
            self.time = np.delete(self.time, pos)
