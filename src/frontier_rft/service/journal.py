"""Durable storage of the selector service: atomic checkpoints plus a write-ahead log.

Layout of a checkpoint directory:

    LOCK            flock-ed by the one live service that owns the directory
    CURRENT         {"seq": S, "selector": "ckpt-S.npz", "service": "ckpt-S.json"}
    ckpt-<S>.npz    the selector after operation S (save_selector; load_selector reads it)
    ckpt-<S>.json   the service's own state after operation S
    wal-<F>.jsonl   operations F, F+1, ... one JSON object per line, each with its "seq"

Every file is written to a temporary name, fsynced and renamed, and a checkpoint exists
only once CURRENT names it, so a crash mid-checkpoint leaves the previous one. Resuming
is: load the checkpoint CURRENT names, then replay the logged operations after S in
order. A record is acknowledged only after it is in the log, so replay never loses one.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.jsonsafe import load_json_file, loads_bounded
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.core.selector import Selector
from frontier_rft.selectors.persistence import save_selector

__all__ = ["DirLock", "Journal", "decode_array", "encode_array", "read_log"]

_SEGMENT = re.compile(r"^wal-(\d{12})\.jsonl$")
_CHECKPOINT = re.compile(r"^ckpt-(\d{12})\.(npz|json)$")


def encode_array(values: NDArray[Any]) -> str:
    """An int64/float64 array as base64 of its little-endian bytes: ~10x faster to write
    than a JSON list of numbers, and exact (floats keep every bit)."""
    kind = "<i8" if values.dtype.kind in "iu" else "<f8"
    return (
        kind + ":" + base64.b64encode(np.ascontiguousarray(values, dtype=kind).tobytes()).decode()
    )


def decode_array(value: Any) -> NDArray[Any]:
    """Inverse of encode_array; a plain JSON list (older logs) is accepted too."""
    if isinstance(value, str):
        kind, _, data = value.partition(":")
        if kind not in ("<i8", "<f8"):
            raise ValueError(f"unknown array encoding {kind!r} in the log")
        out: NDArray[Any] = np.frombuffer(base64.b64decode(data), dtype=kind).copy()
        return out
    return np.asarray(value)


def _segments(directory: Path) -> list[tuple[int, Path]]:
    """WAL segments as (first seq, path), oldest first."""
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _SEGMENT.match(p.name))]
    return sorted(found)


MAX_RECORD_BYTES = 1 << 28
"""Longest log line read back (an update's arrays are base64: ~11 bytes a rollout)."""
MAX_RECORD_VALUES = 1 << 23
"""Most JSON values one record may hold (older logs wrote arrays as JSON lists)."""


def _parse_record(line: bytes) -> dict[str, Any] | None:
    """A log line's record, or None when it is not one (not JSON, too deep, no seq)."""
    try:
        record = loads_bounded(
            line.decode("utf-8"),
            max_chars=MAX_RECORD_BYTES,
            max_depth=16,
            max_values=MAX_RECORD_VALUES,
        )
    except ValueError:  # UnicodeDecodeError is one too
        return None
    if not isinstance(record, dict):
        return None
    seq = record.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool):
        return None
    return record


def _read_segment(path: Path, *, repair: bool) -> Iterator[dict[str, Any]]:
    """Records of one segment; a torn final line (crash mid-append) is skipped or cut off.

    A torn line was never acknowledged: acknowledgement waits for the whole line. A line
    longer than MAX_RECORD_BYTES, or an unreadable one with records after it, is corruption:
    a ValueError naming the file, never a MemoryError or RecursionError.
    """
    good = 0
    with open(path, "rb") as fh:
        while line := fh.readline(MAX_RECORD_BYTES + 1):
            if len(line) > MAX_RECORD_BYTES:
                raise ValueError(
                    f"{path}: a log line longer than {MAX_RECORD_BYTES:,} bytes (corrupted)"
                )
            if line == b"\n":
                raise ValueError(f"{path}: empty line inside the log (corrupted)")
            # no newline yet = torn
            record = _parse_record(line[:-1]) if line.endswith(b"\n") else None
            if record is None:
                # Only the tail may be torn: a bad line followed by good ones is corruption.
                if any(rest.strip() for rest in iter(lambda: fh.read(1 << 20), b"")):
                    raise ValueError(f"{path}: unreadable record in the middle of the log")
                break
            good += len(line)
            yield record
        size = fh.seek(0, os.SEEK_END)
    if repair and good < size:
        with open(path, "r+b") as fh:
            fh.truncate(good)
            fh.flush()
            os.fsync(fh.fileno())


def read_log(directory: str | os.PathLike[str], after: int = 0) -> list[dict[str, Any]]:
    """Logged operations with seq > `after`, in order (torn tails skipped, gaps raise)."""
    out: list[dict[str, Any]] = []
    for _, path in _segments(Path(directory)):
        out.extend(r for r in _read_segment(path, repair=False) if r["seq"] > after)
    _check_contiguous(out, after, directory)
    return out


def _check_contiguous(records: list[dict[str, Any]], after: int, where: object) -> None:
    for i, record in enumerate(records):
        if record["seq"] != after + 1 + i:
            raise ValueError(
                f"{where}: the log jumps from operation {after + i} to {record['seq']}; "
                "a segment is missing, so the service cannot resume exactly"
            )


class DirLock:
    """An exclusive flock on `<dir>/LOCK`: one live service per checkpoint directory.

    The kernel drops the lock when its process dies, so a killed service never leaves a
    stale lock; a restarted one waits up to `timeout_s` for the old process to go.
    """

    def __init__(self, directory: Path, timeout_s: float):
        self._fh: IO[bytes] | None = None
        try:
            import fcntl
        except ImportError:  # no flock (Windows): run unlocked
            return
        fh = open(directory / "LOCK", "a+b")  # noqa: SIM115 - held until release()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    fh.close()
                    raise RuntimeError(
                        f"{directory} is in use by another live selector service; stop it "
                        "first or give this service its own checkpoint_dir"
                    ) from None
                time.sleep(0.05)
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing the file releases the flock
            self._fh = None


class Journal:
    """Checkpoints and the write-ahead log of one service, in one directory it owns."""

    def __init__(self, directory: str | os.PathLike[str], *, sync: bool, lock_timeout_s: float):
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ValueError(
                f"checkpoint_dir {directory} is (or lies under) a file; give a directory"
            ) from None
        self.sync = sync
        """fsync every acknowledged record (else only flush it to the OS)."""
        self._lock = DirLock(self.directory, lock_timeout_s)
        self._wal: IO[bytes] | None = None
        self.checkpoint_seq = -1
        self.records_since_checkpoint = 0
        self.appended = 0
        """Records appended by this process."""
        self.synced = 0
        """Of those, how many are known to be on disk (fsynced)."""

    # ------------------------------------------------------------------ reading
    def latest(self) -> tuple[int, Path, dict[str, Any]] | None:
        """(seq, selector file, service state) of the current checkpoint; None if there is none."""
        current = self.directory / "CURRENT"
        if not current.exists():
            return None
        pointer = load_json_file(current, "a checkpoint pointer", max_chars=4096, max_depth=2)
        fields = pointer if isinstance(pointer, dict) else {}
        names = (fields.get("selector"), fields.get("service"))
        seq = fields.get("seq")
        # Files beside CURRENT only: the pointer is data on disk, not a path to follow.
        if not (
            isinstance(seq, int)
            and not isinstance(seq, bool)
            and seq >= 0
            and all(isinstance(n, str) and _CHECKPOINT.fullmatch(n) for n in names)
        ):
            raise ValueError(f"{current} does not name a checkpoint ({str(pointer)[:80]})")
        service = load_json_file(self.directory / str(names[1]), "a service checkpoint")
        if not isinstance(service, dict):
            raise ValueError(f"{self.directory / str(names[1])}: not a service checkpoint object")
        self.checkpoint_seq = seq
        return self.checkpoint_seq, self.directory / str(names[0]), service

    def records_after(self, seq: int) -> list[dict[str, Any]]:
        """Logged operations after `seq`, cutting torn tails off the files for good."""
        out: list[dict[str, Any]] = []
        for _, path in _segments(self.directory):
            out.extend(r for r in _read_segment(path, repair=True) if r["seq"] > seq)
        _check_contiguous(out, seq, self.directory)
        return out

    # ------------------------------------------------------------------ writing
    def append(self, record: dict[str, Any], *, durable: bool) -> None:
        """Append one operation; with durable=True it is on disk when this returns.

        fsync covers every earlier write of the file, so un-synced records (selects)
        before a synced one (an update) become durable with it.
        """
        if self._wal is None:
            path = self.directory / f"wal-{record['seq']:012d}.jsonl"
            self._wal = open(path, "ab")  # noqa: SIM115 - closed at the next checkpoint
        self._wal.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
        self._wal.flush()
        self.appended += 1
        if durable and self.sync:
            os.fsync(self._wal.fileno())
            self.synced = self.appended
        self.records_since_checkpoint += 1

    def commit(self) -> None:
        """Make every record appended so far durable: one fsync for a group of records.

        Safe to run in another thread while records are appended: it covers those
        appended before it started (`synced` says how many).
        """
        upto = self.appended
        if self._wal is not None and self.sync:
            os.fsync(self._wal.fileno())
        self.synced = max(self.synced, upto)

    def checkpoint(
        self, seq: int, selector: Selector, service_state: dict[str, Any], *, keep_history: bool
    ) -> Path:
        """Atomically make (selector, service state) after operation `seq` the resume point."""
        if self._wal is not None:
            self._wal.flush()
            os.fsync(self._wal.fileno())
            self._wal.close()
            self._wal = None
        self.synced = self.appended
        stem = f"ckpt-{seq:012d}"
        save_selector(selector, self.directory / f"{stem}.npz")
        body = json.dumps(service_state).encode("utf-8")
        atomic_write_bytes(self.directory / f"{stem}.json", lambda fh: fh.write(body))
        pointer = {"seq": seq, "selector": f"{stem}.npz", "service": f"{stem}.json"}
        data = json.dumps(pointer).encode("utf-8")
        atomic_write_bytes(self.directory / "CURRENT", lambda fh: fh.write(data))
        self.checkpoint_seq = seq
        self.records_since_checkpoint = 0
        if not keep_history:  # everything older is superseded by the new checkpoint
            for _, path in _segments(self.directory):
                path.unlink()
            for path in self.directory.iterdir():
                m = _CHECKPOINT.match(path.name)
                if m and int(m.group(1)) != seq:
                    path.unlink()
        return self.directory / f"{stem}.npz"

    def close(self) -> None:
        if self._wal is not None:
            self._wal.flush()
            os.fsync(self._wal.fileno())
            self._wal.close()
            self._wal = None
        self._lock.release()
