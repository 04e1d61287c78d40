"""One selector behind a named Ray actor, shared by many rollout workers.

The actor is `ray.remote(SelectorService)`: all service logic (staleness, leases,
checkpoint + write-ahead log) lives in `frontier_rft.service` and runs the same without Ray.
Ray runs one actor method at a time, in arrival order, so the service needs no locks.

    from frontier_rft.integrations.ray import start_service, connect
    start_service("selector", make_selector("bots", pool), ServiceConfig(checkpoint_dir=...))
    client = connect("selector")                      # in any worker of the same cluster
    ids = client.select(8, policy_version=v)
    client.update(Feedback(np.repeat(ids, 4), rewards, step=t, policy_version=v))

Inside this package `import ray` is absolute, so it names the Ray package.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import ray
from numpy.typing import NDArray
from ray.exceptions import RayActorError

from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.ray.actor_wait import POLL_S, get_resending, wait_for_actor
from frontier_rft.service.config import SelectorSpec, ServiceConfig
from frontier_rft.service.selector_service import SelectorService

__all__ = [
    "SelectorService",
    "SelectorSpec",
    "ServiceClient",
    "ServiceConfig",
    "connect",
    "start_service",
]


def start_service(
    name: str,
    selector: Selector | SelectorSpec,
    config: ServiceConfig | None = None,
    *,
    namespace: str | None = None,
    collaborators: Mapping[str, Any] | None = None,
    detached: bool = False,
    max_restarts: int = 0,
    num_cpus: float = 0,
    timeout_s: float = 60.0,
) -> ServiceClient:
    """Start the named service actor (or attach to the live one) and wait until it is up.

    The selector travels to the actor as a SelectorSpec (its state_dict), with
    `collaborators` (default: its own judge/estimator). With a `checkpoint_dir` that holds
    a checkpoint, the actor resumes from it and `selector` is only checked to match.
    `detached=True` keeps the actor alive after this driver exits; `max_restarts > 0`
    lets Ray restart a crashed actor, which then resumes from the same directory.
    `num_cpus=0` keeps the actor off the CPU budget of the rollout workers (it mostly
    waits).
    """
    spec = (
        selector if isinstance(selector, SelectorSpec) else SelectorSpec.of(selector, collaborators)
    )
    actor_cls = ray.remote(SelectorService)
    options: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "get_if_exists": True,
        "max_restarts": max_restarts,
        "num_cpus": num_cpus,
    }
    if detached:
        options["lifetime"] = "detached"
    deadline = time.monotonic() + timeout_s
    created: list[Any] = []

    def create() -> Any:
        created.append(actor_cls.options(**options).remote(spec, config))
        return created[-1]

    for attempt in range(2):
        try:
            # Waits out a name that still belongs to a dying actor (ray.kill is asynchronous).
            handle = wait_for_actor(create, deadline, wait_out_init_failure=False)
            break
        except RayActorError as exc:
            if not exc.actor_init_failed:
                raise  # still dying or not answering at the deadline
            if attempt == 1:
                # This call's own constructor error (e.g. a mismatching checkpoint_dir).
                raise _constructor_error(exc) from None
            # The name may still hold an actor whose constructor failed for an earlier call
            # (get_if_exists hands it back): free the name and build once more.
            ray.kill(created[-1], no_restart=True)
            time.sleep(POLL_S)
    _check_identity(name, handle, spec, config or ServiceConfig(), deadline)
    return ServiceClient(name, namespace=namespace, handle=handle)


def _constructor_error(exc: RayActorError) -> Exception:
    """The service constructor's own ValueError (as documented), else Ray's error."""
    cause = getattr(exc, "cause", None)
    for err in (cause, getattr(cause, "cause", None)):
        if isinstance(err, ValueError):
            return ValueError(str(err))
    text = str(exc)
    marker = "ValueError: "
    if marker in text:
        return ValueError(text[text.rindex(marker) + len(marker) :].strip().splitlines()[0])
    return exc


def _check_identity(
    name: str, handle: Any, spec: SelectorSpec, config: ServiceConfig, deadline: float
) -> None:
    """A live service of that name must be the one asked for (get_if_exists attaches to it)."""
    live = ray.get(handle.identity.remote(), timeout=max(deadline - time.monotonic(), 1))
    asked = {
        "selector": spec.name,
        "config": spec.state.get("config"),
        "pool": spec.pool.fingerprint,
        "service": dataclasses.asdict(config),
    }
    differ = [key for key in ("selector", "config", "pool", "service") if live[key] != asked[key]]
    if differ:
        what = {"selector": "selector", "config": "selector config", "pool": "TaskPool",
                "service": "ServiceConfig"}  # fmt: skip
        raise ValueError(
            f"a service named {name!r} is already running with another "
            f"{' and '.join(what[k] for k in differ)} (it runs {live['selector']!r}); use "
            f"connect({name!r}) to share it, or close it or choose another name"
        )


def connect(
    name: str, *, namespace: str | None = None, reconnect_timeout_s: float = 60.0
) -> ServiceClient:
    """A client of the live service actor called `name` (raises ValueError if there is none)."""
    return ServiceClient(name, namespace=namespace, reconnect_timeout_s=reconnect_timeout_s)


class ServiceClient:
    """Blocking calls to the service actor; survives a restart of the actor.

    The client returned by start_service owns a non-detached actor: keep it for as long
    as the service should live (or start it with detached=True).

    When the actor dies mid-call the client waits (up to `reconnect_timeout_s`) for a
    live actor of the same name and retries calls that are safe to repeat: select (its
    leases expire), idempotent updates (duplicates are dropped), flush, versions, save
    and metrics. A non-idempotent update is never retried: its error is raised, since
    the update may or may not have been applied.
    """

    def __init__(
        self,
        name: str,
        *,
        namespace: str | None = None,
        handle: Any = None,
        reconnect_timeout_s: float = 60.0,
    ):
        self.name = name
        self.namespace = namespace
        self.reconnect_timeout_s = reconnect_timeout_s
        self.handle: Any = handle if handle is not None else ray.get_actor(name, namespace)
        """The Ray actor handle, for asynchronous calls (`handle.select.remote(8)`)."""
        # The handle start_service created owns a non-detached actor: Ray ends the actor
        # once the owner drops it, so it is kept even after re-attaching by name.
        self._owned = handle
        self.reconnects = 0
        """How many times this client re-attached to a restarted actor."""
        self._closed = False

    def select(self, batch_size: int, policy_version: int | None = None) -> NDArray[np.int64]:
        """Task ids to roll out next, leased to this caller until reported."""
        return self._call("select", True, batch_size, policy_version)  # type: ignore[no-any-return]

    def update(self, feedback: Feedback, *, idempotent: bool = True) -> dict[str, int]:
        """Report rollouts; returns the acknowledgement once the service made it durable.

        A report re-sent after the actor died having applied it comes back as `duplicates`.
        """
        return self._call("update", idempotent, feedback, idempotent=idempotent)  # type: ignore[no-any-return]

    def flush(self) -> int:
        """Fold buffered feedback in now; returns the operation's seq."""
        return self._call("flush", True)  # type: ignore[no-any-return]

    def set_policy_version(self, version: int) -> int:
        """Announce the trainer's newest policy version."""
        return self._call("set_policy_version", True, version)  # type: ignore[no-any-return]

    def metrics(self) -> dict[str, float]:
        """Selector metrics plus `service/...`."""
        return self._call("metrics", True)  # type: ignore[no-any-return]

    def save(self) -> dict[str, Any]:
        """Checkpoint now; returns {"seq", "path"}."""
        return self._call("save", True)  # type: ignore[no-any-return]

    def selector_state(self) -> dict[str, Any]:
        """The selector's state_dict."""
        return self._call("selector_state", True)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Checkpoint and stop the actor (a later start_service resumes from the directory)."""
        ray.get(self.handle.close.remote())
        ray.kill(self.handle)
        self._closed = True

    def _call(self, method: str, retry: bool, *args: Any, **kwargs: Any) -> Any:
        if self._closed:  # no restart to wait for: this client stopped the service itself
            raise ValueError(
                f"selector service {self.name!r} was closed by this client; start_service "
                "resumes it (from its checkpoint_dir, if it has one)"
            )
        deadline = time.monotonic() + self.reconnect_timeout_s
        return get_resending(
            lambda: getattr(self.handle, method).remote(*args, **kwargs),
            lambda: self._reattach(deadline),
            deadline,
            retry=retry,
        )

    def _reattach(self, deadline: float) -> None:
        """Wait for a live actor under the same name (restarted by Ray or by a driver)."""
        self.handle = wait_for_actor(
            lambda: ray.get_actor(self.name, self.namespace),
            deadline,
            attempt_s=5,
            gave_up=f"selector service {self.name!r} did not come back within "
            f"{self.reconnect_timeout_s} s; restart it with start_service",
        )
        self.reconnects += 1
