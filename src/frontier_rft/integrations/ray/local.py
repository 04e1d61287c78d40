"""A local Ray for tests, benchmarks and single-machine runs that survives a busy machine.

`ray.init` waits a fixed 30 s for its raylet to register (not configurable in Ray 2.x);
on a loaded 2-core machine that can run out ("The current node timed out during
startup"). `init_local` starts Ray with generous worker-registration and GCS timeouts,
and on a start-up failure shuts the half-started node down and tries again (3 attempts,
10 s apart by default). Auth off, no dashboard, the temp dir you give it (keep it short:
Ray's AF_UNIX socket paths must stay under ~107 characters). Note that Ray 2.x binds its
own gRPC servers to every interface and maps 127.0.0.1 to the node's address; run it
where those ports are not reachable from outside (frontier-rft opens no server itself).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

__all__ = ["START_ATTEMPTS", "SYSTEM_CONFIG", "init_local"]

START_ATTEMPTS = 3
"""ray.init attempts before giving up."""
SYSTEM_CONFIG = {
    "worker_register_timeout_seconds": 180,  # default 60: worker processes start slowly
    "gcs_rpc_server_reconnect_timeout_s": 120,  # default 60
}
"""Timeouts raised above Ray's defaults (Ray `_system_config`)."""


def init_local(
    temp_dir: str | os.PathLike[str],
    *,
    num_cpus: int = 2,
    attempts: int = START_ATTEMPTS,
    retry_wait_s: float = 10.0,
    **kwargs: Any,
) -> Any:
    """Start (or reuse) a local Ray; returns the `ray` module. Extra kwargs go to ray.init."""
    import ray

    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    Path(temp_dir).mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {
        "num_cpus": num_cpus,
        "include_dashboard": False,
        "log_to_driver": False,
        "_temp_dir": str(Path(temp_dir).resolve()),
        "_system_config": dict(SYSTEM_CONFIG),
        **kwargs,
    }
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**options)
            return ray
        except (ValueError, TypeError):
            raise  # a bad argument: retrying cannot help
        except Exception:  # start-up failures are plain Exceptions in Ray
            ray.shutdown()  # stop the half-started processes before trying again
            if attempt == attempts:
                raise
            time.sleep(retry_wait_s)
    raise AssertionError("unreachable")
