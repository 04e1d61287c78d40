"""Reading a selector file as untrusted input: bounded, pickle-free, one error type.

A file written by `save_selector` is a zip of uncompressed `.npy` members: `__header__`
(UTF-8 JSON) and one member per array the header references. The reader checks, in this
order and before reading any array data:

- the zip's central directory: at most MAX_MEMBERS members, unique `.npy` names, every
  member stored uncompressed and unencrypted (so nothing is ever inflated: a zip bomb
  member is refused by its header alone), declared sizes summing to no more than the file;
- the header member: at most MAX_HEADER_BYTES, JSON nesting at most MAX_JSON_DEPTH and at
  most MAX_JSON_VALUES values, all checked on the text before it is parsed, so loading a
  header costs at most about 8x its size plus 256 bytes per value (< 16 MiB) in memory;
- the member list: exactly the header plus the arrays the header references;
- each array's `.npy` header: a plain numeric, bool or text dtype (never object, so never
  pickle), and a shape whose byte size equals the member's size.

Any violation raises CheckpointError (a ValueError) naming the problem.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from frontier_rft.core.jsonsafe import json_shape, loads_bounded

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_MEMBERS",
    "CheckpointError",
    "array_refs",
    "read_checkpoint",
]

HEADER = "__header__"
MAX_HEADER_BYTES = 8 << 20
"""Largest accepted JSON header (the state tree without its arrays), in bytes (real ones:
a few KB; the arrays and prompt texts are members of their own)."""
MAX_JSON_VALUES = 1 << 16
"""Most JSON values (containers and scalars) in the header: each parsed value costs up to a
few hundred bytes whatever its text, so this bounds what a small header can ask for."""
MAX_JSON_DEPTH = 64
"""Deepest accepted nesting of JSON arrays/objects in the header (state trees use < 10)."""
MAX_MEMBERS = 1 << 16
"""Most members a selector file may hold."""
_ARRAY_KINDS = "biufU"  # bool, int, uint, float, unicode text (prompts, keys)
# What zipfile and numpy raise on corrupt members (NotImplementedError: "zip file version
# 22.6", RuntimeError: an encryption flag in the local header only).
_UNREADABLE = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    ValueError,
    EOFError,
    OSError,
    SyntaxError,
    NotImplementedError,
    RuntimeError,
)
_CORRUPT = tuple(e for e in _UNREADABLE if e is not OSError)


class CheckpointError(ValueError):
    """A selector file that cannot be loaded: unreadable, malformed, tampered, or saved for
    another selector, version or pool. The message names the file and the problem."""


def array_refs(tree: Any) -> Iterator[Any]:
    """The values of every `{"__array__": key}` reference in a parsed header tree."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if set(node) == {"__array__"}:
                yield node["__array__"]
            else:
                stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The parsed header and the arrays it references; OSError for I/O, else CheckpointError."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # a device or pipe could be endless
        raise CheckpointError(f"{path}: not a regular file, so not a frontier_rft selector file")
    with open(path, "rb") as fh:
        size = path.stat().st_size
        try:
            archive = zipfile.ZipFile(fh)
        except _CORRUPT as exc:  # OSError here is the disk's, not the file's: it propagates
            raise CheckpointError(
                f"{path}: not a readable frontier_rft selector file ({exc})"
            ) from exc
        with archive:
            members = _members(path, archive, size)
            if HEADER not in members:
                raise CheckpointError(f"{path}: not a frontier_rft selector file (no header)")
            header = _parse_header(path, _read_npy(path, archive, members[HEADER]))
            refs = list(array_refs(header))
            if not all(isinstance(r, str) for r in refs):
                raise CheckpointError(f"{path}: malformed header (array reference not a string)")
            missing = sorted(set(refs) - set(members))
            extra = sorted(set(members) - set(refs) - {HEADER})
            if missing:
                raise CheckpointError(f"{path}: header references missing array {missing[0]!r}")
            if extra:
                raise CheckpointError(f"{path}: unexpected member {extra[0]!r}")
            arrays = {key: _read_npy(path, archive, members[key]) for key in set(refs)}
    return header, arrays


def _members(path: Path, archive: zipfile.ZipFile, size: int) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise CheckpointError(f"{path}: {len(infos)} members, more than {MAX_MEMBERS}")
    members: dict[str, zipfile.ZipInfo] = {}
    declared = 0
    for info in infos:
        name = info.filename
        if not name.endswith(".npy") or name[:-4] in members:
            raise CheckpointError(f"{path}: unexpected or repeated member {name!r}")
        if (
            info.compress_type != zipfile.ZIP_STORED
            or info.flag_bits & 0x1
            or info.compress_size != info.file_size
        ):
            # save_selector never compresses: refusing here means nothing is ever inflated.
            raise CheckpointError(
                f"{path}: member {name!r} is compressed or encrypted; selector files hold "
                "uncompressed members only"
            )
        declared += info.file_size
        members[name[:-4]] = info
    if declared > size:  # stored members cannot outgrow the file unless they overlap
        raise CheckpointError(f"{path}: members declare {declared} bytes, the file has {size}")
    return members


def header_problem(text: bytes) -> str | None:
    """Why a header text would be refused on load (size, depth, values), or None."""
    if len(text) > MAX_HEADER_BYTES:
        return f"{len(text)} bytes, above the {MAX_HEADER_BYTES} a selector file may hold"
    depth, values = json_shape(text.decode("utf-8"))
    if depth > MAX_JSON_DEPTH:
        return f"nested {depth} deep, above the {MAX_JSON_DEPTH} a selector file may hold"
    if values > MAX_JSON_VALUES:
        return f"{values} JSON values, above the {MAX_JSON_VALUES} a selector file may hold"
    return None


def _read_npy(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    name = info.filename
    limit = MAX_HEADER_BYTES + 256 if name == f"{HEADER}.npy" else None
    if limit is not None and info.file_size > limit:
        raise CheckpointError(f"{path}: header of {info.file_size} bytes exceeds {limit}")
    try:
        data = archive.read(info)  # stored: reads exactly file_size bytes, CRC-checked
        stream = io.BytesIO(data)
        version = npy_format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npy_format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except _UNREADABLE as exc:
        raise CheckpointError(f"{path}: member {name!r} is unreadable ({exc})") from exc
    if dtype.kind not in _ARRAY_KINDS or dtype.hasobject or dtype.fields is not None:
        raise CheckpointError(f"{path}: member {name!r} has unsupported dtype {dtype}")
    if dtype.subdtype is not None or any(d < 0 for d in shape):
        raise CheckpointError(f"{path}: member {name!r} has a malformed array header")
    count = int(np.prod(shape, dtype=object))
    body = len(data) - stream.tell()
    if count * dtype.itemsize != body:
        raise CheckpointError(
            f"{path}: member {name!r} declares {count} x {dtype.itemsize} bytes but holds {body}"
        )
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return np.array(flat.reshape(shape, order="F" if fortran else "C"))


def _parse_header(path: Path, raw: np.ndarray) -> dict[str, Any]:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise CheckpointError(f"{path}: malformed header (not a byte string)")
    try:
        text = raw.tobytes().decode("utf-8")
        header = loads_bounded(
            text, max_chars=MAX_HEADER_BYTES, max_depth=MAX_JSON_DEPTH, max_values=MAX_JSON_VALUES
        )
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise CheckpointError(f"{path}: malformed header ({exc})") from exc
    if not isinstance(header, dict) or not {"format_version", "selector", "state"} <= set(header):
        raise CheckpointError(
            f"{path}: malformed header (expected an object with format_version, selector, state)"
        )
    return header
