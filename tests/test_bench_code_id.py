"""A bench record names the package's own commit only when it runs from frontier-rft's
checkout, else a content hash of its source, and says which (issue 83, item 8): from a copy
of src/ inside another repository the records carried that repository's commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

_PRINT = (
    "import json; from frontier_rft.bench.real_rl.code_id import code_info; "
    "print(json.dumps(code_info()))"
)


def _code_info(src: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", _PRINT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_copy_inside_another_repository_records_a_content_hash_not_its_commit(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other"
    shutil.copytree(
        REPO / "src" / "frontier_rft",
        other / "src" / "frontier_rft",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (other / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    _git(other, "init", "-q")
    _git(other, "add", "-A")
    _git(other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "theirs")
    theirs = _git(other, "rev-parse", "HEAD")
    info = _code_info(other / "src")
    assert info["commit"] != theirs and info["commit"] is None, info
    assert info["source"] == "content hash"
    from frontier_rft.bench.real_rl.code_id import source_digest

    assert info["source_sha256"] == source_digest(other / "src" / "frontier_rft")
    assert info["source_sha256"] == source_digest(REPO / "src" / "frontier_rft")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_frontier_rfts_own_checkout_records_its_commit() -> None:
    from frontier_rft.bench.real_rl.code_id import code_info, frontier_checkout

    package = REPO / "src" / "frontier_rft"
    if frontier_checkout(package) is None:
        pytest.skip("not run from a git checkout of frontier-rft")
    info = code_info(package)
    assert info["source"] == "git" and info["commit"] == _git(REPO, "rev-parse", "HEAD")
    assert isinstance(info["dirty"], bool) and "source_sha256" not in info
