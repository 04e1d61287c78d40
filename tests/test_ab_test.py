"""docs/ab_test.md is a tested script: its `yaml` block (first line `# NAME: ...`) is saved
as NAME, and every `bash` and `python` block runs, in order, in one empty folder, with
`frontier` and `python` meaning this interpreter and this source: both arms train a tiny
model on the CPU with an evaluation, and `frontier ab compare` prints and plots them.

Each block must exit 0, print no traceback, and print every line of the `text` block under
it (`...` in a line stands for text that varies).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_walkthrough import shown

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ab_test.md"
BLOCK = re.compile(r"^```(bash|python|text|yaml)\n(.*?)^```", re.S | re.M)


def steps() -> list[tuple[str, str, list[str]]]:
    """(kind, code, expected lines) of every block that runs or is saved, in page order."""
    blocks = BLOCK.findall(DOC.read_text())
    out: list[tuple[str, str, list[str]]] = []
    for i, (kind, code) in enumerate(blocks):
        if kind in ("bash", "python", "yaml"):
            follows = blocks[i + 1] if i + 1 < len(blocks) else ("", "")
            expected = follows[1].splitlines() if follows[0] == "text" else []
            out.append((kind, code, [line for line in expected if line.strip()]))
    return out


def test_the_page_holds_an_a_b_that_runs() -> None:
    kinds = [kind for kind, _, _ in steps()]
    assert kinds.count("yaml") == 1 and kinds.count("bash") >= 4
    text = DOC.read_text()
    for phrase in ("eval_dataset_files", "eval_strategy", "frontier ab compare", "--seed",
                   "check-config trl", "--selector uniform", "frontier-rft[trl,plot]",
                   "final against final", "--rollouts kept"):  # fmt: skip
        assert phrase in text, phrase


@pytest.mark.slow
@pytest.mark.integration
def test_every_step_of_the_ab_test_runs_as_shown(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the A/B trains with TRL: the trl extra")
    pytest.importorskip("matplotlib", reason="ab compare draws its figure: the plot extra")
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    for folder in (work, bin_dir):
        folder.mkdir()
    (bin_dir / "frontier").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m frontier_rft "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "src"),
        "HF_HUB_OFFLINE": "1",  # no step may reach a hub
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "OMP_NUM_THREADS": "1",
    }
    for kind, code, expected in steps():
        if kind == "yaml":
            name = code.splitlines()[0].removeprefix("#").split(":")[0].strip()
            (work / name).write_text(code)
            continue
        cmd = ["bash", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        out = done.stdout + done.stderr
        where = f"{kind} block:\n{code}\nprinted:\n{out[-4000:]}"
        assert done.returncode == 0, where
        assert "Traceback" not in out, where
        lines = out.splitlines()
        for line in expected:
            assert shown(line, lines), f"missing {line!r} in {where}"
    # What the comparison read: every evaluation beside the rollouts spent by then.
    # skip with rollouts: kept keeps the first pass whole and passes over the all-wrong
    # prompts of the second (a random tiny model solves none): 2 of its 4 prompts' groups.
    for arm, spent in (("uniform", [0, 16, 32]), ("skip-kept", [0, 16, 24])):
        for seed in (0, 1):
            log = work / "runs" / "ab" / arm / f"seed-{seed}" / "frontier_metrics.jsonl"
            evals = [r for r in map(json.loads, log.read_text().splitlines()) if "eval_reward" in r]
            assert [r["step"] for r in evals] == [0, 2, 4]
            assert [r["curriculum/trl/rollouts_delivered"] for r in evals] == spent
    png = work / "runs" / "ab" / "ab_compare.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
