"""benchmarks/smollm2_gpu_partial.py: runs a lease stopped are compared at the last held-out
evaluation every run reached, paired by seed, on a hand-built archive."""

from __future__ import annotations

import io
import json
import runpy
import tarfile
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "smollm2_gpu_partial.py"


def _rows(last: int, rollouts: int, pass1: dict[int, float]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for step in range(last + 1):
        if step in pass1:
            rows.append({"step": step, "eval/pass@1": pass1[step], "eval/pass@4": 2 * pass1[step]})
        if step:
            rows.append(
                {
                    "step": step,
                    "train/rollouts_total": rollouts * step,
                    "train/distinct_prompts_trained": step,
                    "perf/step_s": 1.0,
                }
            )
    return rows


def _archive(path: Path, runs: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for (entry, seed), rows in runs.items():
            data = "\n".join(json.dumps(r) for r in rows).encode()
            info = tarfile.TarInfo(f"runs/runs/{entry}/seed{seed}/metrics.jsonl")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_entries_compare_at_the_last_evaluation_all_runs_reached(tmp_path: Path) -> None:
    archive = tmp_path / "partial.tar.gz"
    evals = {0: 0.1, 15: 0.3, 30: 0.5}
    _archive(
        archive,
        {
            ("uniform", 0): _rows(31, 128, evals),
            ("uniform", 1): _rows(31, 128, evals),
            ("skip-kept", 0): _rows(31, 96, {0: 0.1, 15: 0.2, 30: 0.6}),
            ("skip-kept", 1): _rows(20, 64, {0: 0.1, 15: 0.4}),  # stopped before step 30
        },
    )
    module = runpy.run_path(str(SCRIPT), run_name="smollm2_gpu_partial")
    (cmp,) = [module["compare"](module["read_runs"](archive), ["uniform", "skip-kept"])]
    assert cmp["step"] == 15 and cmp["seeds"] == [0, 1]
    row = cmp["rows"]["skip-kept"]
    assert row["rollouts_vs_uniform"]["values"] == [0.75, 0.5]  # 96/128 and 64/128 at step 15
    assert row["pass@1_minus_uniform"]["values"] == [-0.1, 0.1]
    assert row["pass@4_minus_uniform"]["values"] == [-0.2, 0.2]
    assert row["pass@1_minus_uniform"]["mean"] == pytest.approx(0.0)
    assert module["curves"](module["read_runs"](archive))["skip-kept"] == pytest.approx(
        {0: 0.1, 15: 0.3}
    )


def test_an_archive_without_uniform_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "partial.tar.gz"
    _archive(archive, {("skip-kept", 0): _rows(16, 64, {0: 0.1, 15: 0.2})})
    monkeypatch.setattr("sys.argv", [str(SCRIPT), str(archive), "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="no uniform runs to compare with"):
        runpy.run_path(str(SCRIPT), run_name="__main__")


def test_a_line_torn_by_the_stop_is_skipped(tmp_path: Path) -> None:
    archive = tmp_path / "partial.tar.gz"
    data = json.dumps({"step": 0, "eval/pass@1": 0.1}).encode() + b'\n{"step": 1, "train/rol'
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("runs/runs/uniform/seed0/metrics.jsonl")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    module = runpy.run_path(str(SCRIPT), run_name="smollm2_gpu_partial")
    assert module["read_runs"](archive) == {"uniform": {0: [{"step": 0, "eval/pass@1": 0.1}]}}


def test_the_last_quarter_averages_the_last_evaluations_up_to_the_compared_step(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "partial.tar.gz"
    # 5 evaluations up to step 20: the last quarter is the last ceil(5 / 4) = 2 of them
    uni = {0: 0.1, 5: 0.2, 10: 0.3, 15: 0.4, 20: 0.5, 25: 0.9}
    skip = {0: 0.1, 5: 0.2, 10: 0.3, 15: 0.2, 20: 0.6}
    _archive(
        archive,
        {("uniform", 0): _rows(26, 128, uni), ("skip-kept", 0): _rows(21, 96, skip)},
    )
    module = runpy.run_path(str(SCRIPT), run_name="smollm2_gpu_partial")
    (cmp,) = [module["compare"](module["read_runs"](archive), ["uniform", "skip-kept"])]
    row = cmp["rows"]["skip-kept"]
    assert cmp["step"] == 20
    assert row["pass@1_minus_uniform"]["values"] == [pytest.approx(0.1)]
    # (0.2 + 0.6) / 2 - (0.4 + 0.5) / 2; uniform's step-25 evaluation is past the compared step
    assert row["last_quarter_pass@1_minus_uniform"]["values"] == [pytest.approx(-0.05)]
    assert "last quarter of evaluations" in "\n".join(
        module["markdown"](
            {"commit": "abc1234", "command": "c", "comparisons": [cmp], "curves": {}}
        )
    )
