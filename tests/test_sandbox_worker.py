"""SandboxedWorker's protocol under misbehaving workers: every ask ends by its deadline with
None for anything malformed, and a hang right after a hang pays no start-up allowance twice.

The workers here are plain subprocesses (the sandbox itself is tested in test_tasks_code),
so these tests need neither bubblewrap nor math-verify.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from frontier_rft.tasks.sandbox import SandboxLimits, run_sandboxed
from frontier_rft.tasks.sandbox_worker import MAX_REPLY_CHARS, SandboxedWorker

# argv: token, start-up delay (s), then what to do per request (see REPLIES).
WORKER = """
import json, os, sys, time
token, delay, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
time.sleep(delay)
out = os.fdopen(os.dup(1), "wb", buffering=0)
out.write(json.dumps({"ready": token}).encode() + b"\\n")
for line in sys.stdin:
    message = json.loads(line)  # {"id": ..., "request": ...}
    if message["request"] == "hang":
        time.sleep(3600)
    out.write(REPLIES[mode](message))
"""
ECHO = "json.dumps({'id': r['id'], 'reply': r['request']}).encode() + b'\\n'"
REPLIES = {
    "echo": f"lambda r: {ECHO}",
    # A handler whose input made it print a reply of its own (the forgery an eval'd answer
    # could write): a second line for the same request, or one with a made-up id.
    "twice": f"lambda r: {ECHO} * 2",
    "forged": f'lambda r: b\'{{"id": "guess", "reply": 1.0}}\\n\' + {ECHO}',
    # Answers, then stops reading stdin for good (a handler that hangs after replying).
    "reply_then_stop": f"lambda r: (out.write({ECHO}), time.sleep(3600))[0]",
    "deep": "lambda r: b'[' * 300_000 + b'\\n'",
    "deep_balanced": "lambda r: b'[' * 300_000 + b']' * 300_000 + b'\\n'",
    "huge": f"lambda r: b'\"' + b'x' * {MAX_REPLY_CHARS + 10} + b'\"\\n'",
    "stall_mid_line": "lambda r: (out.write(b'{\"a\": '), time.sleep(3600), b'')[2]",
    "not_json": "lambda r: b'\\xff\\xfe not json\\n'",
    "dies": "lambda r: os._exit(1)",
}


class ScriptWorker(SandboxedWorker):
    """A SandboxedWorker whose process is the WORKER script above, unsandboxed."""

    def __init__(self, mode: str, delay: float = 0.0, start_s: float = 30.0) -> None:
        super().__init__("unused", limits=SandboxLimits(), mode="limits_only", start_s=start_s)
        self.script_mode, self.delay = mode, delay
        self.spawns = 0

    def _spawn(self) -> None:
        script = WORKER.replace("REPLIES[mode]", f"({REPLIES[self.script_mode]})")
        self.warm, self._unread = False, b""
        self.spawned_at = time.monotonic()
        self.spawns += 1
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, self.token, str(self.delay), "x"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def test_a_well_behaved_worker_answers() -> None:
    worker = ScriptWorker("echo")
    try:
        assert worker.ask({"x": [1, 2]}, timeout_s=20.0) == {"x": [1, 2]}
        assert worker.ask("again", timeout_s=20.0) == "again"
        assert worker.spawns == 1
    finally:
        worker.close()


FAILURES = {  # worker mode, start-up delay, start_s, timeout_s, most seconds the ask may take
    "deep reply": ("deep", 0.0, 30.0, 20.0, 15.0),
    "deep balanced reply": ("deep_balanced", 0.0, 30.0, 20.0, 15.0),
    "reply over 1 MiB": ("huge", 0.0, 30.0, 20.0, 15.0),
    "not JSON": ("not_json", 0.0, 30.0, 20.0, 15.0),
    "dies": ("dies", 0.0, 30.0, 20.0, 15.0),
    "stalls mid-line": ("stall_mid_line", 0.0, 30.0, 1.0, 12.0),
    "never ready": ("echo", 60.0, 1.0, 1.0, 12.0),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_misbehaving_workers_yield_none_by_the_deadline(case: str) -> None:
    mode, delay, start_s, timeout, most = FAILURES[case]
    worker = ScriptWorker(mode, delay=delay, start_s=start_s)
    try:
        start = time.monotonic()
        assert worker.ask("q", timeout_s=timeout) is None
        assert time.monotonic() - start < most
    finally:
        worker.close()


def test_a_stale_or_forged_reply_never_answers_another_request() -> None:
    """Lines a worker prints beyond its one reply (what an answer a scorer evals could
    write) are refused by the request id: the worker is replaced, never out of step."""
    got = {}
    for mode in ("twice", "forged"):
        worker = ScriptWorker(mode)
        try:
            got[mode] = [worker.ask(q, timeout_s=20.0) for q in ("a", "b", "c")]
        finally:
            worker.close()
    # "twice": b's ask reads a's duplicate (the old protocol returned "a" for b, "b" for c).
    assert got == {"twice": ["a", None, "c"], "forged": [None, None, None]}


def test_a_worker_that_stops_reading_cannot_block_a_large_request() -> None:
    """The request is written with the deadline too: more than a pipe buffer holds, sent to
    a worker that no longer reads, ends as None instead of blocking for ever."""
    worker = ScriptWorker("reply_then_stop")
    try:
        assert worker.ask("small", timeout_s=20.0) == "small"
        result: list[object] = []
        big = "x" * (4 << 20)
        thread = threading.Thread(target=lambda: result.append(worker.ask(big, timeout_s=1.0)))
        start = time.monotonic()
        thread.start()
        thread.join(15.0)
        if thread.is_alive():  # the write blocked: kill the worker to free the thread
            assert worker.proc is not None
            os.killpg(worker.proc.pid, signal.SIGKILL)
            thread.join(10.0)
            pytest.fail("ask() blocked writing to a worker that stopped reading")
        assert result == [None] and time.monotonic() - start < 15.0
        assert worker.ask("after", timeout_s=20.0) == "after"  # answered by its successor
    finally:
        worker.close()


def test_descriptors_above_1023_work() -> None:
    """select() refuses descriptors >= 1024, which a trainer with many open files hands
    out: the sandbox runner and the worker poll instead."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 1200
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    worker = ScriptWorker("echo")
    try:
        assert max(filler) >= 1024
        result = run_sandboxed(
            [sys.executable, "-c", "print('hi')"], limits=SandboxLimits(), mode="limits_only"
        )
        assert result.ok and result.stdout == b"hi\n"
        assert worker.ask("q", timeout_s=20.0) == "q"
        assert worker.proc is not None and worker.proc.stdout is not None
        assert worker.proc.stdout.fileno() >= 1024
    finally:
        worker.close()
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_hang_right_after_a_hang_pays_no_second_start_allowance() -> None:
    """The replacement of a killed worker is spawned at once and warms up meanwhile; the
    next call waits only for what is left of its start-up, then timeout_s."""
    delay, timeout, start_s = 1.0, 1.0, 60.0
    worker = ScriptWorker("echo", delay=delay, start_s=start_s)
    try:
        assert worker.ask("warm", timeout_s=20.0) == "warm"
        times = []
        for _ in range(2):
            start = time.monotonic()
            assert worker.ask("hang", timeout_s=timeout) is None
            times.append(time.monotonic() - start)
        # Each call: at most the start-up delay left plus the timeout (plus slack for a
        # loaded machine), far below the start_s + timeout the old code waited.
        assert all(t < delay + timeout + 15.0 for t in times), times
        assert worker.ask("after", timeout_s=20.0) == "after"
        assert worker.spawns == 3
    finally:
        worker.close()


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_seccomp_program_is_well_formed(machine: str) -> None:
    """Every jump lands inside the program and the program ends in returns."""
    import struct

    from frontier_rft.tasks.seccomp import userns_filter

    program = userns_filter(machine)
    assert program is not None and len(program) % 8 == 0
    insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    for pc, (code, jt, jf, _) in enumerate(insns):
        if code & 0x07 == 0x05:  # BPF_JMP
            assert pc + 1 + max(jt, jf) < len(insns)
    assert insns[-1][0] == 0x06 and userns_filter("riscv64") is None
