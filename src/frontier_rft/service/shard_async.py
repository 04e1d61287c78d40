"""A shard whose acknowledgements wait on shared fsyncs: group commit across clients.

ShardService alone fsyncs once per `update_many` call: one fsync per worker flush. A
Ray actor runs calls one at a time, so with many workers the shard's throughput is
bounded by fsync latency (0.1 ms on an idle SSD, 5+ ms on a busy shared disk).
AsyncShardActor is the same service behind an asyncio actor: each call applies its
operation and appends its log records at once (state changes stay one at a time, on
the event loop), then awaits durability; one fsync, run in a thread, covers every
record appended before it started, so the calls that arrived meanwhile are acknowledged
together by the next fsync. An acknowledgement still means "on disk"; a crash before it
loses only unacknowledged calls, which clients re-send (idempotent).

Periodic checkpoints run between fsyncs (the log segment they close is not being
fsynced) and only after the call's own records are durable.
"""

from __future__ import annotations

import asyncio
from typing import Any

from frontier_rft.service.shard import ShardService

__all__ = ["AsyncShardActor"]


class AsyncShardActor:
    """ShardService for an asyncio actor (the Ray layer's shard actor): `update_many`, rounds
    and version announcements are acknowledged once durable, with concurrent calls sharing
    fsyncs."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.svc = ShardService(*args, **kwargs)
        self.svc.defer_sync = True
        self._flusher: asyncio.Future[None] | None = None
        self.fsyncs = 0
        """Group fsyncs run so far (each acknowledges one or more calls)."""

    # ------------------------------------------------------------------ acknowledged
    async def update_many(self, feedbacks: list[Any], idempotent: bool = False) -> Any:
        acks = self.svc.update_many(feedbacks, idempotent)
        await self._durable()
        return acks

    async def update(self, feedback: Any, idempotent: bool = False) -> Any:
        ack = self.svc.update(feedback, idempotent=idempotent)
        await self._durable()
        return ack

    async def propose(self, *args: Any) -> Any:
        reply = self.svc.propose(*args)
        await self._durable()
        return reply

    async def select_split(self, *args: Any) -> Any:
        ids = self.svc.select_split(*args)
        await self._durable()
        return ids

    async def set_policy_version(self, version: int) -> int:
        seq = self.svc.set_policy_version(version)
        await self._durable()
        return seq

    # ------------------------------------------------------------------ other calls
    async def commit(self, round_: int, ids: list[int]) -> int:
        return self.svc.commit(round_, ids)  # leases: durable with the next fsync

    async def check_many(self, feedbacks: list[Any]) -> int:
        return self.svc.check_many(feedbacks)

    async def prepare(self) -> dict[str, Any]:
        return self.svc.prepare()

    async def info(self) -> dict[str, Any]:
        return {**self.svc.info(), "fsyncs": self.fsyncs}

    async def coordinator_state(self) -> dict[str, Any]:
        return self.svc.coordinator_state()

    async def metrics(self) -> dict[str, float]:
        return {**self.svc.metrics(), "service/group_fsyncs": float(self.fsyncs)}

    async def selector_state(self) -> dict[str, Any]:
        return self.svc.selector_state()

    async def save(self) -> dict[str, Any]:
        await self._quiesce()
        return self.svc.save()

    async def close(self) -> None:
        await self._quiesce()
        self.svc.close()

    # ------------------------------------------------------------------ durability
    async def _durable(self) -> None:
        """Return once every record appended so far is on disk, then checkpoint if due."""
        journal = self.svc._journal
        if journal is not None and journal.sync:
            target = journal.appended
            while journal.synced < target:
                if self._flusher is None or self._flusher.done():
                    self._flusher = asyncio.ensure_future(self._fsync())
                await asyncio.shield(self._flusher)
        if self.svc.checkpoint_due():
            await self._quiesce()
            self.svc._checkpoint()  # no await between: no fsync starts meanwhile

    async def _fsync(self) -> None:
        journal = self.svc._journal
        assert journal is not None
        try:
            await asyncio.get_running_loop().run_in_executor(None, journal.commit)
        except BaseException as exc:
            self.svc._failed = exc  # state is ahead of the log: refuse further calls
            raise
        self.fsyncs += 1

    async def _quiesce(self) -> None:
        if self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)
