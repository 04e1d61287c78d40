"""scripts/device_stage.sh: a file split into parts here, carried in two calls, joined and
checked there; the GPU runbook's `collect`. Run on a 2.5 MiB stand-in with 1 MiB parts, in
temporary directories (nothing is sent anywhere, no registry is asked)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / "scripts" / "device_stage.sh"
RUNBOOK = REPO / "scripts" / "gpu_smollm2.sh"

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("sha256sum") is None,
    reason="needs bash and coreutils",
)


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args],
        cwd=REPO,
        env={**os.environ, "NO_WHEEL": "1", "PART_MIB": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _tree_mib() -> int:
    """MiB (rounded up) of what travels with every device call: tracked files and untracked
    ones git does not ignore, as the script counts them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    paths = (REPO / os.fsdecode(name) for name in listed if name)
    size = sum(path.stat().st_size for path in paths if path.is_file())
    return -(-size // 1048576)


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(os.urandom(5 * 512 * 1024))  # 2.5 MiB: three parts of <= 1 MiB
    return path


def test_dry_run_splits_joins_checks_and_prints_both_calls(
    model_file: Path, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    missing = str(tmp_path / "state")  # the runbook's state before its first call
    # The limit is set from this checkout's own tree, so the check tests the script's arithmetic
    # rather than how large the committed evidence has grown (docs/results/smollm2_gpu.md,
    # "Staging", says what the real 64 MiB leaves for the model's parts).
    limit = str(_tree_mib() + 4 + 8)  # margin 4 MiB, then room for the 2 MiB a call carries
    done = _run(
        STAGE, "dry-run", str(model_file), STAGE=str(stage), EXTRA_CARRY=missing, LIMIT_MIB=limit
    )
    assert done.returncode == 0, done.stderr
    assert "parts joined and sha256 checked" in done.stdout
    assert "call 1 carries 2 MiB, call 2 carries 2 MiB" in done.stdout
    assert "scripts/device_stage.sh receive" in done.stdout
    assert "scripts/device_stage.sh assemble" in done.stdout
    assert sorted(p.name for p in (stage / "call1").iterdir()) == [
        "PARTS",
        "SHA256SUMS",
        "model.gguf.part-aa",
    ]
    parts = sorted(p.name for p in (stage / "call2").glob("*.part-*"))
    assert parts == ["model.gguf.part-ab", "model.gguf.part-ac"]
    # A working tree too large for one call with its parts is refused, naming the fix.
    tight = _run(STAGE, "dry-run", str(model_file), STAGE=str(stage), LIMIT_MIB="3")
    assert tight.returncode != 0 and "over the limit" in tight.stderr


def test_receive_then_assemble_rebuilds_the_file_and_refuses_a_fresh_machine(
    model_file: Path, tmp_path: Path
) -> None:
    stage, there = tmp_path / "stage", tmp_path / "there"
    assert _run(STAGE, "split", str(model_file), STAGE=str(stage)).returncode == 0
    # A fresh machine that never received call 1: exit 3, saying what to do.
    fresh = _run(STAGE, "assemble", STAGE=str(stage), DEVICE_STAGE=str(tmp_path / "fresh"))
    assert fresh.returncode == 3 and "run call 1 again" in fresh.stderr
    assert _run(STAGE, "receive", STAGE=str(stage), DEVICE_STAGE=str(there)).returncode == 0
    joined = _run(STAGE, "assemble", STAGE=str(stage), DEVICE_STAGE=str(there))
    assert joined.returncode == 0, joined.stderr
    assert joined.stdout.strip().splitlines()[-1] == str(there / "model.gguf")
    assert (there / "model.gguf").read_bytes() == model_file.read_bytes()
    assert not list(there.glob("*.part-*"))  # parts removed once joined
    # Again on the warm machine, with nothing carried: the joined file is kept as it is.
    shutil.rmtree(stage / "call2")
    again = _run(STAGE, "assemble", STAGE=str(stage), DEVICE_STAGE=str(there))
    assert again.returncode == 0 and again.stdout.strip() == str(there / "model.gguf")


def test_a_corrupted_part_fails_the_checksum(model_file: Path, tmp_path: Path) -> None:
    stage, there = tmp_path / "stage", tmp_path / "there"
    assert _run(STAGE, "split", str(model_file), STAGE=str(stage)).returncode == 0
    part = stage / "call2" / "model.gguf.part-ac"
    data = bytearray(part.read_bytes())
    data[0] ^= 0xFF
    part.write_bytes(bytes(data))
    assert _run(STAGE, "receive", STAGE=str(stage), DEVICE_STAGE=str(there)).returncode == 0
    bad = _run(STAGE, "assemble", STAGE=str(stage), DEVICE_STAGE=str(there))
    assert bad.returncode == 4 and "sha256 mismatch" in bad.stderr
    assert not (there / "model.gguf").exists()


def _tarball(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _names(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        return tar.getnames()


def test_collect_keeps_the_state_and_copies_results_only_when_complete(tmp_path: Path) -> None:
    files, state = tmp_path / "files", tmp_path / "state"
    files.mkdir()
    _tarball(files / "state.tar.gz", {"results/smollm2_gpu_calibration.json": b"{}"})
    out = _run(RUNBOOK, "collect", str(files), STATE=str(state))
    assert out.returncode == 0 and "not finished yet" in out.stdout
    assert (state / "state.tar.gz").read_bytes() == (files / "state.tar.gz").read_bytes()
    assert _run(RUNBOOK, "collect", str(tmp_path / "empty")).returncode == 2
    # A call that returns less than was kept (a fresh machine that stopped early) never
    # replaces the kept state.
    _tarball(files / "state.tar.gz", {})
    again = _run(RUNBOOK, "collect", str(files), STATE=str(state))
    assert again.returncode == 0 and "kept the earlier" in again.stdout
    assert _names(state / "state.tar.gz") == ["results/smollm2_gpu_calibration.json"]


def test_a_fresh_machine_returns_the_state_it_was_given(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    state.mkdir()
    _tarball(state / "state.tar.gz", {"results/smollm2_gpu_calibration.json": b"{}"})
    env = {"STATE": str(state), "OUT": str(out), "WORK": str(tmp_path / "work")}
    env |= {"STAGE": str(tmp_path / "none"), "DEVICE_STAGE": str(tmp_path / "fresh")}
    done = _run(RUNBOOK, "run", **env)
    assert done.returncode == 3 and "call `stage`, then `run` again" in done.stdout
    assert "run call 1, then call 2" in done.stdout  # device_stage's reason, in the log
    assert _names(out / "state.tar.gz") == ["results/smollm2_gpu_calibration.json"]
    assert "the model is not staged" in (out / "log.txt").read_text()
