"""One selector behind a named Ray actor, shared by many rollout workers.

`client` starts and connects to the actor (needs the `ray` extra); `service` holds the
service logic (staleness, leases, checkpoint + write-ahead log) and runs without Ray;
`config` its settings; `journal` the write-ahead log. The names below load lazily, so
`frontier_rft.integrations.ray.service` can be used where Ray is not installed.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "SelectorService",
    "SelectorSpec",
    "ServiceClient",
    "ServiceConfig",
    "connect",
    "start_service",
]

_HOME = {
    "SelectorService": "service",
    "SelectorSpec": "config",
    "ServiceConfig": "config",
    "ServiceClient": "client",
    "connect": "client",
    "start_service": "client",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
