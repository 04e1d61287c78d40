"""What reading a TRL or verl log shares (shadow/foreign_logs.py reads them): its files,
bounded, and its cells.

- **Files**: the one file given or a directory's step files in step order (`step_files`:
  TRL's `completions_<step>.parquet`, verl's `<step>.jsonl` or `<step>.jsonl.gz`, a step in
  two files or compressed otherwise refused), each opened as text gunzipped where it is gzip
  (`open_text`), bounded by what it decompresses to (`MAX_GZIP_BYTES`) and by its longest line
  (`MAX_LINE_CHARS`). gzip is read for single JSON-lines and CSV files: an archive (tar, zip)
  or a gzipped parquet file is refused in one line that says how to unpack it (`packed`), as
  is anything that is not a regular file (`regular_file`).
- **Cells**: a logged step number, a number (CSV gives text), a completion's texts (a
  conversation's message contents), a prompt's digest.

Every problem is one ValueError line naming the file, the problem and the fix.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from frontier_rft.core.jsonsafe import jsonl_records

__all__ = [
    "GZIP_MAGIC",
    "HOW",
    "MAX_GZIP_BYTES",
    "MAX_LINE_CHARS",
    "MAX_ROWS",
    "STEP_FILE",
    "STEP_NAMES",
    "Read",
    "bounded_lines",
    "completion_texts",
    "inner_suffix",
    "json_lines",
    "listing",
    "logged_number",
    "logged_step",
    "open_log",
    "open_text",
    "packed",
    "regular_file",
    "step_files",
    "text_digest",
    "unpacked",
]

MAX_ROWS = 1 << 23
"""Most completions read from one TRL or verl log: 8.4M (a 20k-prompt, 8-rollout, 2-epoch
run is 320k). Kept as arrays and digests, about 80 bytes a completion at the peak (groups
of 8, measured), so under 1 GiB."""
MAX_GZIP_BYTES = 1 << 34
"""Most bytes a TRL or verl log's file is read to (decompressed, blank lines included): 16
GiB, beyond any log of MAX_ROWS completions a replay reads; a small .gz that expands without
end is refused at it, not read for hours."""
MAX_LINE_CHARS = 1 << 24
"""Longest line (or wandb table file) read."""
STEP_FILE = {
    "trl": re.compile(r"completions_(\d+)\.parquet((?:\.[^.]+)*)", re.IGNORECASE),
    "verl": re.compile(r"(\d+)\.jsonl((?:\.[^.]+)*)", re.IGNORECASE),
}
"""A step's file in a TRL completions/ or a verl rollout dir, and what follows its suffix
(`.gz`: verl's is read gunzipped; anything else is refused in one line)."""
STEP_NAMES = {"trl": "completions_<step>.parquet", "verl": "<step>.jsonl or <step>.jsonl.gz"}
"""The step files a directory of each format is read from, for messages."""
READ_GZIP = "gzip is read for single JSON-lines and CSV files"
"""What gzip is read for, in the refusal of what it is not read for."""
_ARCHIVE_NAMES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")
HOW = {
    "trl": "log it with GRPOConfig(log_completions=True, logging_steps=1) (docs/shadow.md)",
    "verl": "dump it with trainer.rollout_data_dir=DIR (docs/shadow.md)",
}
"""How each trainer writes the log a replay reads: the fix its refusals end in."""
Read = tuple[int, Any, float, bytes, list[str] | None]
"""One completion as read, before its length is counted: its step, its prompt (the log's
cell), its reward, its text's digest and its texts (one, or a conversation's message
contents; None: no text), as foreign_logs' `Row` with the texts in place of the length."""
GZIP_MAGIC = b"\x1f\x8b"
"""A gzip stream's first two bytes (the ledger keeps reward logs as .jsonl.gz)."""


def regular_file(path: str | os.PathLike[str], fix: str) -> None:
    """A ValueError unless `path` is a regular file: a FIFO would block the read and a pipe
    or device has no size to bound it by."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror}); {fix}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} is not a regular file (a pipe, FIFO or device); copy the log to a file "
            "and replay that"
        )


class _Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from it (decompressed ones for a .gz) and
    refuses, in one ValueError line, to read past `max_bytes` or a gzip stream cut off or
    damaged (zlib's EOFError or BadGzipFile would otherwise surface as a traceback)."""

    def __init__(self, raw: Any, path: object, max_bytes: int | None, fix: str) -> None:
        super().__init__()
        self.raw, self.path, self.max_bytes, self.fix = raw, path, max_bytes, fix
        self.read_so_far = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            n = self.raw.readinto(buffer)
        except EOFError:
            raise ValueError(
                f"{self.path}: not a whole gzip file: cut off before its end (truncated, e.g. "
                "copied while it was written); gunzip -t it, or replay the plain log"
            ) from None
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise ValueError(
                f"{self.path}: not a whole gzip file ({str(exc)[:80]}); gunzip -t it, or "
                "replay the plain log"
            ) from None
        self.read_so_far += n or 0
        if self.max_bytes is not None and self.read_so_far > self.max_bytes:
            raise ValueError(
                f"{self.path}: decompresses to more than the {self.max_bytes:,} bytes a replay "
                f"reads (blank lines count){'; ' + self.fix if self.fix else ''}"
            )
        return n or 0

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_text(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    fix: str = "",
    newline: str | None = None,
) -> tuple[IO[str], Callable[[], int]]:
    """A text stream of the log at `path`, gunzipped where it is gzip-compressed, and a
    function giving the bytes read from it so far (decompressed ones for a .gz). With
    `max_bytes`, reading past that many (decompressed) bytes, blank lines included, is a
    ValueError ending in `fix`, so a small .gz cannot expand without end; a gzip stream cut
    off or damaged is a ValueError naming it, not zlib's traceback."""
    with open(path, "rb") as head:
        gzipped = head.read(2) == GZIP_MAGIC
    raw: Any = gzip.open(path, "rb") if gzipped else open(path, "rb")  # noqa: SIM115
    counted = _Counted(raw, path, max_bytes, fix)
    text = io.TextIOWrapper(
        io.BufferedReader(counted), encoding="utf-8", errors="replace", newline=newline
    )
    return text, lambda: counted.read_so_far


def packed(path: str | os.PathLike[str]) -> str | None:
    """Why the file at `path` is not read as a log (an archive, a gzipped parquet file: in
    one line, with how to unpack it), from its name or its first (decompressed) bytes; None
    for a file read as it is or gunzipped."""
    name, gzipped = Path(path).name.lower(), False
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
            if gzipped := head[:2] == GZIP_MAGIC:
                fh.seek(0)
                with gzip.open(fh) as inner:
                    head = inner.read(512)
    except (OSError, EOFError, zlib.error):
        head = b""  # unreadable or cut off: the read says why
    if head[257:262] == b"ustar" or name.endswith(_ARCHIVE_NAMES[:-1]):
        return (
            f"{path}: a tar archive; {READ_GZIP}, not archives of them: unpack it "
            f"(tar xzf {path}) and replay the directory it holds (TRL's completions/, verl's "
            "rollout_data_dir)"
        )
    if head[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        return (
            f"{path}: a zip archive; {READ_GZIP}, not archives of them: unzip it and replay "
            "the directory it holds (TRL's completions/, verl's rollout_data_dir)"
        )
    if (gzipped and head[:4] == b"PAR1") or name.endswith(".parquet.gz"):
        return (
            f"{path}: a gzipped parquet file; {READ_GZIP} (a parquet file is read by its "
            f"columns, which a gzip stream cannot seek to): gunzip it and replay the .parquet"
        )
    return None


def unpacked(path: Path, fix: str) -> None:
    """A ValueError unless `path` is a regular file read as it is or gunzipped (`packed`)."""
    regular_file(path, fix)
    if (why := packed(path)) is not None:
        raise ValueError(why)


def inner_suffix(path: Path) -> str:
    """The file's suffix under a .gz (`table.csv.gz`: .csv), lower case."""
    name = path.name.lower().removesuffix(".gz")
    return ".table.json" if name.endswith(".table.json") else Path(name).suffix


def listing(directory: Path) -> list[Path]:
    try:
        return sorted(f for f in directory.iterdir() if f.is_file())
    except OSError as exc:
        raise ValueError(f"{directory}: cannot list it ({exc.strerror})") from None


def step_files(path: Path, fmt: str) -> list[Path]:
    """The log's files in step order (a directory) or the one file; a step file compressed
    otherwise than as read (`STEP_FILE`), or a step in two files, is refused in one line."""
    if not path.exists():
        raise ValueError(f"{path} does not exist; {HOW[fmt]}")
    if not path.is_dir():
        unpacked(path, HOW[fmt])
        return [path]
    if fmt == "trl" and (path / "completions").is_dir():
        path = path / "completions"  # the trainer's output_dir
    numbered: dict[int, Path] = {}
    for f in listing(path):
        m = STEP_FILE[fmt].fullmatch(f.name)
        if m is None:
            continue
        step, tail = int(m.group(1)), m.group(2).lower()
        if tail == ".gz" and fmt == "trl":
            raise ValueError(
                f"{f}: a gzipped parquet file; {READ_GZIP} (a parquet file is read by its "
                f"columns, which a gzip stream cannot seek to): gunzip them (gunzip "
                f"{path}/*.parquet.gz) and replay the directory"
            )
        if tail not in ("", ".gz"):
            raise ValueError(
                f"{f}: a {fmt} log's directory is read as {STEP_NAMES[fmt]} files ({READ_GZIP}): "
                f"decompress it to {m.group(0)[: m.start(2)]} beside the others"
            )
        if step in numbered:
            raise ValueError(
                f"{path}: step {step} is in both {numbered[step].name} and {f.name}; keep one "
                "of them (the same step logged twice?)"
            )
        numbered[step] = f
    if not numbered:
        raise ValueError(f"{path}: holds no {STEP_NAMES[fmt]} file; {HOW[fmt]}")
    return [numbered[step] for step in sorted(numbered)]


def json_lines(file: Path, fix: str = "") -> Iterator[tuple[str, Any]]:
    """Each non-blank line of a JSONL file (gunzipped where it is a .gz, at most
    MAX_GZIP_BYTES of it) with where it is, parsed, bounded."""
    fh, _ = open_log(file)
    with fh:
        yield from jsonl_records(fh, file, max_chars=MAX_LINE_CHARS, max_depth=64, fix=fix)


def open_log(file: Path, newline: str | None = None) -> tuple[IO[str], Callable[[], int]]:
    """open_text with the bound on what a .gz log may decompress to."""
    first = "zcat LOG | head -n LINES > part.jsonl, and replay that"
    return open_text(file, MAX_GZIP_BYTES, first, newline)


def bounded_lines(fh: Any, file: Path) -> Iterator[str]:
    """The lines of a text file, each read with at most MAX_LINE_CHARS in memory; a longer
    one is a ValueError (a 1 GiB one-line file is refused, not read whole)."""
    number = 0
    while line := fh.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(
                f"{file}: line {number} is longer than {MAX_LINE_CHARS:,} characters; "
                "not a completions table"
            )
        yield line


def logged_step(value: object, where: str, fmt: str) -> int:
    step = logged_number(value)
    if step is None or not step.is_integer() or not 0 <= step <= 1 << 53:
        raise ValueError(f"{where}: step must be an int >= 0, got {str(value)[:40]}; {HOW[fmt]}")
    return int(step)


def logged_number(value: object) -> float | None:
    """A logged number (CSV gives text); None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def completion_texts(text: object) -> list[str] | None:
    """A completion's texts: its text, or a conversation's message contents (its length is
    theirs summed); None when it holds no text `count` can read."""
    if isinstance(text, str):
        return [text]
    if isinstance(text, list) and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) for m in text
    ):
        return [m["content"] for m in text]
    return None


def text_digest(prompt: object) -> bytes:
    """A prompt's key: its text, or a conversation's canonical JSON, hashed (bounded memory)."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
