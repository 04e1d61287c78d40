"""init_local on a busy machine: its own start-up timeout, and a failed attempt's processes
stopped before the next attempt (Ray leaves them running until the driver exits).

ray.init is replaced by stand-ins that fail the way Ray's start-up does, so these run in a
second and need no Ray node; the last test checks that the installed Ray still waits for
its node through the function init_local makes patient.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from frontier_rft.integrations.ray import local  # noqa: E402 - after the skip

pytestmark = pytest.mark.integration

TIMED_OUT = "The current node timed out during startup."


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_failed_start_stops_its_processes_before_the_next_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []
    alive_at_retry: list[bool] = []

    def half_start(**_: Any) -> None:
        """Like a raylet that never registers: daemons started, then Ray gives up."""
        alive_at_retry.extend(_alive(p.pid) for p in started)
        daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        worker = subprocess.Popen(  # a grandchild, as a raylet's workers are
            [sys.executable, "-c",
             "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
             "'import time; time.sleep(300)']); time.sleep(300)"]
        )  # fmt: skip
        started.extend([daemon, worker])
        waited = 0.0
        while not psutil.Process(worker.pid).children() and waited < 30:
            time.sleep(0.05)  # the grandchild exists before Ray "gives up"
            waited += 0.05
        raise Exception(TIMED_OUT)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", half_start)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(Exception, match="timed out during startup"):
        local.init_local(tmp_path / "ray", attempts=2, retry_wait_s=0.0)
    assert len(started) == 4
    assert alive_at_retry == [False, False]  # attempt 1's processes were gone before attempt 2
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert not [pid for pid in left if _alive(pid)]  # nothing of either attempt is running
    for proc in started:
        proc.wait(timeout=10)


def test_the_node_wait_is_the_start_up_timeout_not_rays_30_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray._private.services as services

    calls = {"n": 0}

    def registers_on_the_fourth_look(*_: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] < 4:
            raise RuntimeError("node info not available yet")  # what Ray's loop catches
        return {"node_manager_port": 1}

    def init(**_: Any) -> None:
        # Ray's Node.__init__ loop: one lookup per round, giving up after 30 s of failures;
        # a patient lookup returns within its own timeout instead.
        assert services.get_node("gcs:1", "node") == {"node_manager_port": 1}

    monkeypatch.setattr(services, "get_node", registers_on_the_fourth_look)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    assert local.init_local(tmp_path / "ray", start_timeout_s=30.0) is ray
    assert calls["n"] == 4
    assert services.get_node is registers_on_the_fourth_look  # restored after start-up

    calls["n"] = -(10**9)  # never registers: the patient lookup gives up at the timeout
    with pytest.raises(RuntimeError, match="not available"):
        local.init_local(tmp_path / "ray", attempts=1, start_timeout_s=0.2)


def test_the_installed_ray_waits_for_its_node_through_services_get_node() -> None:
    """init_local's timeout works by making `ray._private.services.get_node` patient: the
    installed Ray's node start-up must still look its node up through that name."""
    from ray._private.node import Node

    source = inspect.getsource(Node.__init__)
    assert "ray._private.services.get_node(" in source
    assert "timed out during startup" in source
