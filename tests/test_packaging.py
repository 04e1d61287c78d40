"""The published metadata never pins torch, so installing an extra keeps a user's own torch.

The exact CPU torch of our Makefile and CI lives in constraints.txt; the extras carry at
most a lower bound. The first test reads the metadata setuptools writes into the wheel and
the sdist; the second installs the built wheel with the `trl` extra into a scratch
environment that already holds a "CUDA" torch of another version (a tiny fake
distribution), offline, through pip's real resolver, and checks that torch is untouched.
"""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
TORCH_FAMILY = {"torch", "torchvision", "torchaudio"}


def build(tmp: Path) -> tuple[Path, Path]:
    """(wheel, sdist) of a copy of the project, built by setuptools' PEP 517 backend."""
    src = tmp / "project"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(
        REPO / "src", src / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    out = tmp / "dist"
    names = tmp / "built.txt"
    code = (  # setuptools prints its progress on stdout: the file names go to a file
        "import sys, pathlib; from setuptools import build_meta as b; "
        "out, names = sys.argv[1:3]; "  # build_meta rewrites sys.argv
        "w = b.build_wheel(out); s = b.build_sdist(out); "
        "pathlib.Path(names).write_text(w + '\\n' + s)"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(out), str(names)],
        cwd=src,
        capture_output=True,
        check=True,
        timeout=300,
    )
    wheel, sdist = names.read_text().split()
    return out / wheel, out / sdist


def requirements(metadata: str) -> list[Requirement]:
    return [Requirement(r) for r in email.message_from_string(metadata).get_all("Requires-Dist")]


def metadata_of(wheel: Path, sdist: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        wheel_meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        from_wheel = zf.read(wheel_meta).decode()
    with tarfile.open(sdist) as tf:
        member = next(
            m for m in tf.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
        )
        fh = tf.extractfile(member)
        assert fh is not None
        from_sdist = fh.read().decode()
    return {"wheel METADATA": from_wheel, "sdist PKG-INFO": from_sdist}


def torch_pins(reqs: list[Requirement]) -> list[str]:
    """Requirements on torch that a user's torch could fail: anything but a lower bound."""
    bad = []
    for req in reqs:
        lower_bound = not req.url and all(s.operator == ">=" for s in req.specifier)
        if canonicalize_name(req.name) in TORCH_FAMILY and not lower_bound:
            bad.append(str(req))
    return bad


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build(tmp_path_factory.mktemp("build"))


def test_built_metadata_has_no_torch_pin(built: tuple[Path, Path]) -> None:
    for where, text in metadata_of(*built).items():
        reqs = requirements(text)
        torch_reqs = [r for r in reqs if canonicalize_name(r.name) == "torch"]
        assert torch_reqs, f"{where}: expected torch (with a floor) in the train/trl extras"
        assert torch_pins(reqs) == [], f"{where} pins torch: {torch_pins(reqs)}"


def test_the_pin_check_catches_pins() -> None:
    reqs = [
        Requirement(r) for r in ('torch==2.13.0; extra == "trl"', "torch>=2.6,<2.9", "torch~=2.6")
    ]
    assert len(torch_pins(reqs)) == 3
    assert torch_pins([Requirement("torch>=2.6"), Requirement("numpy==2.0")]) == []


def test_constraints_file_keeps_the_ci_pin() -> None:
    lines = [
        line.split("#")[0].strip() for line in (REPO / "constraints.txt").read_text().splitlines()
    ]
    assert "torch==2.13.0" in lines


# ------------------------------------------------------------------ a real (offline) install


def fake_wheel(where: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal valid wheel holding one empty module."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = where / f"{dist}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name.replace('-', '_')}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}.dist-info/METADATA": meta,
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{n},,\n" for n in files) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for n, text in files.items():
            zf.writestr(n, text)
        zf.writestr(f"{dist}.dist-info/RECORD", record)
    return path


def satisfying(spec: SpecifierSet) -> str:
    """A plain version inside `spec` (the project's deps only use >=, <, ==)."""
    candidates = [s.version for s in spec if s.operator in (">=", "==")] or ["1.0"]
    for v in sorted(candidates, key=Version, reverse=True):
        if Version(v) in spec:
            return v
    raise AssertionError(f"no simple version satisfies {spec}")


@pytest.mark.slow
@pytest.mark.integration
def test_installing_the_trl_extra_keeps_a_users_cuda_torch(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    wheel, _ = built
    house = tmp_path / "wheelhouse"
    house.mkdir()
    user_torch = "2.7.1+cu126"  # what a GPU user has: another version, a local CUDA tag
    fake_wheel(house, "torch", user_torch)
    env_reqs = [r for r in requirements(metadata_of(*built)["wheel METADATA"])]
    wanted = {"trl"}
    stubs: dict[str, SpecifierSet] = {}
    for req in env_reqs:
        active = req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted)
        if active and canonicalize_name(req.name) != "torch":
            key = canonicalize_name(req.name)
            stubs[key] = stubs.get(key, SpecifierSet()) & req.specifier
    for name, spec in stubs.items():
        fake_wheel(house, name, satisfying(spec))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    pip += ["--find-links", str(house)]
    subprocess.run([*pip, "torch"], env=env, check=True, timeout=300)
    done = subprocess.run(
        [*pip, f"{wheel}[trl]"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "list", "--format", "freeze"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"torch=={user_torch}" in listed.splitlines(), listed
    assert any(line.startswith("frontier-rft==") for line in listed.splitlines())
    assert any(line.startswith("trl==") for line in listed.splitlines())
