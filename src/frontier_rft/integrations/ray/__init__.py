"""The selector service on Ray: named actors shared by many rollout workers, one or S shards.

The service itself is transport-free and lives in `frontier_rft.service` (staleness,
leases, checkpoint + write-ahead log, shards, the driver's rounds, the batched client);
this package is the Ray layer over it: `client` starts and connects to a single-actor
service, `sharded_ray` runs the shards as named actors that Ray restarts, and `local`
starts a local Ray robustly. The names below load lazily, so `from
frontier_rft.integrations.ray import ServiceConfig, local_sharded` works where Ray is not
installed; only the Ray entry points (start_*, connect*) need the `ray` extra.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BatchedClient",
    "SelectorService",
    "SelectorSpec",
    "ServiceClient",
    "ServiceConfig",
    "ShardService",
    "ShardedService",
    "connect",
    "connect_sharded",
    "init_local",
    "local_sharded",
    "start_service",
    "start_sharded_service",
]

_HOME = {
    "BatchedClient": "frontier_rft.service",
    "SelectorService": "frontier_rft.service",
    "SelectorSpec": "frontier_rft.service",
    "ServiceConfig": "frontier_rft.service",
    "ShardService": "frontier_rft.service",
    "ShardedService": "frontier_rft.service",
    "local_sharded": "frontier_rft.service",
    "ServiceClient": f"{__name__}.client",
    "connect": f"{__name__}.client",
    "start_service": f"{__name__}.client",
    "connect_sharded": f"{__name__}.sharded_ray",
    "start_sharded_service": f"{__name__}.sharded_ray",
    "init_local": f"{__name__}.local",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
