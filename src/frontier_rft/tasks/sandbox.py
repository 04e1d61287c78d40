"""Run untrusted Python in a separate process: OS sandbox (bubblewrap) plus resource limits.

The sandbox gives the process an empty size-capped tmpfs as its working directory (the
only writable place: bwrap's root and /dev are remounted read-only), a read-only view of
the interpreter (and, for scoring workers, the virtualenv), no network, its own
PID/IPC/UTS namespaces, and a clean environment. Inside, a launcher sets
RLIMIT_CPU/AS/NPROC/FSIZE/NOFILE, installs a seccomp filter that refuses new user
namespaces and System V / memfd memory (seccomp.py: memory no rlimit charges) and, when
started as root, drops to `nobody` (root is exempt from RLIMIT_NPROC) before it execs the
target. The host enforces a wall-clock limit (SIGKILL to the process group: with
--die-with-parent and a PID namespace this ends every process inside) and an output cap.
Long-lived workers (one process, many requests) are in sandbox_worker.py.

`mode` decides what happens without a working bubblewrap: 'require' refuses
(SandboxUnavailable), 'auto' falls back to limits alone, 'limits_only' never sandboxes.
Limits alone are not a security boundary (no filesystem or network isolation; as root,
no process-count limit): use them only for code you would run anyway.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.tasks import seccomp

__all__ = [
    "SANDBOX_MODES",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "base_interpreter",
    "bwrap_path",
    "command",
    "run_sandboxed",
]

SANDBOX_MODES = ("require", "auto", "limits_only")
NOBODY = 65534

# Runs first inside the sandbox: limits, the seccomp filter, privilege drop, then exec.
_LAUNCHER = (
    """
import json, os, resource, sys
cfg = json.loads(sys.argv[1])
for name, value in cfg["rlimits"].items():
    resource.setrlimit(getattr(resource, name), (value, value))
program = cfg["seccomp"]
if program:
"""
    + "\n".join("    " + line for line in seccomp.INSTALL.strip().splitlines())
    + """
if os.getuid() == 0 and cfg["drop_root"]:
    os.setgroups([]); os.setgid(cfg["uid"]); os.setuid(cfg["uid"])
os.execv(cfg["argv"][0], cfg["argv"])
"""
)
_USERNS_FILTER = seccomp.userns_filter()


class SandboxUnavailable(RuntimeError):
    """No working OS sandbox and the caller did not opt in to limits alone."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed process (and everything it starts)."""

    cpu_s: int = 5
    """RLIMIT_CPU: CPU seconds per process."""
    memory_mb: int = 512
    """RLIMIT_AS: address space per process, MiB."""
    max_processes: int = 16
    """RLIMIT_NPROC: processes of the sandbox user (fork bombs stop here)."""
    file_size_mb: int = 8
    """RLIMIT_FSIZE per file, and the size of the tmpfs working directory, MiB."""
    open_files: int = 64
    """RLIMIT_NOFILE: open file descriptors."""
    wall_s: float = 10.0
    """Wall-clock limit; then the whole process group is killed."""
    output_bytes: int = 1 << 20
    """Cap on stdout + stderr; more output kills the process (a violation)."""

    def __post_init__(self) -> None:
        check_field_types(self)
        for name, value in asdict(self).items():
            check(value > 0, f"SandboxLimits.{name} must be positive, got {value!r}")

    def rlimits(self) -> dict[str, int]:
        """The RLIMIT_* values the launcher applies."""
        mib = 1 << 20
        return {
            "RLIMIT_CPU": self.cpu_s,
            "RLIMIT_AS": self.memory_mb * mib,
            "RLIMIT_NPROC": self.max_processes,
            "RLIMIT_FSIZE": self.file_size_mb * mib,
            "RLIMIT_NOFILE": self.open_files,
        }


@dataclass(frozen=True)
class SandboxResult:
    """What came back from one run."""

    returncode: int
    """Exit status (negative: killed by that signal)."""
    stdout: bytes
    """Captured stdout (at most output_bytes)."""
    stderr: bytes
    """Captured stderr (at most output_bytes)."""
    timed_out: bool
    """The wall-clock limit fired."""
    output_exceeded: bool
    """The output cap fired."""
    sandboxed: bool
    """Ran inside bubblewrap (False: limits alone)."""
    seconds: float
    """Wall-clock duration."""

    @property
    def ok(self) -> bool:
        """Exited 0 within every limit."""
        return self.returncode == 0 and not self.timed_out and not self.output_exceeded


def base_interpreter() -> str:
    """The base interpreter (not the venv shim): code tasks need only the stdlib."""
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def _system_binds() -> list[str]:
    """bwrap arguments exposing the system directories Python's binary needs, read-only."""
    out: list[str] = []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            out += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            out += ["--ro-bind", d, d]
    return out


def _bwrap_argv(bwrap: str, binds: Sequence[str], limits: SandboxLimits) -> list[str]:
    root = os.geteuid() == 0
    # No --new-session: the host already starts bwrap in a new session without a terminal,
    # and staying in that process group lets one killpg reach every process inside.
    argv = [bwrap, "--die-with-parent", "--clearenv"]
    argv += ["--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp"]
    argv += ["--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "LANG", "C.UTF-8"]
    # As root, no user namespace: the launcher drops to `nobody` so RLIMIT_NPROC applies.
    # Nested user namespaces are refused by the launcher's seccomp filter in both cases,
    # and by bubblewrap too where it can (>= 0.8, with its own user namespace).
    if not root:
        argv += ["--unshare-user"] + (["--disable-userns"] if _has_disable_userns(bwrap) else [])
    argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"]
    argv += _system_binds()
    # The working tmpfs goes first: binds below /tmp (a venv in a checkout under /tmp, as
    # in a CI clone) are then mounted on top of it instead of being hidden by it.
    size = str(limits.file_size_mb << 20)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    seen = {"/usr", "/bin", "/lib", "/lib64"}
    made: set[str] = {"/tmp"}
    for path in binds:
        if path in seen or any(path.startswith(s + "/") for s in seen):
            continue
        # bwrap makes missing parents 0700: `nobody` could not reach the bind below them.
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made:
                argv += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        argv += ["--ro-bind", path, path]
        seen.add(path)
    # Everything but /tmp (size-capped above) read-only: bwrap's root and /dev are tmpfs
    # without a size cap, writable by the sandbox user when bwrap runs unprivileged.
    return [*argv, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]


@functools.lru_cache(maxsize=4)
def _has_disable_userns(bwrap: str) -> bool:
    try:
        proc = subprocess.run([bwrap, "--help"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--disable-userns" in proc.stdout + proc.stderr


def _python_binds(extra: Sequence[str]) -> list[str]:
    base = sys.base_prefix
    return sorted({os.path.realpath(base), *(os.path.realpath(p) for p in extra)})


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """Path of a bubblewrap that can start a sandboxed Python here, else None (cached)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    argv = _bwrap_argv(bwrap, _python_binds(()), SandboxLimits()) + _launch(
        [base_interpreter(), "-I", "-S", "-c", "pass"], SandboxLimits()
    )
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return bwrap if proc.returncode == 0 else None


def _launch(argv: Sequence[str], limits: SandboxLimits, *, drop_root: bool = True) -> list[str]:
    cfg = {
        "rlimits": limits.rlimits(),
        "argv": list(argv),
        "uid": NOBODY,
        "drop_root": drop_root,
        "seccomp": _USERNS_FILTER.hex() if _USERNS_FILTER else None,
    }
    return [base_interpreter(), "-I", "-S", "-c", _LAUNCHER, json.dumps(cfg)]


def command(
    argv: Sequence[str], limits: SandboxLimits, mode: str, binds: Sequence[str]
) -> tuple[list[str], bool]:
    """The full command line and whether it is sandboxed."""
    check_choice("mode", mode, SANDBOX_MODES)
    bwrap = bwrap_path() if mode != "limits_only" else None
    if bwrap is not None:
        return _bwrap_argv(bwrap, _python_binds(binds), limits) + _launch(argv, limits), True
    if mode == "require":
        raise SandboxUnavailable(
            "no working bubblewrap sandbox: install it (Debian/Ubuntu: apt-get install -y "
            "bubblewrap; it needs unprivileged user namespaces unless run as root), or opt in "
            "to resource limits alone with mode='limits_only' (not a security boundary)"
        )
    # Limits alone: the interpreter may not be readable by `nobody`, so keep the uid.
    return _launch(argv, limits, drop_root=False), False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    proc.wait()


def run_sandboxed(
    argv: Sequence[str],
    stdin: bytes = b"",
    *,
    limits: SandboxLimits | None = None,
    mode: str = "require",
    binds: Sequence[str] = (),
) -> SandboxResult:
    """Run `argv` (argv[0] an interpreter path visible inside) under the sandbox and limits.

    Its working directory is an empty tmpfs (bwrap) or a fresh host temp directory
    (limits alone), removed afterwards. `binds` are extra host paths exposed read-only.
    """
    limits = limits or SandboxLimits()
    full, sandboxed = command(argv, limits, mode, binds)
    with tempfile.TemporaryDirectory(prefix="frontier-sbx-") as workdir:
        start = time.monotonic()
        proc = subprocess.Popen(
            full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            start_new_session=True,  # its own process group: one killpg ends it all
        )
        out, err, timed_out, exceeded = _communicate(proc, stdin, limits)
        seconds = time.monotonic() - start
    return SandboxResult(proc.returncode, out, err, timed_out, exceeded, sandboxed, seconds)


def _communicate(
    proc: subprocess.Popen[bytes], stdin: bytes, limits: SandboxLimits
) -> tuple[bytes, bytes, bool, bool]:
    """Feed stdin, collect capped output, enforce the wall clock; always reaps the group."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + limits.wall_s
    pipe = proc.stdin

    def feed() -> None:  # in a thread: a child that never reads cannot block the clock
        try:
            pipe.write(stdin)
        except OSError:
            pass  # it exited or closed stdin early: its exit status tells the story
        finally:
            with contextlib.suppress(OSError):
                pipe.close()

    threading.Thread(target=feed, daemon=True).start()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    open_fds = {out_fd, err_fd}
    poller = select.poll()  # poll, not select: select fails on descriptors above 1023
    for fd in open_fds:
        poller.register(fd, select.POLLIN)
    total, timed_out, exceeded = 0, False, False
    while open_fds and not exceeded:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        for fd, _ in poller.poll(left * 1000):
            data = os.read(fd, 65536)
            if not data:
                open_fds.discard(fd)
                poller.unregister(fd)
            elif total + len(data) > limits.output_bytes:
                exceeded = True
                break
            else:
                total += len(data)
                chunks[fd].append(data)
    if not (timed_out or exceeded):
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
    _kill_group(proc)  # also ends stray children of a process that exited on its own
    proc.stdout.close()
    proc.stderr.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), timed_out, exceeded
