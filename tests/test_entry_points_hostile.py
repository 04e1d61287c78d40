"""Every entry point, run as the user runs it (a subprocess), on hostile input: each ends
in a one- or two-line error naming what to fix, never a traceback (issue 36).

One case per `frontier` subcommand (and a few more where a command reads files), plus the
TRL script and `frontier check-config verl` (verl's own entry points need verl). Each
subprocess is bounded by a timeout; none of them starts any real work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TIMEOUT_S = 300  # a bound, not an expectation: each takes a few seconds on an idle core
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"


def _files(tmp: Path) -> dict[str, str]:
    """Hostile files by name."""
    out = {
        "latin1.yaml": "selector: caf\xe9\n".encode("latin-1"),
        "bomb.yaml": BOMB.encode(),
        "bigint.yaml": ("steps: " + "9" * 5_000 + "\n").encode(),
        "deep.yaml": ("steps: " + "[" * 50_000 + "]" * 50_000 + "\n").encode(),
        "fake-model/config.json": b"{}",
        "model5.yaml": b"model_name_or_path: 5\nuse_cpu: true\nbf16: false\noutput_dir: out\n",
        "latin1.jsonl": '{"prompt": "caf\xe9"}\n'.encode("latin-1"),
    }
    for name, data in out.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(data)
    return {name: str(tmp / name) for name in out}


FRONTIER = [sys.executable, "-m", "frontier_rft"]
TRL = [sys.executable, "-m", "frontier_rft.integrations.trl.grpo"]
LONG = "x" * 5_000
VERL_SEC = str(Path(__file__).resolve().parents[1] / "examples" / "verl" / "sec.yaml")

# (id, argv given the hostile files)
CASES: list[tuple[str, Callable[[dict[str, str]], list[str]]]] = [
    ("simulate --config not UTF-8", lambda f: [*FRONTIER, "simulate", "--config",
     f["latin1.yaml"]]),
    ("compare --config alias bomb", lambda f: [*FRONTIER, "compare", "--config", f["bomb.yaml"]]),
    ("train --config 5,000-digit int", lambda f: [*FRONTIER, "train", "--config",
     f["bigint.yaml"]]),
    ("train --config nested 50,000 deep", lambda f: [*FRONTIER, "train", "--config",
     f["deep.yaml"]]),
    ("train --temperature 1e-300", lambda f: [*FRONTIER, "train", "--model",
     str(Path(f["fake-model/config.json"]).parent), "--temperature", "1e-300"]),
    ("train --set nested 50,000 deep", lambda f: [*FRONTIER, "train", "--model", "/nonexistent",
     "--set", "lam=" + "[" * 50_000 + "]" * 50_000]),
    ("demo --steps huge", lambda f: [*FRONTIER, "demo", "--steps", "9" * 5_000]),
    ("demo-countdown --steps -1", lambda f: [*FRONTIER, "demo-countdown", "--steps", "-1"]),
    ("build-model --out a file", lambda f: [*FRONTIER, "build-model", "--out", f["latin1.yaml"]]),
    ("sft --model ~nosuchuser", lambda f: [*FRONTIER, "sft", "--model", "~nosuchuser_f/m",
     "--out", "o"]),
    ("measure-references --model too long", lambda f: [*FRONTIER, "measure-references",
     "--model", LONG, "--out", "o.json"]),
    ("evaluate --temperature -1", lambda f: [*FRONTIER, "evaluate", "--model",
     str(Path(f["fake-model/config.json"]).parent), "--temperature", "-1"]),
    ("evaluate --compare a non-UTF-8 file", lambda f: [*FRONTIER, "evaluate", "--compare",
     f["latin1.yaml"]]),
    ("ziprc train --model ~nosuchuser", lambda f: [*FRONTIER, "ziprc", "train", "--model",
     "~nosuchuser_f/m", "--out", "h"]),
    ("ziprc eval --head too long", lambda f: [*FRONTIER, "ziprc", "eval", "--head", LONG]),
    ("ziprc pareto --head a file", lambda f: [*FRONTIER, "ziprc", "pareto", "--head",
     f["latin1.yaml"], "--out", "p"]),
    ("bench-rl --runs ~nosuchuser", lambda f: [*FRONTIER, "bench-rl", "--runs",
     "~nosuchuser_f/r", "--selectors", "nope"]),
    ("selectors with a huge name", lambda f: [*FRONTIER, "selectors", LONG]),
    ("check-config trl alias bomb override", lambda f: [*FRONTIER, "check-config", "trl",
     f["bomb.yaml"].replace("bomb", "model5"), "selector_config=[&a [1], *a]"]),
    ("check-config trl non-UTF-8 data", lambda f: [*FRONTIER, "check-config", "trl",
     f["model5.yaml"], f"dataset_files={f['latin1.jsonl']}"]),
    ("check-config verl ~nosuchuser data", lambda f: [*FRONTIER, "check-config", "verl",
     VERL_SEC, "data.train_files=~nosuchuser_f/t.jsonl"]),
    ("check-config verl 5,000-digit override", lambda f: [*FRONTIER, "check-config", "verl",
     VERL_SEC, "data.train_batch_size=" + "9" * 5_000]),
    ("check-config verl a non-UTF-8 file", lambda f: [*FRONTIER, "check-config", "verl",
     f["latin1.yaml"]]),
    ("TRL script --config alias bomb", lambda f: [*TRL, "--config", f["bomb.yaml"]]),
]  # fmt: skip
SLOW = [  # TRL's parser imports torch and transformers: ~20 s on a busy machine
    ("TRL script model_name_or_path: 5", lambda f: [*TRL, "--config", f["model5.yaml"]]),
]  # fmt: skip


@pytest.mark.parametrize(
    "argv_of",
    [*(c[1] for c in CASES), *(pytest.param(c[1], marks=pytest.mark.slow) for c in SLOW)],
    ids=[c[0] for c in (*CASES, *SLOW)],
)
def test_entry_point_on_hostile_input_ends_without_a_traceback(
    argv_of: Callable[[dict[str, str]], list[str]], tmp_path: Path
) -> None:
    if argv_of(_files(tmp_path))[2].endswith("trl.grpo"):
        pytest.importorskip("trl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("FRONTIER_DEBUG", None)
    done = subprocess.run(
        argv_of(_files(tmp_path)),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT_S,
    )
    err = done.stderr
    assert "Traceback" not in err, err[-2000:]
    assert done.returncode in (1, 2), (done.returncode, err[-500:], done.stdout[-500:])
    found = [line for line in done.stdout.splitlines() if line.startswith("  - ")]
    if done.returncode == 1 and found:  # check-config's report: one short line per problem
        assert all(len(line) < 1_000 for line in found), done.stdout[-1500:]
    else:  # a usage error: one line naming the fix (bench-rl's exits 1)
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and len(errors[0]) < 1_000, err[-1500:]
