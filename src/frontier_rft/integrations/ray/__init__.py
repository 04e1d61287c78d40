"""Selectors behind Ray actors, shared by many rollout workers: one actor, or S shards.

`client` starts and connects to a single-actor service (needs the `ray` extra);
`service` holds the service logic (staleness, leases, checkpoint + write-ahead log,
boundary checks in `validation`, leases in `leases`) and runs without Ray; `config` its
settings; `journal` the write-ahead log. The sharded service: `shard` (one shard),
`sharded` (the driver's rounds, the batched worker client, in-process shards),
`sharded_ray` (shards as Ray actors); `local` starts a local Ray robustly. The names
below load lazily, so the Ray-free modules work where Ray is not installed.
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
    "BatchedClient": "sharded",
    "SelectorService": "service",
    "SelectorSpec": "config",
    "ServiceConfig": "config",
    "ServiceClient": "client",
    "ShardService": "shard",
    "ShardedService": "sharded",
    "connect": "client",
    "connect_sharded": "sharded_ray",
    "init_local": "local",
    "local_sharded": "sharded",
    "start_service": "client",
    "start_sharded_service": "sharded_ray",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
