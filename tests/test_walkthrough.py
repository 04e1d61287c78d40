"""docs/walkthrough.md is a tested script: every `bash` and `python` block runs, in order, in
one empty folder holding a link to examples/, as on a fresh `[trl]` install (tensorboard
made unimportable), with `frontier` and `python` meaning this interpreter and this source.

Each block must exit 0 (the mistakes are followed by `echo "exit status $?"`), print no
traceback and at most one error line, and print every line of the `text` block under it
(`...` in a line stands for text that varies). `sh` blocks are shown, not run.
"""

from __future__ import annotations

import itertools
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


def _run(code: list[str], cwd: Path) -> str:
    """Run a page's command here (this interpreter, this source) and return what it printed."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(code, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_step_2_flushes_before_it_reads_the_metrics(tmp_path: Path) -> None:
    """Issue 63: the snippet read metrics() with the last step still buffered (the step
    before's ratio). It flushes after each update, and prints what the page shows."""
    kind, code, expected = steps()[0]
    assert kind == "python" and "make_selector" in code
    update, flush, read = code.index(".update("), code.index(".flush()"), code.index(".metrics()")
    assert update < flush < read
    lines = _run([sys.executable, "-c", code], tmp_path).splitlines()
    assert expected and all(shown(line, lines) for line in expected), lines


def test_step_4_checks_the_config_the_run_gets(tmp_path: Path) -> None:
    """Issue 63: check-config was given the example file's sizes (125 epochs: auto full)
    and the run its own (0.125 epochs: auto kept). The check gets the run's sizes and says
    what the run's log then says: auto's decision and the default shadow."""
    blocks = steps()
    check = next(c for k, c, _ in blocks if k == "bash" and "check-config trl" in c)
    _, train, train_out = next(b for b in blocks if "integrations.trl.grpo" in b[1])

    def flags(command: str) -> dict[str, str]:
        words = command.replace("\\\n", " ").split()
        return {w[2:]: v for w, v in itertools.pairwise(words) if w.startswith("--")}

    sizes = ("max_steps", "per_device_train_batch_size", "num_generations", "dataset_files",
             "num_train_epochs", "gradient_accumulation_steps", "model_name_or_path")  # fmt: skip
    assert {k: v for k, v in flags(check).items() if k in sizes} == {
        k: v for k, v in flags(train).items() if k in sizes
    }
    said = re.search(r"rollouts: auto is (\w+): ([^.;\n]+)", "\n".join(train_out))
    assert said is not None, train_out
    (tmp_path / "examples").symlink_to(REPO / "examples")
    data = next(c for k, c, _ in blocks if k == "python" and "data/train.jsonl" in c)
    _run([sys.executable, "-c", data], tmp_path)
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    (tmp_path / "models" / "tiny" / "config.json").write_text("{}")  # no model is loaded
    command = flags(check)
    argv = check.replace("\\\n", " ").split()[1:]
    assert argv[:2] == ["check-config", "trl"] and command
    out = _run([sys.executable, "-m", "frontier_rft", *argv], tmp_path)
    mode, why = said.groups()
    assert f"auto: rollouts will be {mode} (uniform's bill) because {why}" in out, out
    assert any("shadows: following skip" in line for line in train_out), train_out
    assert "shadows: the run will follow skip" in out, out
