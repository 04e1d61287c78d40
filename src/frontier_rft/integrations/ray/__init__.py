"""The selector service on Ray: named actors shared by many rollout workers, one or S shards.

The service itself is transport-free and lives in `frontier_rft.service` (staleness,
leases, checkpoint + write-ahead log, shards, the driver's rounds, the batched client);
this package is the Ray layer over it: `client` starts and connects to a single-actor
service, `sharded_ray` runs the shards as named actors that Ray restarts, and `local`
starts a local Ray robustly. The service's names are re-exported here, and the Ray entry
points (start_*, connect*, init_local, ServiceClient) load on first use, so `from
frontier_rft.integrations.ray import ServiceConfig, local_sharded` works where Ray is not
installed; only the entry points need the `ray` extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The transport-free service needs no Ray: its names are plain imports.
from frontier_rft.service import (
    BatchedClient,
    SelectorService,
    SelectorSpec,
    ServiceConfig,
    ShardedService,
    ShardService,
    local_sharded,
)

if TYPE_CHECKING:
    from frontier_rft.integrations.ray.client import ServiceClient, connect, start_service
    from frontier_rft.integrations.ray.local import init_local
    from frontier_rft.integrations.ray.sharded_ray import connect_sharded, start_sharded_service

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

_RAY_HOME = {
    "ServiceClient": "client",
    "connect": "client",
    "start_service": "client",
    "connect_sharded": "sharded_ray",
    "start_sharded_service": "sharded_ray",
    "init_local": "local",
}
"""The Ray entry points, by submodule: imported (with Ray) on first use."""


def __getattr__(name: str) -> Any:
    if name not in _RAY_HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_RAY_HOME[name]}"), name)
