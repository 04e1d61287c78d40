"""A local Ray for tests, benchmarks and single-machine runs that survives a busy machine.

`ray.init` waits a fixed 30 s for its raylet to register (a constant inside Ray 2.x's
`Node`, no setting); on a loaded 2-core machine that can run out ("The current node timed
out during startup"). `init_local` gives that wait a start-up timeout of its own
(`start_timeout_s`, 180 s by default) by retrying Ray's node lookup until then, raises the
worker-registration and GCS timeouts, and on a start-up failure stops the processes the
failed attempt started (Ray leaves them running: its half-built node is never returned
to `ray.shutdown`) before it tries again (3 attempts, 10 s apart by default). Auth off, no
dashboard, the temp dir you give it (keep it short: Ray's AF_UNIX socket paths must stay
under ~107 characters). Note that Ray 2.x binds its own gRPC servers to every interface
and maps 127.0.0.1 to the node's address; run it where those ports are not reachable from
outside (frontier-rft opens no server itself).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

__all__ = ["START_ATTEMPTS", "START_TIMEOUT_S", "SYSTEM_CONFIG", "init_local"]

START_ATTEMPTS = 3
"""ray.init attempts before giving up."""
START_TIMEOUT_S = 180.0
"""How long one attempt waits for the node to register (Ray's own wait: a fixed 30 s)."""
SYSTEM_CONFIG = {
    "worker_register_timeout_seconds": 180,  # default 60: worker processes start slowly
    "gcs_rpc_server_reconnect_timeout_s": 120,  # default 60
}
"""Timeouts raised above Ray's defaults (Ray `_system_config`)."""
_STOP_WAIT_S = 10.0
"""How long a failed attempt's processes get to exit after SIGTERM before SIGKILL."""


def init_local(
    temp_dir: str | os.PathLike[str],
    *,
    num_cpus: int = 2,
    attempts: int = START_ATTEMPTS,
    retry_wait_s: float = 10.0,
    start_timeout_s: float = START_TIMEOUT_S,
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
        before = _child_pids()
        try:
            with _node_wait(start_timeout_s):
                ray.init(**options)
            return ray
        except (ValueError, TypeError):
            raise  # a bad argument: retrying cannot help
        except Exception:  # start-up failures are plain Exceptions in Ray
            ray.shutdown()  # a node that got as far as ray.init's globals
            _stop_new_children(before)  # the rest: processes the half-built node started
            if attempt == attempts:
                raise
            time.sleep(retry_wait_s)
    raise AssertionError("unreachable")


@contextmanager
def _node_wait(timeout_s: float) -> Iterator[None]:
    """During ray.init, Ray's node lookup (`ray._private.services.get_node`, which raises
    RuntimeError until the raylet has registered) retries until `timeout_s` has passed,
    so the start-up wait is `timeout_s` instead of Ray's fixed 30 s. Where this Ray has no
    such function, nothing changes (tests/integration/test_ray_local.py checks that the
    installed Ray still calls it)."""
    import ray._private.services as services

    original: Callable[..., Any] | None = getattr(services, "get_node", None)
    if original is None:
        yield
        return
    deadline = time.monotonic() + timeout_s

    @functools.wraps(original)
    def patient(*args: Any, **kwargs: Any) -> Any:
        while True:
            try:
                return original(*args, **kwargs)
            except RuntimeError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    services.get_node = patient
    try:
        yield
    finally:
        services.get_node = original


def _child_pids() -> set[int]:
    """Ids of this process's descendants now (psutil ships inside Ray)."""
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)}


def _stop_new_children(before: set[int]) -> None:
    """Terminate the descendants this process gained since `before` (a failed attempt's
    GCS, raylet, agents and their workers), by id; SIGKILL what outlives the wait."""
    import psutil

    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    for proc in new:
        with suppress(psutil.NoSuchProcess):  # it may have exited by itself meanwhile
            proc.terminate()
    _, alive = psutil.wait_procs(new, timeout=_STOP_WAIT_S)
    for proc in alive:
        with suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=_STOP_WAIT_S)
