"""Which code ran a bench run, as its record names it (issue 83, item 8).

A record used to name the commit of whatever git repository enclosed the package: from a
copy of `src/` inside another repository, it carried that repository's commit. Now the commit
is recorded only when the package runs from frontier-rft's own checkout: the repository's top
holds a pyproject.toml whose [project] name is frontier-rft, and the package is that
checkout's `src/frontier_rft`. Anywhere else (an installed wheel, a copy inside another
repository) the record carries a content hash of the package's source instead, and `source`
says which of the two it is.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["PACKAGE_NAME", "code_info", "frontier_checkout", "source_digest"]

PACKAGE_NAME = "frontier-rft"
"""The distribution name a checkout's pyproject.toml must give."""
_PROJECT_NAME = re.compile(
    r"^\[project\][ \t]*\n(?:(?!\[).*\n)*?name\s*=\s*[\"']([^\"']+)[\"']", re.M
)


def _git(where: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def frontier_checkout(package: Path) -> Path | None:
    """The top of frontier-rft's git checkout that `package` (the frontier_rft directory) is
    the `src/frontier_rft` of; None where it is not one (no git, another repository)."""
    top = _git(package, "rev-parse", "--show-toplevel")
    if not top:
        return None
    root = Path(top).resolve()
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    name = _PROJECT_NAME.search(text)
    if name is None or name.group(1) != PACKAGE_NAME:
        return None
    if (root / "src" / "frontier_rft").resolve() != package.resolve():
        return None
    return root


def source_digest(package: Path) -> str:
    """sha256 over the package's .py files, each its path relative to `package` and its
    bytes: the same source gives the same digest wherever it lies."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        body = path.read_bytes()
        digest.update(f"{path.relative_to(package).as_posix()}\0{len(body)}\0".encode())
        digest.update(body)
    return digest.hexdigest()


def code_info(package: Path | None = None) -> dict[str, Any]:
    """The frontier_rft version running and which code it is: `source` "git" with its
    `commit` (and `dirty`: the checkout's src/ has uncommitted changes) when the package runs
    from frontier-rft's own checkout; else `source` "content hash" with `source_sha256`
    (`source_digest`), `commit` and `dirty` None."""
    from frontier_rft import __version__

    package = Path(__file__).resolve().parents[2] if package is None else package
    info: dict[str, Any] = {"version": __version__, "commit": None, "dirty": None}
    root = frontier_checkout(package)
    head = None if root is None else _git(root, "rev-parse", "HEAD")
    status = None if root is None else _git(root, "status", "--porcelain", "--", "src")
    if root is None or not head or status is None:
        info.update(source="content hash", source_sha256=source_digest(package))
        return info
    info.update(source="git", commit=head, dirty=bool(status))
    return info
