"""core, structures, selectors, sampling, shadow, the selector service, the simulator and the
benchmarks never import torch, matplotlib, trainers, Ray or scipy on import (the benchmarks load
them only to train or draw); the service imports where Ray is not installed.

One fresh interpreter imports every module under those packages, then builds every
registered selector and runs select -> update -> select on it, recording after each
step which heavy modules have appeared in sys.modules. Which of our own packages each may
import is tests/test_architecture.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from frontier_rft import SELECTORS

FORBIDDEN = ("torch", "matplotlib", "transformers", "trl", "ray", "scipy")
# The packages that load none of FORBIDDEN on import, walked module by module (`bench` trains
# and draws with them inside functions only). `integrations` (optional extras) is not walked;
# the top-level package and `reporting` (matplotlib only inside functions) are imported
# without walking.
PACKAGES = (
    "frontier_rft.core",
    "frontier_rft.structures",
    "frontier_rft.selectors",
    "frontier_rft.sampling",
    "frontier_rft.shadow",
    "frontier_rft.service",
    "frontier_rft.simulation",
    "frontier_rft.bench",
)

SCRIPT = r"""
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])  # tests/, for conftest's world pool and collaborators
FORBIDDEN = tuple(sys.argv[2].split(","))
PACKAGES = sys.argv[3].split(",")

def loaded():
    return sorted({m.split(".")[0] for m in sys.modules} & set(FORBIDDEN))

out = {"modules": [], "import_errors": {}, "selectors": {}}
import frontier_rft
import frontier_rft.reporting
for name in PACKAGES:
    pkg = importlib.import_module(name)
    out["modules"].append(name)
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=name + "."):
        try:
            importlib.import_module(info.name)
            out["modules"].append(info.name)
        except Exception as exc:
            out["import_errors"][info.name] = repr(exc)
out["after_imports"] = loaded()

import numpy as np
from helpers import selector_kwargs, world_pool, world_rewards, world_pass_rates
pool = world_pool()
rng = np.random.default_rng(0)
for name in sorted(frontier_rft.SELECTORS):
    before = set(loaded())
    record = {"status": "ok"}
    try:
        sel = frontier_rft.make_selector(name, pool, seed=0, **selector_kwargs(name, pool))
        ids = sel.select(6)
        task_ids, rewards = world_rewards(ids, world_pass_rates(pool), rng, 4)
        sel.update(frontier_rft.Feedback(task_ids, rewards, step=0))
        sel.select(6)
        sel.metrics()
    except NotImplementedError:
        record["status"] = "placeholder"
    record["new"] = sorted(set(loaded()) - before)  # what this selector pulled in
    out["selectors"][name] = record
out["at_end"] = loaded()
print(json.dumps(out))
"""


def probe(forbidden: tuple[str, ...]) -> dict[str, Any]:
    tests_dir = str(Path(__file__).resolve().parent)
    args = [sys.executable, "-c", SCRIPT, tests_dir, ",".join(forbidden), ",".join(PACKAGES)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return probe(FORBIDDEN)


def test_the_probe_sees_imported_modules() -> None:
    """Guard against a probe that can never fail: numpy is imported, so it must be seen."""
    assert probe(("numpy", "not_a_real_module"))["after_imports"] == ["numpy"]


def test_every_module_imports_without_heavy_dependencies(report: dict[str, Any]) -> None:
    assert not report["import_errors"], report["import_errors"]
    assert report["after_imports"] == [], f"imported by the numpy-only layers: {report}"
    modules = set(report["modules"])
    assert {"frontier_rft.core.feedback", "frontier_rft.core.persistence"} <= modules
    assert {"frontier_rft.selectors.registry", "frontier_rft.selectors.uniform"} <= modules
    assert {"frontier_rft.service.selector_service", "frontier_rft.service.sharded"} <= modules


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_selector_runs_without_heavy_dependencies(report: dict[str, Any], name: str) -> None:
    record = report["selectors"][name]
    assert record["new"] == [], f"using selector {name!r} imported {record['new']}"
    assert report["at_end"] == []
    if record["status"] == "placeholder":
        pytest.skip(f"{name} is still a placeholder (NotImplementedError)")


WITHOUT_RAY = r"""
import sys
sys.modules["ray"] = None  # `import ray` now raises ImportError, as where Ray is not installed
import numpy as np
from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.integrations.ray import SelectorService, ServiceConfig, local_sharded
from frontier_rft.service import journal, shard_async

pool = TaskPool(40, prompts=[f"prompt {i}" for i in range(40)])
service = SelectorService(make_selector("bots", pool, seed=0), ServiceConfig())
ids = service.select(4)
service.update(Feedback(np.repeat(ids, 2), np.tile([0.0, 1.0], 4), step=0))
driver = local_sharded("uniform", pool, 2, ServiceConfig())
print(len(driver.select(6)))
try:
    import frontier_rft.integrations.ray.client
except ImportError:
    print("client needs ray")
"""


def test_the_service_runs_where_ray_is_not_installed() -> None:
    """The transport-free service (and its names re-exported by integrations.ray) import and
    run with `import ray` failing; the Ray client, as a check that the block works, does not."""
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["6", "client", "needs", "ray"]
