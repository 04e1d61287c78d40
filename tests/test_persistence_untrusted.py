"""Selector files as untrusted input: crafted and fuzzed files raise CheckpointError naming
the problem (never RecursionError, KeyError, AttributeError; never a pickle load, never an
inflated zip bomb), and temp files of killed saves are cleaned up by the next save/load."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontier_rft import TaskPool, load_selector, make_selector, save_selector
from frontier_rft.core import checkpoint_file, persistence
from frontier_rft.core.persistence import STALE_TEMP_SECONDS, CheckpointError, clean_stale_temps
from helpers import drive, world_pool

FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    sel = make_selector("bots", world_pool(), seed=1)
    drive(sel, steps=3)
    path = tmp_path / "sel.npz"
    save_selector(sel, path)
    return path


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _write(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def _header(path: Path) -> dict[str, Any]:
    raw = np.load(io.BytesIO(_members(path)["__header__.npy"]))
    header: dict[str, Any] = json.loads(raw.tobytes().decode("utf-8"))
    return header


def _with_header(path: Path, header: Any, out: Path | None = None) -> Path:
    members = _members(path)
    text = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    members["__header__.npy"] = _npy(np.frombuffer(text, dtype=np.uint8))
    _write(out or path, members)
    return out or path


# ------------------------------------------------------------------ crafted files
def test_a_deeply_nested_header_is_a_checkpoint_error(saved: Path) -> None:
    deep = b'{"format_version": 1, "selector": "bots", "state": ' + b"[" * 100_000 + b"]" * 100_000
    _with_header(saved, deep + b"}")
    with pytest.raises(CheckpointError, match="nesting depth"):
        load_selector(saved)


def test_an_oversized_header_is_refused_before_reading(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_file, "MAX_HEADER_BYTES", 1000)
    with pytest.raises(CheckpointError, match=r"header of \d+ bytes exceeds"):
        load_selector(saved)


def _peak_loading(path: Path, match: str) -> int:
    """Peak traced memory of a load_selector(path) that must fail with `match`."""
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=match):
            load_selector(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_header_limits_are_small_and_documented() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "contract.md").read_text(encoding="utf-8")
    assert checkpoint_file.MAX_HEADER_BYTES == 8 << 20 and "at most 8 MiB" in doc
    assert checkpoint_file.MAX_JSON_VALUES == 65536 and "65,536 values" in doc


def test_a_header_past_the_size_limit_is_refused_from_the_zip_directory(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A valid header just over the limit (the issue's attack was a 50 MB one costing ~1 GB)
    is refused by name before its bytes are read, let alone parsed."""
    limit = 1 << 20  # the same code path as 8 MiB, at an eighth of the test's size
    monkeypatch.setattr(checkpoint_file, "MAX_HEADER_BYTES", limit)
    pad = "x" * (limit + 1024)
    _with_header(saved, {"format_version": 1, "selector": "bots", "state": {"pad": pad}})
    assert _peak_loading(saved, rf"header of \d+ bytes exceeds {limit + 256}") < limit // 4


def test_a_header_of_many_small_values_is_refused_before_parsing(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tiny containers cost ~25x their text once parsed: their count is bounded first."""
    n = checkpoint_file.MAX_JSON_VALUES // 2 + 10  # each "{}," is an open and a comma
    state = b"[" + b",".join([b"{}"] * n) + b"]"  # ~100 KB of text, ~3 MB once parsed
    _with_header(saved, b'{"format_version": 1, "selector": "bots", "state": ' + state + b"}")

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the header was parsed")

    monkeypatch.setattr(json, "loads", never)
    peak = _peak_loading(saved, rf"holds about {2 * n + 4} values, more than 65536")
    assert peak < 16 << 20  # the scan's fixed working memory, not the ~3 MB parse


def test_loading_a_large_valid_header_costs_a_small_multiple_of_its_size(saved: Path) -> None:
    """A header within both limits (a 6 MiB string and 60,000 values) is parsed, and the load
    then fails on the state's content, with memory bounded by ~8x the header plus 256 bytes
    per value, not ~20x."""
    header = _header(saved)
    header["state"]["junk"] = ["x" * (6 << 20), [0.5] * 60_000]
    _with_header(saved, header)
    size = len(json.dumps(header))
    peak = _peak_loading(saved, "junk")
    assert peak < 8 * size + 256 * checkpoint_file.MAX_JSON_VALUES


def test_save_refuses_a_header_load_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sel = make_selector("uniform", world_pool())
    monkeypatch.setattr(checkpoint_file, "MAX_JSON_VALUES", 5)
    with pytest.raises(ValueError, match="JSON values, above the 5 a selector file may hold"):
        save_selector(sel, tmp_path / "sel.npz")
    assert not (tmp_path / "sel.npz").exists()


@pytest.mark.parametrize("referenced", [False, True])
def test_a_zip_bomb_member_is_never_inflated(saved: Path, referenced: bool) -> None:
    members = _members(saved)
    name = "s/state/algo/alpha.npy" if referenced else "extra.npy"
    members.pop(name, None)
    _write(saved, members)
    bomb = zipfile.ZipInfo(name)
    bomb.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(saved, "a") as zf, zf.open(bomb, "w", force_zip64=True) as member:
        for _ in range(64):  # 64 MiB of zeros, written in pieces, deflates to ~64 KiB
            member.write(bytes(1 << 20))
    assert saved.stat().st_size < 2 << 20
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(CheckpointError, match="compressed"):
            load_selector(saved)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20 and time.monotonic() - start < 10.0


def test_members_the_header_does_not_reference_are_refused(saved: Path) -> None:
    members = _members(saved)
    members["notes.txt"] = b"hello"
    _write(saved, members)
    with pytest.raises(CheckpointError, match=r"unexpected or repeated member 'notes\.txt'"):
        load_selector(saved)
    members.pop("notes.txt")
    members["s/extra.npy"] = _npy(np.zeros(3))
    _write(saved, members)
    with pytest.raises(CheckpointError, match="unexpected member 's/extra'"):
        load_selector(saved)


def test_an_array_referenced_twice_is_refused_before_copying(saved: Path) -> None:
    # One stored array named by many header fields would be copied once per name: a few
    # MB on disk could ask for any amount of memory.
    header = _header(saved)
    header["state"]["junk"] = [{"__array__": "s/state/algo/alpha"}] * 1000
    _with_header(saved, header)
    with pytest.raises(CheckpointError, match="'s/state/algo/alpha' is referenced more than"):
        load_selector(saved)


def test_load_selector_names_a_wrong_pool_or_collaborator(saved: Path) -> None:
    with pytest.raises(TypeError, match="pool must be a TaskPool or None, got str"):
        load_selector(saved, pool="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bots takes no judge"):
        load_selector(saved, judge=lambda prompts: prompts)


@pytest.mark.parametrize("target", ["", "."])
def test_saving_onto_a_directory_is_named_and_leaves_nothing(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sel = make_selector("uniform", TaskPool(num_tasks=2, prompts=["a", "b"]), seed=0)
    with pytest.raises(IsADirectoryError, match=r"save_selector: .*pass a file path"):
        save_selector(sel, target)
    assert list(tmp_path.iterdir()) == []


def test_a_seed_beyond_128_bits_saves_and_loads(tmp_path: Path) -> None:
    # e.g. int(sha256(...).hexdigest(), 16): the constructor and the loader agree on it.
    seed = 2**256 - 1
    sel = make_selector("uniform", TaskPool(num_tasks=4, prompts=list("abcd")), seed=seed)
    sel.select(2)
    save_selector(sel, tmp_path / "s.npz")
    assert load_selector(tmp_path / "s.npz").seed == seed
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*256\)"):
        make_selector("uniform", TaskPool(num_tasks=4, prompts=list("abcd")), seed=2**256)


def test_a_missing_array_reference_is_a_checkpoint_error(saved: Path) -> None:
    members = _members(saved)
    members.pop("s/state/algo/alpha.npy")
    _write(saved, members)
    with pytest.raises(CheckpointError, match="missing array 's/state/algo/alpha'"):
        load_selector(saved)


@pytest.mark.parametrize("field", ["base", "algo", "rng", "seed", "config"])
def test_a_state_missing_a_section_is_a_checkpoint_error(saved: Path, field: str) -> None:
    header = _header(saved)
    header["state"].pop(field)
    if field == "base":  # its arrays are no longer referenced: drop them too
        members = {k: v for k, v in _members(saved).items() if not k.startswith("s/state/base")}
        _write(saved, members)
    if field == "algo":
        members = {k: v for k, v in _members(saved).items() if not k.startswith("s/state/algo")}
        _write(saved, members)
    _with_header(saved, header)
    with pytest.raises(CheckpointError, match=field):
        load_selector(saved)


@pytest.mark.parametrize("where", ["header", "state", "algo"])
def test_unknown_fields_in_a_file_are_a_checkpoint_error_naming_them(
    saved: Path, where: str
) -> None:
    assert load_selector(saved).name == "bots"  # the file as saved loads
    header = _header(saved)
    part = {"header": header, "state": header["state"], "algo": header["state"]["algo"]}[where]
    part["written_by_v9"] = 1
    _with_header(saved, header)
    with pytest.raises(CheckpointError, match=r"unknown .*field.*'written_by_v9'"):
        load_selector(saved)


def test_object_arrays_are_refused_and_never_unpickled(saved: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (marker,))

    members = _members(saved)
    members["s/state/algo/alpha.npy"] = _npy(np.array([Exploit()], dtype=object), True)
    _write(saved, members)
    with pytest.raises(CheckpointError, match="unsupported dtype object"):
        load_selector(saved)
    assert not marker.exists()


def test_an_array_header_lying_about_its_size_is_refused(saved: Path) -> None:
    members = _members(saved)
    data = members["s/state/algo/alpha.npy"]
    members["s/state/algo/alpha.npy"] = data.replace(b"(90,)", b"(91,)")  # same length
    _write(saved, members)
    with pytest.raises(CheckpointError, match="declares 91 x 8 bytes"):
        load_selector(saved)


def test_a_tampered_state_fails_at_load_not_later(saved: Path) -> None:
    members = _members(saved)
    alpha = np.load(io.BytesIO(members["s/state/algo/alpha.npy"]))
    alpha[3] = -1.0  # a Beta parameter must be > 0
    members["s/state/algo/alpha.npy"] = _npy(alpha)
    _write(saved, members)
    with pytest.raises(CheckpointError, match="Beta parameters must be > 0"):
        load_selector(saved)


def test_a_foreign_pool_in_the_file_is_a_checkpoint_error(saved: Path) -> None:
    header = _header(saved)
    header["pool"]["num_tasks"] = "ninety"
    _with_header(saved, header)
    with pytest.raises(CheckpointError, match="num_tasks"):
        load_selector(saved)


def test_a_header_claiming_a_huge_pool_is_refused_before_allocating(tmp_path: Path) -> None:
    """Every selector's state holds per-task arrays: a header alone cannot make it build a
    pool of 1e9 tasks (8 GB per array) before the mismatch is found."""
    for name in ("bots", "prioritized", "mopps", "uniform"):
        path = tmp_path / f"{name}.npz"
        plugin = {"plugin": "regression"} if name == "bots" else {}  # a pool of ids alone
        save_selector(make_selector(name, TaskPool(num_tasks=50), seed=0, **plugin), path)
        header = _header(path)
        header["pool"] = {"num_tasks": 10**9}
        header["state"]["pool_fingerprint"] = TaskPool(num_tasks=10**9).fingerprint
        _with_header(path, header)
        with pytest.raises(CheckpointError, match="does not fit a TaskPool of 1000000000"):
            load_selector(path)


def test_a_device_or_pipe_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a regular file"):
        load_selector("/dev/zero")  # endless: reading it for a zip directory would never stop
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="not a regular file"):
        load_selector(fifo)


def test_an_unsupported_zip_version_is_a_checkpoint_error(saved: Path) -> None:
    raw = bytearray(saved.read_bytes())
    entry = raw.index(b"PK\x01\x02")  # first central directory entry
    raw[entry + 6 : entry + 8] = b"\xff\x00"  # "version needed to extract" 25.5
    saved.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="zip file version"):  # not NotImplementedError
        load_selector(saved)


# ------------------------------------------------------------------ fuzzed files
@FUZZ
@given(data=st.data())
def test_fuzzed_bytes_raise_checkpoint_error_or_load(saved: Path, data: st.DataObject) -> None:
    raw = bytearray(saved.read_bytes())
    for _ in range(data.draw(st.integers(1, 8), label="edits")):
        pos = data.draw(st.integers(0, len(raw) - 1), label="position")
        raw[pos] = data.draw(st.integers(0, 255), label="byte")
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw)), label="length")]
    fuzzed = saved.with_name("fuzzed.npz")
    fuzzed.write_bytes(bytes(raw))
    try:
        sel = load_selector(fuzzed)
    except CheckpointError:
        return
    sel.select(4)  # a file that loads is a working selector


def _json_leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(tree, dict) and set(tree) != {"__array__"}:
        for k, v in tree.items():
            out += _json_leaves(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _json_leaves(v, (*path, i))
    return out


JSON_VALUES = [None, True, -1, 0, 2**63, 1e308, -0.5, "", "bots", [], {}, [[[]]], {"__array__": 7}]


@FUZZ
@given(data=st.data())
def test_fuzzed_headers_raise_checkpoint_error_or_load(saved: Path, data: st.DataObject) -> None:
    header = _header(saved)
    paths = [p for p in _json_leaves(header) if p]
    path = data.draw(st.sampled_from(paths), label="path")
    node = header
    for key in path[:-1]:
        node = node[key]
    if data.draw(st.booleans(), label="delete") and isinstance(node, dict):
        node.pop(path[-1])
    else:
        node[path[-1]] = data.draw(st.sampled_from(JSON_VALUES), label="value")
    try:
        sel = load_selector(_with_header(saved, header, saved.with_name("fuzzed.npz")))
    except CheckpointError:
        return
    sel.select(4)


# ------------------------------------------------------------------ temp files of killed saves
def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_stale_temp_files_of_killed_saves_are_removed_by_the_next_save_and_load(
    tmp_path: Path,
) -> None:
    sel = make_selector("uniform", world_pool(), seed=0)
    stale = tmp_path / ".sel.npz.k2j3h4g5.frontier-tmp"
    fresh = tmp_path / ".other.npz.a1b2c3d4.frontier-tmp"  # a save in progress elsewhere
    theirs = [tmp_path / ".sel.npz.k2j3h4g5.tmp", tmp_path / "notes.frontier-tmp"]
    folder = tmp_path / ".dir.npz.abcdefgh.frontier-tmp"
    for path in (stale, fresh, *theirs):
        path.write_bytes(b"x" * 1000)
    folder.mkdir()
    for path in (stale, *theirs, folder):
        _age(path, STALE_TEMP_SECONDS + 60)
    save_selector(sel, tmp_path / "sel.npz")
    assert not stale.exists()
    assert fresh.exists() and folder.exists() and all(p.exists() for p in theirs)
    _age(fresh, STALE_TEMP_SECONDS + 60)
    load_selector(tmp_path / "sel.npz")
    assert not fresh.exists()
    assert clean_stale_temps(tmp_path / "no such dir") == []


KILLED_SAVE = """
import sys, time
import numpy as np
from frontier_rft import TaskPool, make_selector, save_selector
from frontier_rft.core import persistence

def slow_savez(fh, **arrays):
    fh.write(b"PK partial zip")
    fh.flush()
    print("writing", flush=True)
    time.sleep(3600)

persistence.np.savez = slow_savez
save_selector(make_selector("uniform", TaskPool(num_tasks=10)), sys.argv[1])
"""


def test_a_save_killed_mid_write_leaves_a_temp_file_the_next_save_removes(
    tmp_path: Path,
) -> None:
    target = tmp_path / "sel.npz"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_SAVE, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    left = [p for p in tmp_path.iterdir() if p.name.endswith(persistence.TEMP_SUFFIX)]
    assert len(left) == 1 and not target.exists()
    save_selector(make_selector("uniform", world_pool()), target)
    assert left[0].exists()  # fresh: it might still be a live save in another process
    _age(left[0], STALE_TEMP_SECONDS + 1)
    save_selector(make_selector("uniform", world_pool()), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sel.npz"]


def test_saved_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        save_selector(make_selector("uniform", TaskPool(num_tasks=4)), tmp_path / "sel.npz")
    finally:
        os.umask(old)
    assert (tmp_path / "sel.npz").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
