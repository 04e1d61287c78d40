"""One selector shared by many rollout workers, free of any transport (numpy only).

`selector_service.SelectorService` is the service logic: staleness policy, leases
(`leases`), boundary checks (`validation`), checkpoint + write-ahead log (`journal`),
exact resume; `config` holds its settings and `SelectorSpec`, a selector as data that can
cross processes. The sharded service cuts the pool into S slices: `shard.ShardService`
serves one, `shard_async.AsyncShardActor` acknowledges its calls with fsyncs shared
between callers, and `sharded` holds the driver's rounds (`ShardedService`), a rollout
worker's batched client (`BatchedClient`) and in-process shards (`local_sharded`).

A transport puts these objects behind a process boundary; `frontier_rft.integrations.ray`
is the Ray one (named actors, `start_service`, `connect`, `start_sharded_service`,
`connect_sharded`). Tests and single-machine runs drive them in-process.
"""

from frontier_rft.service.config import SelectorSpec, ServiceConfig
from frontier_rft.service.journal import read_log
from frontier_rft.service.selector_service import SelectorService
from frontier_rft.service.shard import ShardService
from frontier_rft.service.shard_async import AsyncShardActor
from frontier_rft.service.sharded import (
    BatchedClient,
    LocalShards,
    Partition,
    ShardedService,
    local_sharded,
)

__all__ = [
    "AsyncShardActor",
    "BatchedClient",
    "LocalShards",
    "Partition",
    "SelectorService",
    "SelectorSpec",
    "ServiceConfig",
    "ShardService",
    "ShardedService",
    "local_sharded",
    "read_log",
]
