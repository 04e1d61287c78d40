"""A long-lived sandboxed worker process that answers one JSON line per request.

Time per `ask`: a worker first announces that it is ready (after its imports), and that
start-up may take up to `start_s`, counted from when the process was spawned; the answer
itself gets `timeout_s`. So one call never takes longer than `start_s + timeout_s`, and
only `timeout_s` once a worker is warm. A worker that misses its deadline is killed and
a replacement is spawned at once, so it warms up while the caller goes on: a hang right
after a hang costs the remaining start-up time, not a fresh allowance on top.

Replies are untrusted (the worker parses model output): a reply line is read up to
MAX_REPLY_CHARS and parsed with a nesting bound; anything else counts as a failure. Each
request carries a fresh random id that its reply must echo, so a second or stale line the
handler's input made the worker print can never be taken as the answer to a later request:
the worker is replaced instead. (Code that runs inside the worker could read the id; a
handler must not run its input as code.) The request is written with the same
deadline (a worker that stops reading cannot block the caller), and pipes are polled, not
select()ed, so file descriptors above 1023 work.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frontier_rft.core.config import check_choice
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.tasks.sandbox import SANDBOX_MODES, SandboxLimits, command

__all__ = ["MAX_REPLY_CHARS", "SandboxedWorker", "package_root", "serve_json_lines"]

MAX_REPLY_CHARS = 1 << 20
"""Longest reply line accepted from a worker."""
_MAX_REPLY_DEPTH = 32
_READY = "ready"


class SandboxedWorker:
    """A sandboxed Python module (`python -m module`) serving `serve_json_lines`.

    Requests are serialised (a lock). A request that misses its deadline, or a worker that
    dies or sends a malformed reply, yields None; the worker is then replaced. Pickles as
    a fresh, unstarted worker (for Ray / multiprocessing).
    """

    def __init__(
        self,
        module: str,
        *,
        limits: SandboxLimits,
        mode: str = "auto",
        binds: Sequence[str] = (),
        start_s: float = 60.0,
    ) -> None:
        check_choice("mode", mode, SANDBOX_MODES)
        self.module, self.limits, self.mode, self.binds = module, limits, mode, tuple(binds)
        self.start_s = start_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._unread = b""
        self.sandboxed = False
        self.warm = False
        self.spawned_at = 0.0
        self.lock = threading.Lock()
        self.token = secrets.token_hex(8)

    def __getstate__(self) -> dict[str, Any]:
        keys = ("module", "limits", "mode", "binds", "start_s")
        return {k: getattr(self, k) for k in keys}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["module"],
            limits=state["limits"],
            mode=state["mode"],
            binds=state["binds"],
            start_s=state["start_s"],
        )

    def ask(self, request: Any, timeout_s: float) -> Any | None:
        """The worker's JSON reply to `request`, or None on timeout, crash or bad reply."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._spawn()
            if not self.warm:
                ready = self._reply(self.spawned_at + self.start_s)
                if ready != {_READY: self.token}:
                    self._replace()
                    return None
                self.warm = True
            deadline = time.monotonic() + timeout_s
            request_id = secrets.token_hex(8)
            message = json.dumps({"id": request_id, "request": request}).encode() + b"\n"
            answer = self._reply(deadline) if self._send(message, deadline) else _FAILED
            if not (
                isinstance(answer, dict)
                and answer.keys() == {"id", "reply"}
                and answer["id"] == request_id
            ):  # timed out, died, malformed, or a stale line: not this answer (code running
                # in the worker could read the id; only closed eval routes stop that)
                self._replace()
                return None
            return answer["reply"]

    def close(self) -> None:
        """Stop the worker (the next request starts a new one)."""
        with self.lock:
            self._stop()

    # ------------------------------------------------------------------ internals
    def _spawn(self) -> None:
        # The venv python (not the base one): the worker imports installed packages.
        argv = [sys.executable, "-I", "-m", self.module, self.token]
        full, self.sandboxed = command(argv, self.limits, self.mode, (sys.prefix, *self.binds))
        self.warm, self._unread = False, b""
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )

    def _send(self, data: bytes, deadline: float) -> bool:
        """Write `data` to the worker's stdin before `deadline`; False if it died or stopped
        reading (a blocking write of more than the pipe buffer would wait for ever)."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        fd, view = proc.stdin.fileno(), memoryview(data)
        os.set_blocking(fd, False)  # a blocking write could outlast the deadline
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                if not poller.poll(left * 1000):
                    continue  # not writable yet: the loop re-checks the deadline
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError:  # it died (memory cap, CPU cap): a broken pipe
                return False
        return True

    def _reply(self, deadline: float) -> Any:
        """One parsed reply line before `deadline`, else _FAILED.

        Reads the pipe's bytes itself (poll + os.read) so that neither a silent worker
        nor one that stalls mid-line can hold the caller past the deadline.
        """
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        fd, buf = proc.stdout.fileno(), self._unread
        poller = select.poll()  # poll, not select: any descriptor number works
        poller.register(fd, select.POLLIN)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or len(buf) > MAX_REPLY_CHARS:
                return _FAILED
            try:
                chunk = os.read(fd, 65536) if poller.poll(left * 1000) else b""
            except OSError:
                return _FAILED
            if not chunk:  # timed out, or the worker died
                return _FAILED
            buf += chunk
        line, _, self._unread = buf.partition(b"\n")
        try:
            text = line.decode("utf-8")
            return loads_bounded(text, max_chars=MAX_REPLY_CHARS, max_depth=_MAX_REPLY_DEPTH)
        except ValueError:  # UnicodeDecodeError included
            return _FAILED

    def _replace(self) -> None:
        """Kill the worker and spawn its successor now, so it warms up in the background."""
        self._stop()
        self._spawn()

    def _stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None


_FAILED: Any = object()


def package_root() -> str:
    """The sys.path entry holding frontier_rft (src/ or site-packages), bound into the
    sandbox so that its worker imports this very copy of the package."""
    return str(Path(__file__).resolve().parents[2])  # .../frontier_rft/tasks/this file


def serve_json_lines(handle: Callable[[Any], Any]) -> None:
    """Worker side of SandboxedWorker: announce readiness, then answer each JSON line
    {"id", "request"} on stdin with {"id", "reply": handle(request)}. Call it after the
    imports the handler needs, so they count as start-up. Replies go to a private copy of
    stdout; stray prints go to stderr."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    token = sys.argv[1] if len(sys.argv) > 1 else ""
    reply.write(json.dumps({_READY: token}) + "\n")
    reply.flush()
    for line in sys.stdin:
        message = json.loads(line)
        answer = handle(message["request"])
        reply.write(json.dumps({"id": message["id"], "reply": answer}) + "\n")
        reply.flush()
