"""A new selector is its module and its test: one defined here, with its facts, runs through
everything that reads selectors, with no other edit (no table, no list, no name check).

`LeastTriedSelector` is registered only inside these tests (and when this file is loaded as
a pytest plugin, `pytest -p test_new_selector`, which is how the contract suites run it),
so the rest of the test session never sees it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from frontier_rft import SELECTORS, TaskPool
from frontier_rft.bench.overhead import runner as overhead
from frontier_rft.bench.overhead.report import render_markdown
from frontier_rft.bench.overhead.world import Settings, quick
from frontier_rft.cli.main import main
from frontier_rft.core.config import SelectorConfig
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_array
from frontier_rft.reporting.colors import selector_color
from helpers import REPO, registered

NAME = "leasttried"


@dataclass(frozen=True)
class LeastTriedConfig(SelectorConfig):
    """Least-tried has no hyperparameters beyond the shared ones."""


class LeastTriedSelector(Selector):
    """Rolls out the prompts with the fewest groups so far, ties broken at random."""

    name = NAME
    needs = Needs("its own count of groups per prompt", "nothing to derive", "nothing")
    cost = Cost("greedy", "O(N)", "one np.argpartition over the counts")
    color = "#00a3a3"
    config_class = LeastTriedConfig

    def __init__(self, pool: TaskPool, config: LeastTriedConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._tries = np.zeros(pool.num_tasks, dtype=np.int64)

    def _select(self, n: int) -> NDArray[np.int64]:
        key = self._tries + self.rng.random(self.num_tasks)  # the random part breaks ties
        return np.argpartition(key, n - 1)[:n].astype(np.int64)

    def _observe(self, batch: GroupBatch) -> None:
        self._tries[batch.task_ids] += 1  # one group per task and step

    def _state_dict(self) -> dict[str, Any]:
        return {"tries": self._tries}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n = (self.num_tasks,)
        self._tries = read_array(state, "tries", self.name, np.int64, shape=n, lo=0, hi=2**53)

    def _metrics(self) -> dict[str, float]:
        return {"most_tries": float(self._tries.max())}


def pytest_configure(config: pytest.Config) -> None:
    """Only when this file is loaded as a plugin: the contract suites then collect the new
    selector like any other (conftest parametrizes `selector_name` at collection)."""
    from frontier_rft.selectors import register

    register(LeastTriedSelector)


@pytest.fixture
def least_tried() -> Iterator[type[Selector]]:
    with registered(LeastTriedSelector) as cls:
        yield cls


def test_the_contract_suites_run_it() -> None:
    """Every contract check (tests/test_contract.py and its hostile half) runs on the new
    selector: the same number of checks as on uniform, all passing."""
    suites = ["tests/test_contract.py", "tests/test_contract_hostile.py"]
    env = dict(os.environ)
    # `python -m pytest` puts the working directory first on sys.path, where the repository's
    # root conftest.py would answer the plugin's `from helpers import`: leave it out.
    env["PYTHONSAFEPATH"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "tests"), str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])]
    )
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "test_new_selector"]

    def run(*args: str) -> str:
        proc = subprocess.run(
            [*base, *args, *suites], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        return proc.stdout

    def collected(name: str) -> int:
        out = run("--collect-only", "-q", "-k", name)
        return sum(1 for line in out.splitlines() if f"[{name}" in line or f"-{name}]" in line)

    assert collected(NAME) == collected("uniform") > 30
    summary = run("-q", "-k", NAME).strip().splitlines()[-1]
    passed = re.match(r"(\d+) passed", summary)
    assert passed is not None and "failed" not in summary, summary
    assert int(passed.group(1)) == collected(NAME)


def test_frontier_selectors_lists_it(least_tried: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors"]) == 0
    listing = capsys.readouterr().out
    assert f"{NAME}: " in listing and "its own count of groups per prompt" in listing
    assert main(["selectors", NAME]) == 0
    assert "dedupe_window" in capsys.readouterr().out  # its config, with the shared fields
    assert selector_color(NAME) == "#00a3a3"


def test_the_simulator_compares_it_with_uniform(least_tried: Any, tmp_path: Path) -> None:
    args = ["compare", "--selectors", NAME, "--steps", "6", "--seeds", "1", "--batch", "8",
            "--rollouts", "4", "--jobs", "1", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    runs = [r for r in results["runs"] if r["label"] == NAME]
    assert len(runs) == 1 and len(runs[0]["etr"]) == 6
    assert NAME in results["summary"] and "uniform" in results["summary"]


def test_the_overhead_benchmark_holds_it_to_its_declared_floor(least_tried: Any) -> None:
    res = overhead.run(replace(quick(Settings()), selectors=(NAME,)))
    assert not res["notes"], res["notes"]
    (row,) = res["results"]
    assert row["selector"] == NAME and row["floor_kind"] == "greedy" and row["cost"] == "O(N)"
    assert row["steps_timed"] == 3 and row["floor_ms"] > 0 and row["bytes_per_task"] > 0
    table = render_markdown(res, "python benchmarks/overhead.py --quick")
    assert f"| {NAME} | O(N) | 1e3 |" in table


def test_it_is_only_registered_where_asked() -> None:
    assert NAME not in SELECTORS
