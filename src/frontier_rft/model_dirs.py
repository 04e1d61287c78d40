"""Model names that are local paths: checked on disk before anything asks a model hub.

transformers treats every name it cannot find on disk as a hub repo id, so a mistyped local
path costs a round of network retries and ends in a message about the hub. A name is read
as a local path when it cannot be a hub id or plainly means a folder here: it starts with
`/`, `~` or `.`, holds a backslash or more than one `/`, or is `first/rest` where `first`
is a folder in the working directory (hub ids are `org/name`, one slash).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["looks_local", "model_dir_problem"]

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""The shape of a hub repo id, `org/name` (letters, digits, `_`, `.`, `-`)."""


def looks_local(name: str) -> bool:
    """Whether model name `name` reads as a filesystem path rather than a hub repo id."""
    if name.startswith(("/", "~", ".")) or "\\" in name:
        return True
    if "/" not in name:
        return False  # `gpt2`: an old-style hub id, or a folder here (then it exists)
    return not _HUB_ID.fullmatch(name) or Path(name.split("/", 1)[0]).is_dir()


def model_dir_problem(
    path: str | os.PathLike[str], flag: str, markers: tuple[str, ...] = ("config.json",)
) -> str | None:
    """What is wrong with model directory `path` given as `flag`: 'FLAG PATH: no such
    directory' or 'FLAG PATH: not a model directory (no config.json)', or None when it holds
    one of `markers`. A relative path is shown with the folder it was resolved from."""
    p = Path(path)
    where = str(p) if p.is_absolute() else f"{p} (resolved from {Path.cwd()})"
    if not p.exists():
        return f"{flag} {where}: no such directory"
    if not p.is_dir() or not any((p / m).is_file() for m in markers):
        return f"{flag} {where}: not a model directory (no {' or '.join(markers)})"
    return None
