"""docs/walkthrough.md is a tested script: every `bash` and `python` block runs, in order, in
one empty folder holding a link to examples/, as on a fresh `[trl]` install (tensorboard
made unimportable), with `frontier` and `python` meaning this interpreter and this source.

Each block must exit 0 (the mistakes are followed by `echo "exit status $?"`), print no
traceback and at most one error line, and print every line of the `text` block under it
(`...` in a line stands for text that varies). `sh` blocks are shown, not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "walkthrough.md"
BLOCK = re.compile(r"^```(bash|python|text|sh)\n(.*?)^```", re.S | re.M)
NO_TENSORBOARD = "import sys\nsys.modules['tensorboard'] = sys.modules['tensorboardX'] = None\n"
"""A sitecustomize that hides tensorboard from this interpreter, as a [trl] install lacks it."""


def steps() -> list[tuple[str, str, list[str]]]:
    """(kind, code, expected lines) of every block that runs, in the page's order."""
    blocks = BLOCK.findall(DOC.read_text())
    out: list[tuple[str, str, list[str]]] = []
    for i, (kind, code) in enumerate(blocks):
        if kind in ("bash", "python"):
            follows = blocks[i + 1] if i + 1 < len(blocks) else ("", "")
            expected = follows[1].splitlines() if follows[0] == "text" else []
            out.append((kind, code, [line for line in expected if line.strip()]))
    return out


def shown(expected: str, lines: list[str]) -> bool:
    """Whether one of `lines` holds the pieces of `expected` between its `...`, in order."""
    pieces = [p.strip() for p in expected.split("...") if p.strip()]
    for line in lines:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


def test_the_walkthrough_has_what_it_promises() -> None:
    kinds = [kind for kind, _, _ in steps()]
    assert kinds.count("python") >= 3 and kinds.count("bash") >= 8
    text = DOC.read_text()
    for phrase in (
        "check-config trl",
        "check-config verl",
        "build-model",
        "--report_to",
        "models/qwen7b",
        "--help",
        "--category_columns sourcez",
        "selector=botz",
    ):
        assert phrase in text, phrase  # fmt: skip


@pytest.mark.slow
@pytest.mark.integration
def test_every_step_of_the_walkthrough_runs_as_shown(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the walk-through trains with TRL: the trl extra")
    pytest.importorskip("pyarrow", reason="its verl data file is parquet")
    work, bin_dir, site = tmp_path / "work", tmp_path / "bin", tmp_path / "site"
    for folder in (work, bin_dir, site):
        folder.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    (bin_dir / "frontier").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m frontier_rft "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    (site / "sitecustomize.py").write_text(NO_TENSORBOARD)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": f"{site}{os.pathsep}{REPO / 'src'}",
        "HF_HUB_OFFLINE": "1",  # a safety net: no step may reach a hub
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "OMP_NUM_THREADS": "1",
    }
    for kind, code, expected in steps():
        cmd = ["bash", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        out = done.stdout + done.stderr
        where = f"{kind} block:\n{code}\nprinted:\n{out[-4000:]}"
        assert done.returncode == 0, where
        assert "Traceback" not in out, where
        assert sum(" error: " in line for line in out.splitlines()) <= 1, where
        lines = out.splitlines()
        for line in expected:
            assert shown(line, lines), f"missing {line!r} in {where}"
