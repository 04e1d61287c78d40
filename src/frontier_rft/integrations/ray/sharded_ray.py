"""The sharded selector service on Ray: one named actor per shard, restarted by Ray.

    from frontier_rft.integrations.ray import start_sharded_service, connect_sharded
    driver = start_sharded_service("sel", "bots", pool, num_shards=4,
                                   config=ServiceConfig(checkpoint_dir="/shared/sel"),
                                   candidates=4096)
    ids = driver.select(256)                       # the trainer, once per step
    client = connect_sharded("sel")                # in every rollout worker
    client.report(Feedback(task_ids, rewards, step=t, policy_version=v))   # buffered
    client.flush()                                 # at the end of a worker's step

Shard s is the actor `<name>.shard<s>` running ShardService behind an async actor
(AsyncShardActor: concurrent workers' flushes share fsyncs), with `max_restarts=-1` by
default: when it dies, Ray starts it again and its constructor resumes from its
directory (`<checkpoint_dir>/shard-<s>`: checkpoint + write-ahead log). Calls that fail
because the actor died are re-sent once it is back (up to `reconnect_timeout_s`); that is
safe because rounds are numbered and updates are idempotent by (step, task). A
non-idempotent client's update is never re-sent (it may or may not have been applied).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

import ray

from frontier_rft.core.pool import TaskPool
from frontier_rft.integrations.ray.actor_wait import get_resending, wait_for_actor
from frontier_rft.service.config import SelectorSpec, ServiceConfig
from frontier_rft.service.shard_async import AsyncShardActor
from frontier_rft.service.sharded import (
    BatchedClient,
    Partition,
    ShardedService,
    shard_config,
    shard_selectors,
)

__all__ = ["RayShards", "connect_sharded", "shard_name", "start_sharded_service"]


class RayShardActor(AsyncShardActor):
    """The shard actor. Its selector arrives boxed (`[ObjectRef]`), so Ray does not have to
    fetch it again when it restarts the actor: a restart resumes from the checkpoint
    directory, and a large constructor argument may be gone from the object store by then
    (Ray issue 53727)."""

    def __init__(self, box: list[Any], config: ServiceConfig, **kwargs: Any):
        resume = (
            config.checkpoint_dir is not None and (Path(config.checkpoint_dir) / "CURRENT").exists()
        )
        spec: SelectorSpec | None = None
        try:
            spec = ray.get(box[0], timeout=30)
        except Exception:
            if not resume:
                raise
        super().__init__(spec, config, **kwargs)


def shard_name(name: str, shard: int) -> str:
    """Ray actor name of shard `shard` of the sharded service `name`."""
    return f"{name}.shard{shard}"


class RayShards:
    """The shards as named Ray actors; calls go out in parallel and are re-sent after a
    shard restarts (when `retry`)."""

    def __init__(
        self,
        name: str,
        num_shards: int,
        *,
        namespace: str | None = None,
        reconnect_timeout_s: float = 120.0,
        owned: list[Any] | None = None,
    ):
        self.name, self.namespace = name, namespace
        self.num_shards = num_shards
        self.reconnect_timeout_s = reconnect_timeout_s
        self.handles = (
            list(owned)
            if owned
            else [ray.get_actor(shard_name(name, s), namespace) for s in range(num_shards)]
        )
        # Handles that created non-detached actors own them: Ray ends an actor once its
        # owner's handle is gone, so these are kept even after re-attaching by name.
        self._owned = list(owned) if owned else None
        self.resends = 0
        """Calls re-sent to a restarted shard."""
        self.spec_refs: list[Any] = []  # the shards' initial selectors, kept alive

    def call(
        self, method: str, args: list[tuple[Any, ...] | None], retry: bool = True
    ) -> list[Any]:
        refs = {
            s: getattr(self.handles[s], method).remote(*a)
            for s, a in enumerate(args)
            if a is not None
        }
        out: list[Any] = [None] * self.num_shards
        deadline = time.monotonic() + self.reconnect_timeout_s
        for s, ref in refs.items():
            out[s] = get_resending(
                partial(self._resend, s, method, args[s]),
                partial(self._wait_alive, s, deadline),
                deadline,
                retry=retry,
                ref=ref,
            )
        return out

    def _resend(self, s: int, method: str, args: tuple[Any, ...] | None) -> Any:
        assert args is not None
        self.resends += 1
        return getattr(self.handles[s], method).remote(*args)

    def _wait_alive(self, s: int, deadline: float) -> None:
        self.handles[s] = wait_for_actor(
            lambda: ray.get_actor(shard_name(self.name, s), self.namespace),
            deadline,
            attempt_s=5,
            gave_up=f"shard {s} of {self.name!r} did not come back within "
            f"{self.reconnect_timeout_s} s",
        )


def start_sharded_service(
    name: str,
    selector: str,
    pool: TaskPool,
    num_shards: int,
    config: ServiceConfig | None = None,
    *,
    seed: int = 0,
    namespace: str | None = None,
    max_restarts: int = -1,
    detached: bool = False,
    timeout_s: float = 120.0,
    **selector_config: Any,
) -> ShardedService:
    """Start (or attach to) the shard actors of `name` and return the driver.

    Each shard gets its slice of `pool` and `make_selector(selector, slice, seed=...,
    **selector_config)`; shards with a checkpoint in their directory resume from it
    instead. Keep the returned driver referenced (it owns non-detached actors).
    """
    part, selectors = shard_selectors(selector, pool, num_shards, seed, **selector_config)
    actor_cls = ray.remote(RayShardActor)
    handles: list[Any] = []
    refs: list[Any] = []
    for s, sel in enumerate(selectors):
        options: dict[str, Any] = {
            "name": shard_name(name, s),
            "namespace": namespace,
            "get_if_exists": True,
            "max_restarts": max_restarts,
            "num_cpus": 0,
        }
        if detached:
            options["lifetime"] = "detached"
        ref = ray.put(SelectorSpec.of(sel))
        refs.append(ref)  # held by the driver while the shards may need it
        handles.append(
            actor_cls.options(**options).remote(
                [ref], shard_config(config, s), shard=s, bounds=part.bounds
            )
        )
    ray.get([h.__ray_ready__.remote() for h in handles], timeout=timeout_s)
    shards = RayShards(name, num_shards, namespace=namespace, owned=handles)
    shards.spec_refs = refs
    return ShardedService(shards, seed=seed)


def connect_sharded(
    name: str,
    *,
    namespace: str | None = None,
    flush_groups: int = 64,
    flush_on_step: bool = True,
    idempotent: bool = True,
    reconnect_timeout_s: float = 120.0,
) -> BatchedClient:
    """A rollout worker's batched client of the running sharded service `name`."""
    first = ray.get_actor(shard_name(name, 0), namespace)
    info = ray.get(first.info.remote())
    part = Partition(tuple(info["bounds"]))
    shards = RayShards(
        name, part.num_shards, namespace=namespace, reconnect_timeout_s=reconnect_timeout_s
    )
    bounds = info["reward_bounds"]
    return BatchedClient(
        shards,
        part,
        flush_groups=flush_groups,
        flush_on_step=flush_on_step,
        idempotent=idempotent,
        reward_bounds=None if bounds is None else (bounds[0], bounds[1]),
        max_version_jump=info.get("max_version_jump"),
    )
