"""Waiting for a named actor to answer, and re-sending a call once it is back.

A service actor's name can be briefly unusable: `ray.kill` is asynchronous, so the name
still belongs to a dying actor, and an actor Ray restarts (`max_restarts`) answers only
once its constructor has resumed from its checkpoint directory. The single-actor client
(`client.py`) and the shards (`sharded_ray.py`) both wait that out here, polling every
`POLL_S` seconds up to a deadline (a `time.monotonic()` value).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

__all__ = ["POLL_S", "get_resending", "wait_for_actor"]

POLL_S = 0.1
"""Seconds between two attempts to reach the actor."""


def wait_for_actor(
    get_handle: Callable[[], Any],
    deadline: float,
    *,
    attempt_s: float | None = None,
    gave_up: str | None = None,
    wait_out_init_failure: bool = True,
) -> Any:
    """The handle `get_handle()` returns, once its actor answers.

    Tried again every POLL_S seconds while `get_handle` finds no actor (ValueError), the
    actor it finds is dead, or it does not answer within `attempt_s` seconds (None: the
    time left, at least 1 s). Past `deadline` it raises TimeoutError(`gave_up`), or the
    last error when `gave_up` is None. With `wait_out_init_failure=False` a constructor
    that failed (RayActorError.actor_init_failed) is raised at once: waiting cannot fix it.
    """
    while True:
        try:
            handle = get_handle()
            timeout = max(deadline - time.monotonic(), 1) if attempt_s is None else attempt_s
            ray.get(handle.__ray_ready__.remote(), timeout=timeout)
            return handle
        except (ValueError, RayActorError, GetTimeoutError) as exc:
            init_failed = isinstance(exc, RayActorError) and exc.actor_init_failed
            if init_failed and not wait_out_init_failure:
                raise
            if time.monotonic() >= deadline:
                if gave_up is None:
                    raise
                raise TimeoutError(gave_up) from None
            time.sleep(POLL_S)


def get_resending(
    send: Callable[[], Any],
    reattach: Callable[[], None],
    deadline: float,
    *,
    retry: bool = True,
    ref: Any = None,
) -> Any:
    """The result of the call `send()` makes (or of `ref`, a call already sent by `send`).

    When the actor dies mid-call (RayActorError) and `retry` is set, `reattach()` waits
    for it to come back and the call is sent again, until `deadline`; a call that is not
    safe to repeat (`retry=False`) raises the error.
    """
    if ref is None:
        ref = send()
    while True:
        try:
            return ray.get(ref)
        except RayActorError:
            if not retry or time.monotonic() >= deadline:
                raise
            reattach()
            ref = send()
