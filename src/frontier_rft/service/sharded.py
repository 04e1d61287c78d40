"""A selector service split into S shards: the driver's rounds and the workers' batched client.

The pool is cut into S contiguous ranges of task ids (`Partition`); shard s runs a
ShardService over its range (`shard.py`), with its own checkpoint + write-ahead log. The
transport is a `Shards` object: `LocalShards` (in-process, for tests and one machine)
or `RayShards` (`frontier_rft.integrations.ray.sharded_ray`, one named actor per shard).

`ShardedService.select(n)` is one numbered round:

- BOTS family (bots, mopps, dots; whole pool or candidate mode): `prepare` on every
  shard, the Coordinator's fold plan over the union (bots.shard), `propose` on every
  shard (fold, then its n best (score, key, id)), the n best of the union, `commit` of
  the kept ids. The posteriors are those of one selector fed the same rounds; the
  selection has one selector's law (bots.shard's docstring).
- Every other selector: n is split across shards by a multivariate hypergeometric draw
  over shard sizes and each shard runs its own select (`select_split`): exact for
  uniform sampling; for prioritized replay, SEC, PCL, METIS, ... each shard is its own
  instance of the method on its slice (docs/scaling.md says what that means per method).

`BatchedClient` is a rollout worker's side: it buffers reported groups and sends them
every `flush_groups` groups (or when the step changes) as one `update_many` per shard:
one call and one fsync per shard per flush (group commit). Retries after a shard
restart are safe with idempotent delivery (duplicates of a (step, task) are dropped).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import I64
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.bots.config import BOTSConfig
from frontier_rft.selectors.bots.shard import Coordinator
from frontier_rft.selectors.registry import SELECTORS, make_selector
from frontier_rft.service.config import ServiceConfig
from frontier_rft.service.shard import ShardService
from frontier_rft.service.validation import check_feedback, check_integer, check_jump

__all__ = [
    "BatchedClient",
    "LocalShards",
    "Partition",
    "ShardedService",
    "Shards",
    "local_sharded",
    "shard_config",
    "shard_selectors",
    "slice_pool",
]

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Partition:
    """Task ids [bounds[s], bounds[s + 1]) belong to shard s."""

    bounds: tuple[int, ...]

    @classmethod
    def even(cls, num_tasks: int, shards: int) -> Partition:
        if not 1 <= shards <= num_tasks:
            raise ValueError(f"shards must be in [1, {num_tasks}] (the pool size), got {shards}")
        return cls(tuple(int(b) for b in np.linspace(0, num_tasks, shards + 1).round()))

    @property
    def num_shards(self) -> int:
        return len(self.bounds) - 1

    @property
    def sizes(self) -> I64:
        sizes: I64 = np.diff(np.asarray(self.bounds, dtype=np.int64)).astype(np.int64)
        return sizes

    def shard_of(self, ids: I64) -> I64:
        return np.searchsorted(np.asarray(self.bounds[1:]), ids, side="right").astype(np.int64)


def slice_pool(pool: TaskPool, lo: int, hi: int) -> TaskPool:
    """The tasks [lo, hi) of `pool` as a pool of their own (local ids 0 .. hi - lo - 1)."""
    kwargs: dict[str, Any] = {"num_tasks": hi - lo}
    for name in ("categories", "difficulty", "features", "reference_pass_rates", "prompts", "keys"):
        value = getattr(pool, name)
        if value is not None:
            kwargs[name] = value[lo:hi]
    return TaskPool(**kwargs)


def shard_selectors(
    name: str, pool: TaskPool, num_shards: int, seed: int = 0, **config: Any
) -> tuple[Partition, list[Selector]]:
    """The partition of `pool` and one selector per shard (seeds spawned from `seed`)."""
    if name not in SELECTORS:
        raise ValueError(f"unknown selector {name!r}; known: {', '.join(sorted(SELECTORS))}")
    part = Partition.even(pool.num_tasks, num_shards)
    seeds = np.random.SeedSequence(seed).generate_state(num_shards)
    selectors = [
        make_selector(name, slice_pool(pool, lo, hi), seed=int(sd), **config)
        for lo, hi, sd in zip(part.bounds[:-1], part.bounds[1:], seeds, strict=True)
    ]
    return part, selectors


def local_sharded(
    name: str,
    pool: TaskPool,
    num_shards: int,
    config: ServiceConfig | None = None,
    *,
    seed: int = 0,
    **selector_config: Any,
) -> ShardedService:
    """A sharded service in this process (each shard in `config.checkpoint_dir/shard-s`)."""
    part, selectors = shard_selectors(name, pool, num_shards, seed, **selector_config)
    services = [
        ShardService(sel, shard_config(config, s), shard=s, bounds=part.bounds)
        for s, sel in enumerate(selectors)
    ]
    return ShardedService(LocalShards(services), seed=seed)


def shard_config(config: ServiceConfig | None, shard: int) -> ServiceConfig:
    """Shard `shard`'s copy of `config`: its own checkpoint directory."""
    config = config or ServiceConfig()
    if config.checkpoint_dir is None:
        return config
    return dataclasses.replace(config, checkpoint_dir=f"{config.checkpoint_dir}/shard-{shard:04d}")


class Shards(Protocol):
    """Calls to the S shard services; results in shard order. `args` None skips a shard."""

    num_shards: int

    def call(
        self, method: str, args: list[tuple[Any, ...] | None], retry: bool = True
    ) -> list[Any]:
        """Call `method` on every shard with its args (in parallel where possible)."""
        ...


class LocalShards:
    """Shard services in this process (tests, a single machine without Ray)."""

    def __init__(self, services: list[ShardService]):
        self.services = services
        self.num_shards = len(services)

    def call(
        self, method: str, args: list[tuple[Any, ...] | None], retry: bool = True
    ) -> list[Any]:
        return [
            None if a is None else getattr(svc, method)(*a)
            for svc, a in zip(self.services, args, strict=True)
        ]


class ShardedService:
    """The driver: numbered selection rounds over the shards (see the module docstring)."""

    def __init__(self, shards: Shards, seed: int = 0):
        self.shards = shards
        info = shards.call("info", [()] * shards.num_shards)
        self.partition = Partition(tuple(info[0]["bounds"]))
        self.info = info[0]
        self.rng = np.random.default_rng(seed)  # candidate and batch splits only
        self._coord: Coordinator | None = None
        self._known_version: int | None = None  # BatchedClient.known_version, kept
        # Newest policy version of any shard as last known (a lower bound: versions only grow).
        self._newest = max(int(i.get("policy_version", -1)) for i in info)
        self._round = self._recover([i["round"] for i in info])

    @property
    def num_tasks(self) -> int:
        return int(self.partition.bounds[-1])

    def select(self, n: int, policy_version: int | None = None) -> I64:
        """n distinct task ids (global) for the next rollouts; one round over all shards."""
        if (
            isinstance(n, bool)
            or not isinstance(n, int | np.integer)
            or not 0 <= n <= self.num_tasks
        ):
            raise ValueError(f"n must be an int in [0, {self.num_tasks}], got {n!r}")
        version = check_integer(policy_version, "policy_version", optional=True)
        self._check_jump(version)
        if self.info["coordinated"]:
            ids = self._merge_round(int(n), version)
        else:
            ids = self._split_round(int(n), version)
        if version is not None:  # every shard has it now (it judges staleness against it)
            self._newest = max(self._newest, version)
        return ids

    def _check_jump(self, version: int | None) -> None:
        """Refuse a version too far ahead of the newest any shard has seen, as the single
        service does, before any shard changes; asks the shards only when the driver's
        lower bound would refuse it."""
        limit = self.info.get("max_version_jump")
        if version is None or limit is None or version - max(self._newest, 0) <= limit:
            return
        info = self.shards.call("info", [()] * self.partition.num_shards)
        self._newest = max(self._newest, *(int(i.get("policy_version", -1)) for i in info))
        check_jump(version, self._newest, limit, "policy_version")

    def flush(self) -> None:
        """Fold everything the shards hold into their selectors (a round selecting nothing)."""
        self.select(0)

    def update(self, feedback: Feedback, *, idempotent: bool = True) -> int:
        """Route one Feedback to its shards (workers use BatchedClient); returns rollouts acked."""
        bounds = self.info["reward_bounds"]
        client = BatchedClient(
            self.shards,
            self.partition,
            idempotent=idempotent,
            reward_bounds=None if bounds is None else (bounds[0], bounds[1]),
            max_version_jump=self.info.get("max_version_jump"),
        )
        client.known_version = self._known_version
        client.report(feedback)
        acked = client.flush()
        self._known_version = client.known_version
        return acked

    def metrics(self) -> dict[str, float]:
        """Per-shard metrics summed (counters) under the same keys, plus `sharded/...`."""
        per = self.shards.call("metrics", [()] * self.partition.num_shards)
        out: dict[str, float] = {}
        for m in per:
            for k, v in m.items():
                if k.startswith(("service/", "feedback/rollouts", "feedback/groups")):
                    out[k] = out.get(k, 0.0) + float(v)
        out["sharded/shards"] = float(self.partition.num_shards)
        out["sharded/round"] = float(self._round)
        return out

    # ------------------------------------------------------------------ rounds
    def _merge_round(self, n: int, version: int | None) -> I64:
        r, shards = self._round + 1, self.partition.num_shards
        prep = self.shards.call("prepare", [()] * shards)
        coord = copy.deepcopy(self._coord)  # committed only once every shard has the round
        assert coord is not None
        plan = [p.to_state() for p in coord.plan([p["summary"] for p in prep])]
        cuts = [int(p["cut"]) for p in prep]
        cands: list[int | None] = [None] * shards
        if self.info["candidates"] and n > 0:
            c = min(max(int(self.info["candidates"]), n), self.num_tasks)
            cands = [int(x) for x in self.rng.multivariate_hypergeometric(self.partition.sizes, c)]
        args: list[tuple[Any, ...] | None] = [
            (r, plan, cuts, n, cands[s], version) for s in range(shards)
        ]
        replies = self.shards.call("propose", args)
        self._coord, self._round = coord, r
        offsets = np.asarray(self.partition.bounds[:-1], dtype=np.int64)
        ids = np.concatenate(
            [np.asarray(rep["ids"], np.int64) + offsets[s] for s, rep in enumerate(replies)]
        )
        scores = np.concatenate([np.asarray(rep["scores"], np.float64) for rep in replies])
        keys = np.concatenate([np.asarray(rep["keys"], np.float64) for rep in replies])
        chosen = ids[np.lexsort((keys, scores))[:n]]
        if n > 0:
            owner = self.partition.shard_of(chosen)
            commits: list[tuple[Any, ...] | None] = [
                (r, (chosen[owner == s] - offsets[s]).tolist()) for s in range(shards)
            ]
            self.shards.call("commit", commits, retry=False)
        return chosen

    def _split_round(self, n: int, version: int | None) -> I64:
        r, shards = self._round + 1, self.partition.num_shards
        counts = self.rng.multivariate_hypergeometric(self.partition.sizes, n)
        args: list[tuple[Any, ...] | None] = [
            (r, -1, int(counts[s]), version) for s in range(shards)
        ]
        got = self.shards.call("select_split", args)
        self._round = r
        offsets = self.partition.bounds
        return np.concatenate(
            [np.asarray(ids, np.int64) + offsets[s] for s, ids in enumerate(got)]
        ).astype(np.int64)

    def _recover(self, rounds: list[int]) -> int:
        """Bring shards a round behind (the previous driver died mid-round) level."""
        top = max(rounds)
        if min(rounds) < top - 1:
            raise RuntimeError(f"shards are more than one round apart: {rounds}")
        if self.info["coordinated"]:
            states = self.shards.call("coordinator_state", [()] * len(rounds))
            ahead = states[rounds.index(top)]
            reply = ahead["reply"]
            laggards: list[tuple[Any, ...] | None] = [
                (top, reply["plan"], reply["cuts"], 0, None, reply.get("v")) if r < top else None
                for r in rounds
            ]
            if any(a is not None for a in laggards):
                self.shards.call("propose", laggards)
            cfg = config_from_dict(SELECTORS[self.info["selector"]].config_class, ahead["config"])
            assert isinstance(cfg, BOTSConfig)
            self._coord = Coordinator(cfg, ahead["plugin"], ahead["gaussian"], ahead)
        else:
            laggards = [(top, -1, 0, None) if r < top else None for r in rounds]
            if any(a is not None for a in laggards):
                self.shards.call("select_split", laggards)
        return top


class BatchedClient:
    """A rollout worker's buffer: groups go out every `flush_groups` groups or new step."""

    def __init__(
        self,
        shards: Shards,
        partition: Partition,
        *,
        flush_groups: int = 64,
        flush_on_step: bool = True,
        idempotent: bool = True,
        reward_bounds: tuple[float, float] | None = None,
        max_version_jump: int | None = None,
    ):
        if isinstance(flush_groups, bool) or not isinstance(flush_groups, int) or flush_groups < 1:
            raise ValueError(f"flush_groups must be a positive int, got {flush_groups!r}")
        self.shards, self.partition = shards, partition
        self.reward_bounds = reward_bounds
        self.max_version_jump = max_version_jump
        self.known_version: int | None = None
        """Lowest policy version of any shard when last asked (None: not yet); versions only
        grow, so a buffer within max_version_jump of it passes every shard's jump check."""
        self.flush_groups, self.flush_on_step = flush_groups, flush_on_step
        self.idempotent = idempotent
        self._buffer: list[tuple[I64, NDArray[np.float64], int, int | None]] = []
        self._groups = 0
        self._buffered: dict[int, I64] = {}  # step -> sorted task ids in the buffer
        self.acked_rollouts = 0
        """Rollouts acknowledged (durable at their shards) so far."""
        self.flushes = 0

    @property
    def buffered_groups(self) -> int:
        return self._groups

    def report(self, feedback: Feedback) -> int:
        """Buffer one Feedback; returns the rollouts acknowledged by a flush it triggered.

        Checked now, before buffering: a bad one, or a policy version a shard would refuse
        (more than max_version_jump ahead), raises here, as the single service's update
        does. A report that raises leaves the buffer as it was (a flush it triggered that
        failed keeps the earlier groups for a retry, not this one), so retrying it counts
        it once. With idempotent delivery, groups of a (step, task) already in the buffer
        are dropped, as the shards drop those already delivered.
        """
        n = self.partition.bounds[-1]
        ids, rewards, step, version = check_feedback(feedback, n, self.reward_bounds)
        self._check_versions([[fb] for fb in self._route(ids, rewards, step, version)])
        acked = 0
        if self.flush_on_step and self._buffer and step != self._buffer[-1][2]:
            acked = self.flush()
        tasks = np.unique(ids)
        if self.idempotent:
            seen = self._buffered.get(step, _EMPTY)
            dup = np.isin(tasks, seen)
            if dup.any():
                keep = ~np.isin(ids, tasks[dup])
                ids, rewards, tasks = ids[keep], rewards[keep], tasks[~dup]
                if ids.shape[0] == 0:
                    return acked
        self._buffer.append((ids, rewards, step, version))
        self._groups += int(tasks.shape[0])
        before = self._buffered.get(step)
        self._buffered[step] = np.union1d(_EMPTY if before is None else before, tasks)
        if self._groups >= self.flush_groups:
            try:
                acked += self.flush()
            except BaseException:  # undo this report: its retry must not count it twice
                self._buffer.pop()
                self._groups -= int(tasks.shape[0])
                if before is None:
                    del self._buffered[step]
                else:
                    self._buffered[step] = before
                raise
        return acked

    def _route(
        self, ids: I64, rewards: NDArray[np.float64], step: int, version: int | None
    ) -> list[Feedback | None]:
        """One Feedback per shard (local ids), None for shards it does not reach."""
        owner = self.partition.shard_of(ids)
        offsets = self.partition.bounds
        return [
            Feedback(ids[owner == s] - offsets[s], rewards[owner == s], step, version)
            if np.any(owner == s)
            else None
            for s in range(self.partition.num_shards)
        ]

    def flush(self) -> int:
        """Send the buffer: one update_many per shard, all shards in parallel; returns the
        rollouts acknowledged. On error the buffer is kept, so flush can be retried."""
        if not self._buffer:
            return 0
        shards = self.partition.num_shards
        per: list[list[Feedback]] = [[] for _ in range(shards)]
        offsets = self.partition.bounds
        for (step, version), (ids, rewards) in _merge_by_step(self._buffer).items():
            owner = self.partition.shard_of(ids)
            for s in np.unique(owner):
                m = owner == s
                per[s].append(Feedback(ids[m] - offsets[s], rewards[m], step, version))
        # Every piece passed every shard's version check when it was reported (versions
        # only grow), so no shard refuses part of this call for its versions.
        args: list[tuple[Any, ...] | None] = [
            (fbs, self.idempotent) if fbs else None for fbs in per
        ]
        acks = self.shards.call("update_many", args, retry=self.idempotent)
        acked = sum(
            int(a["accepted"] + a["dropped"] + a["thinned"] + a.get("duplicates", 0))
            for ack in acks
            if ack
            for a in ack
        )
        self._buffer, self._groups, self._buffered = [], 0, {}
        self.acked_rollouts += acked
        self.flushes += 1
        return acked

    def _check_versions(self, per: list[list[Feedback | None]]) -> None:
        """Ask every shard when one might refuse a report's policy version (more than
        max_version_jump ahead of its newest); raises ValueError as that shard would."""
        if self.max_version_jump is None:
            return
        versions = [fb.policy_version for fbs in per for fb in fbs if fb is not None]
        newest = max((int(v) for v in versions if v is not None), default=None)
        known = self.known_version
        if newest is None or (known is not None and newest <= known + self.max_version_jump):
            return
        replies = self.shards.call(
            "check_many", [([fb for fb in fbs if fb is not None],) for fbs in per], retry=True
        )
        self.known_version = min(int(v) for v in replies)


def _merge_by_step(
    buffer: list[tuple[I64, NDArray[np.float64], int, int | None]],
) -> dict[tuple[int, int | None], tuple[I64, NDArray[np.float64]]]:
    """One (ids, rewards) per (step, version): fewer, larger log records."""
    grouped: dict[tuple[int, int | None], list[tuple[I64, NDArray[np.float64]]]] = {}
    for ids, rewards, step, version in buffer:
        grouped.setdefault((step, version), []).append((ids, rewards))
    return {
        key: (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        for key, parts in grouped.items()
    }
