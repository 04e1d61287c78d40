"""The release: one version, the license pyproject names, and a wheel and sdist that a
clean environment installs and runs.

The slow test builds both with `python -m build` (no isolation: the build backend comes
from this environment, so the build itself needs no network) from a copy of the checkout
with a developer's junk added (runs/, .venv/, caches), installs the wheel into a new venv
with its core dependencies resolved by pip (from the configured package index), and runs
the command line from there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import frontier_rft

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (the package runs on 3.10)

REPO = Path(__file__).resolve().parents[1]
APACHE_2_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"
"""MD5 of https://www.apache.org/licenses/LICENSE-2.0.txt, the license's canonical text."""
NETWORK_ERRORS = ("NewConnectionError", "Temporary failure in name resolution", "Network is")


def test_the_version_is_written_once_and_heads_the_changelog() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "frontier_rft.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+", frontier_rft.__version__)
    changelog = (REPO / "CHANGELOG.md").read_text()
    newest = re.search(r"^## (\d+\.\d+\.\d+)", changelog, re.M)
    assert newest is not None and newest[1] == frontier_rft.__version__
    written = [p for p in (REPO / "src").rglob("*.py") if frontier_rft.__version__ in p.read_text()]
    assert written == [REPO / "src" / "frontier_rft" / "__init__.py"]


def test_the_license_file_is_the_license_pyproject_names() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert hashlib.md5((REPO / "LICENSE").read_bytes()).hexdigest() == APACHE_2_MD5
    assert (REPO / "src" / "frontier_rft" / "py.typed").exists()


def _checkout_with_junk(dest: Path) -> None:
    """The files git knows (tracked, or new and not ignored), plus what a developer's
    checkout also holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    junk = ["runs/demo/report.html", ".venv/pyvenv.cfg", "src/frontier_rft/__pycache__/x.pyc"]
    for name in [*junk, "build/lib/stale.py", ".pytest_cache/v"]:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text("junk")


@pytest.mark.slow
@pytest.mark.integration
def test_the_wheel_and_sdist_install_into_a_clean_venv_and_run(tmp_path: Path) -> None:
    pytest.importorskip("build")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("builds from a git checkout")
    project, dist = tmp_path / "project", tmp_path / "dist"
    project.mkdir()
    _checkout_with_junk(project)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    version = frontier_rft.__version__
    wheel = dist / f"frontier_rft-{version}-py3-none-any.whl"
    sdist = dist / f"frontier_rft-{version}.tar.gz"
    assert sorted(p.name for p in dist.iterdir()) == sorted([wheel.name, sdist.name])

    # The sdist: what a user vendoring the source needs, and nothing of the checkout's junk.
    root = f"frontier_rft-{version}/"
    with tarfile.open(sdist) as tf:
        names = [m.name.removeprefix(root) for m in tf.getmembers() if m.isfile()]
    for needed in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"):
        assert needed in names, needed
    assert "src/frontier_rft/py.typed" in names and "src/frontier_rft/__init__.py" in names
    outside = sorted({n.split("/")[0] for n in names} - {"src"})
    assert outside == [
        "CHANGELOG.md", "LICENSE", "MANIFEST.in", "PKG-INFO", "README.md", "pyproject.toml",
        "setup.cfg",
    ]  # fmt: skip
    assert all(
        n.startswith(("src/frontier_rft/", "src/frontier_rft.egg-info/"))
        for n in names
        if n.startswith("src")
    )
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]

    # The wheel: the package, its type hints, the license; no tests, no junk.
    with zipfile.ZipFile(wheel) as zf:
        members = zf.namelist()
    assert "frontier_rft/py.typed" in members
    # package data the library reads at run time (it never reads benchmarks/)
    assert "frontier_rft/bench/real_rl/verdicts.json" in members
    assert f"frontier_rft-{version}.dist-info/licenses/LICENSE" in members
    assert {m.split("/")[0] for m in members} == {
        "frontier_rft",
        f"frontier_rft-{version}.dist-info",
    }

    # A clean venv: the wheel and its core dependencies, resolved by pip.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    bin_dir = venv / "bin"
    pip = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if pip.returncode != 0 and any(e in pip.stdout + pip.stderr for e in NETWORK_ERRORS):
        pytest.skip(f"no package index reachable for the core dependencies: {pip.stderr[-300:]}")
    assert pip.returncode == 0, pip.stderr[-3000:]

    def run(*argv: str) -> str:
        done = subprocess.run(
            [*argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    code = (
        "import importlib.metadata as m, pathlib, frontier_rft as f; "
        "print(f.__version__, m.version('frontier-rft'), pathlib.Path(f.__file__).parent)"
    )
    own, meta, where = run(str(bin_dir / "python"), "-c", code).split()
    assert own == meta == version
    assert Path(where).is_relative_to(venv) and (Path(where) / "py.typed").exists()
    assert run(str(bin_dir / "frontier"), "--version").strip() == f"frontier-rft {version}"
    assert "usage: frontier" in run(str(bin_dir / "frontier"), "--help")
    listed = run(str(bin_dir / "frontier"), "selectors")
    assert "greso:" in listed and "requires:" in listed
