"""The AbstractCurriculumSampler interface of verl <= 0.7 (`data.sampler.class_path`).

verl 0.7.1 pins numpy<2, so it is not installed into .venv-verl's site-packages: its
wheel goes to `.venv-verl/verl-0.7.1` with --no-deps and runs in a subprocess on
.venv-verl's numpy 2 stack (its sampler, trainer and dataset code import and run there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
OLD_VERL = Path(os.environ.get("FRONTIER_OLD_VERL", HERE.parent / ".venv-verl" / "verl-0.7.1"))


@pytest.mark.skipif(not (OLD_VERL / "verl").is_dir(), reason=f"no verl 0.7.1 at {OLD_VERL}")
def test_verl_07_builds_the_sampler_from_class_path_and_feeds_it(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(OLD_VERL), str(HERE)]),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "hf"),
        "PYTHONWARNINGS": "ignore",
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "old_verl_curriculum.py"), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["verl"] == "0.7.1"
    assert result["curriculum"] is True  # verl's isinstance gate before update(batch=...)
    assert (result["selector"], result["lam"]) == ("bots", 0.2)  # from data.sampler.frontier
    assert result["seed"] == 11  # falls back to data.seed
    assert result["rollouts"] == 5 * 4 * 3  # every step's rewards reached the selector
    assert all(len(set(batch)) == 4 for batch in result["drawn"])
