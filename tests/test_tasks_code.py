"""Code tasks in the OS sandbox: rewards are test fractions; hostile code ends as 0 and
leaves the host untouched (files, network, processes)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from frontier_rft.tasks import sandbox
from frontier_rft.tasks.code import (
    CODE_EXAMPLES,
    CodeVerifier,
    _same,
    extract_code,
    make_code_items,
    split_test,
)
from frontier_rft.tasks.sandbox import SandboxLimits, SandboxUnavailable, run_sandboxed

ITEMS = {it.reference["entry_point"]: it for it in make_code_items(CODE_EXAMPLES)}
FAST = SandboxLimits(cpu_s=2, memory_mb=256, max_processes=16, wall_s=4.0)
RUNNER_MARK = "class Timeout(BaseException)"  # in the runner's command line, and its forks'

needs_bwrap = pytest.mark.skipif(
    sandbox.bwrap_path() is None,
    reason="no working bubblewrap here (apt-get install -y bubblewrap; needs user "
    "namespaces or root): sandboxed code tests skipped",
)


def _fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def _runner_processes(grace_s: float = 2.0) -> list[int]:
    """PIDs of runner processes (the runner and anything it forked) still alive after
    `grace_s`: the kernel tears a killed PID namespace down asynchronously."""
    deadline = time.monotonic() + grace_s
    while True:
        pids = []
        for entry in os.listdir("/proc"):
            try:
                status = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes() if status else b""
            except OSError:
                continue
            zombie = status.rsplit(")", 1)[-1].split()[:1] == ["Z"]
            if RUNNER_MARK.encode() in cmdline and not zombie:
                pids.append(int(entry))
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.05)


def test_split_test_accepts_only_assert_equal_literal() -> None:
    assert split_test("assert add(1, 2) == 3") == ("add(1, 2)", 3)
    assert split_test("assert f('a') == [1, (2, 3)]") == ("f('a')", [1, (2, 3)])
    for bad in ("assert f(1)", "assert f(1) == g(2)", "print(1)", "assert f(1) < 2", "x ="):
        with pytest.raises(ValueError):
            split_test(bad)


def test_extract_code_takes_last_fence() -> None:
    text = "```python\ndef a(): pass\n```\nbetter:\n```py\ndef b(): pass\n```"
    assert extract_code(text).strip() == "def b(): pass"
    assert extract_code("def c(): pass") == "def c(): pass"


def test_extract_code_is_linear_on_hostile_fences() -> None:
    """A fence followed by a long run of blanks backtracked quadratically (100k: ~8 s)."""
    for text in ("```" + " " * 100_000 + "x", ("```" + " \t" * 10_000 + "x") * 10):
        start = time.process_time()  # CPU time: a busy machine does not inflate it
        assert extract_code(text) == text
        assert time.process_time() - start < 2.0  # linear: milliseconds


def test_a_result_beyond_float_range_fails_a_float_test() -> None:
    """math.isclose raised OverflowError for an int past 1e308: score() crashed."""
    assert not _same(10**400, 0.5) and not _same([1, 10**400], [1, 0.5])
    assert _same(2, 2.0) and _same([0.1 + 0.2], [0.3])


@needs_bwrap
@pytest.mark.integration
def test_a_huge_int_for_a_float_test_scores_as_a_failed_test() -> None:
    item = make_code_items(
        [
            {
                "description": "Half of x.",
                "entry_point": "half",
                "tests": ["assert half(1) == 0.5", "assert half(4) == 2.0"],
            }
        ]
    )[0]
    hostile = _fenced("def half(x):\n    return 10**400 if x == 1 else x / 2")
    assert CodeVerifier(limits=FAST).score(item, hostile) == 0.5


@needs_bwrap
@pytest.mark.integration
def test_rewards_are_fractions_of_tests_passed() -> None:
    verifier = CodeVerifier(limits=FAST)
    fib = ITEMS["fib"]
    good = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
    good += "    return a"
    assert verifier.score(fib, _fenced(good)) == 1.0
    assert verifier.score(fib, _fenced("def fib(n):\n    return n if n < 2 else 55")) == 0.75
    assert verifier.score(fib, _fenced("def fib(n):\n    return n")) == 0.5
    assert verifier.score(fib, _fenced("def fib(n) return")) == 0.0  # syntax error
    assert verifier.score(fib, _fenced("def other(n):\n    return 0")) == 0.0
    assert verifier.score(fib, "no code at all") == 0.0
    # Python's == decides, as the assert would: 3.0 passes for 3, '3' does not.
    add = ITEMS["add"]
    assert verifier.score(add, _fenced("def add(a, b):\n    return float(a + b)")) == 1.0
    assert verifier.score(add, _fenced("def add(a, b):\n    return str(a + b)")) == 0.0


@needs_bwrap
@pytest.mark.integration
def test_forged_reports_cannot_pass() -> None:
    """The sandbox never sees expected values; printing a fake report earns nothing."""
    forge = (
        "import os, sys\n"
        'os.write(1, b\'["3", "0", "15"]\\n\')\n'
        'sys.stdout.write(\'["3", "0", "15"]\')\n'
        "def add(a, b):\n    os._exit(0)\n"
    )
    assert CodeVerifier(limits=FAST).score(ITEMS["add"], _fenced(forge)) == 0.0


HOSTILE = {
    "infinite_loop": "def add(a, b):\n    while True:\n        pass",
    "loop_at_import_dodging_alarms": (
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass"
    ),
    "fork_bomb": (
        "import os\n"
        "def add(a, b):\n"
        "    while True:\n"
        "        try:\n            os.fork()\n"
        "        except BaseException:\n            pass\n"
    ),
    "memory_hog": "def add(a, b):\n    x = bytearray(4 << 30)\n    return a + b",
    "output_flood": (
        "import os\ndef add(a, b):\n    os.write(3, b'x' * (8 << 20))\n    return a + b"
    ),
    "file_flood": (
        "def add(a, b):\n    with open('big', 'wb') as f:\n"
        "        f.write(b'x' * (64 << 20))\n    return a + b"
    ),
    # Its own user + mount namespace would let it mount a tmpfs that no rlimit charges.
    "userns_tmpfs_past_the_memory_cap": (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "uid, gid = os.getuid(), os.getgid()\n"
        "if libc.unshare(0x10000000 | 0x20000) != 0:\n"
        "    raise OSError(ctypes.get_errno(), 'no user namespace')\n"
        "for name, text in (('setgroups', 'deny'), ('uid_map', f'0 {uid} 1'),\n"
        "                   ('gid_map', f'0 {gid} 1')):\n"
        "    with open(f'/proc/self/{name}', 'w') as f:\n"
        "        f.write(text)\n"
        "os.makedirs('/tmp/m', exist_ok=True)\n"
        "if libc.mount(b'none', b'/tmp/m', b'tmpfs', 0, b'size=1g') != 0:\n"
        "    raise OSError(ctypes.get_errno(), 'no mount')\n"
        "for i in range(72):  # 288 MiB, past FAST's 256 MiB address-space cap\n"
        "    with open(f'/tmp/m/{i}', 'wb') as f:\n"
        "        f.write(b'x' * (4 << 20))\n"
        "def add(a, b):\n"
        "    return a + b\n"
    ),
    # System V shared memory outlives its mapping, so RLIMIT_AS does not bound it.
    "sysv_shm_past_the_memory_cap": (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "for _ in range(5):  # 320 MiB, past FAST's 256 MiB address-space cap\n"
        "    sid = libc.shmget(0, 64 << 20, 0o1600)\n"
        "    if sid < 0:\n"
        "        raise OSError(ctypes.get_errno(), 'no shared memory')\n"
        "    addr = libc.shmat(sid, None, 0)\n"
        "    ctypes.memset(addr, 1, 64 << 20)\n"
        "    libc.shmdt(ctypes.c_void_p(addr))\n"
        "def add(a, b):\n"
        "    return a + b\n"
    ),
    "files_in_unbounded_tmpfs": (
        "def add(a, b):\n"
        "    for d in ('/', '/dev', '/dev/shm', '/usr'):\n"
        "        try:\n"
        "            with open(d + '/x', 'wb') as f:\n"
        "                f.write(b'x')\n"
        "            return a + b\n"
        "        except OSError:\n"
        "            pass\n"
        "    raise OSError('nothing writable outside /tmp')\n"
    ),
    "tmp_past_its_size": (
        "def add(a, b):\n"
        "    for i in range(40):\n"
        "        with open(f'/tmp/{i}', 'wb') as f:\n"
        "            f.write(b'x' * (4 << 20))\n"
        "    return a + b\n"
    ),
    # The report channel is parsed on the host: depth and size are bounded there.
    "deep_report": "import os\nos.write(3, b'[' * 300_000)\nos._exit(0)\n",
    "deep_report_in_a_list": (
        "import os\nos.write(3, b'[' * 300_000 + b']' * 300_000)\nos._exit(0)\n"
    ),
}


@needs_bwrap
@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_code_scores_zero_and_leaves_no_process(name: str) -> None:
    verifier = CodeVerifier(limits=FAST, test_timeout_s=1.0)
    start = time.monotonic()
    assert verifier.score(ITEMS["add"], _fenced(HOSTILE[name])) == 0.0
    assert time.monotonic() - start < FAST.wall_s + 3.0
    assert _runner_processes() == []
    # The host still works: it can fork, and a well-behaved answer still scores.
    assert verifier.score(ITEMS["add"], _fenced("def add(a, b):\n    return a + b")) == 1.0


NESTED_USERNS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print(libc.unshare(0x10000000), ctypes.get_errno())  # unshare(CLONE_NEWUSER)
print(libc.syscall(435, 0, 0), ctypes.get_errno())  # clone3: refused, libc falls back
pid = os.fork()  # ordinary processes and threads still work
if pid == 0:
    os._exit(3)
print(os.waitpid(pid, 0)[1] >> 8)
"""


@needs_bwrap
@pytest.mark.integration
def test_no_user_namespaces_inside_the_sandbox() -> None:
    py = sandbox.base_interpreter()
    result = run_sandboxed([py, "-I", "-S", "-c", NESTED_USERNS], limits=FAST)
    assert result.ok, result.stderr
    unshare, clone3, child = (line.split() for line in result.stdout.decode().splitlines())
    assert unshare[0] == "-1" and int(unshare[1]) in (1, 28)  # EPERM (seccomp) or ENOSPC
    assert clone3 == ["-1", "38"]  # ENOSYS
    assert child == ["3"]


LOCKDOWN = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("userns", libc.unshare(0x10000000) == 0)
for d in ("/", "/dev", "/dev/shm", "/tmp"):
    try:
        with open(d + "/probe", "wb") as f:
            f.write(b"x")
        print(d, True)
    except OSError:
        print(d, False)
try:
    for i in range(4):  # 4 x 4 MiB into an 8 MiB /tmp
        with open(f"/tmp/{i}", "wb") as f:
            f.write(b"x" * (4 << 20))
    print("tmp_capped", False)
except OSError:
    print("tmp_capped", True)
"""


@needs_bwrap
@pytest.mark.integration
@pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/usr/bin/python3", os.X_OK),
    reason="simulates an unprivileged user: needs root to switch to nobody, and a system python",
)
def test_unprivileged_bubblewrap_is_locked_down_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Developers' machines run bwrap unprivileged, in its own user namespace, where the
    sandbox user owns bwrap's root and /dev tmpfs: both must be read-only there too."""
    import subprocess

    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sandbox, "base_interpreter", lambda: "/usr/bin/python3")
    bwrap = sandbox.bwrap_path()
    assert bwrap is not None
    limits = SandboxLimits(file_size_mb=8)
    argv = sandbox._bwrap_argv(bwrap, [], limits)
    assert "--unshare-user" in argv
    argv += sandbox._launch(["/usr/bin/python3", "-I", "-S", "-c", LOCKDOWN], limits)
    proc = subprocess.run(  # as `nobody`, like a non-root developer
        argv, capture_output=True, user=65534, group=65534, extra_groups=[], cwd="/", timeout=60
    )
    if b"bwrap:" in proc.stderr:
        pytest.skip(f"bubblewrap cannot run unprivileged here: {proc.stderr.decode()[:200]}")
    found = dict(line.split() for line in proc.stdout.decode().splitlines())
    assert found == {
        "userns": "False",
        "/": "False",
        "/dev": "False",
        "/dev/shm": "False",
        "/tmp": "True",
        "tmp_capped": "True",
    }, proc.stderr


@needs_bwrap
@pytest.mark.integration
def test_files_outside_the_sandbox_are_invisible(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("untouched")
    item = make_code_items(
        [
            {
                "description": "Return the text of a file.",
                "entry_point": "peek",
                "tests": ["assert peek() == 's3cret'"],
            }
        ]
    )[0]
    reader = f"def peek():\n    return open({str(secret)!r}).read()"
    writer = (
        f"def peek():\n    open({str(sentinel)!r}, 'w').write('owned')\n"
        f"    open({str(tmp_path / 'new.txt')!r}, 'w').write('x')\n    return 's3cret'"
    )
    etc = "def peek():\n    return open('/etc/hostname').read() and 's3cret'"
    verifier = CodeVerifier(limits=FAST)
    assert verifier.score(item, _fenced(reader)) == 0.0
    assert verifier.score(item, _fenced(writer)) == 0.0
    assert verifier.score(item, _fenced(etc)) == 0.0
    assert verifier.score(item, _fenced("def peek():\n    return 's3cret'")) == 1.0
    assert sentinel.read_text() == "untouched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.txt", "sentinel.txt"]


@needs_bwrap
@pytest.mark.integration
def test_no_network_not_even_host_loopback() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    connections: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connections.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    item = make_code_items(
        [{"description": "Say yes.", "entry_point": "yes", "tests": ["assert yes() == 'yes'"]}]
    )[0]
    code = (
        "import socket\n"
        "def yes():\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')\n"
        "    return 'yes'\n"
    )
    outside = (
        "import socket\ndef yes():\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=1)\n    return 'yes'\n"
    )
    try:
        assert CodeVerifier(limits=FAST).score(item, _fenced(code)) == 0.0
        assert CodeVerifier(limits=FAST).score(item, _fenced(outside)) == 0.0
        # The listener works from the host itself: the sandbox is what blocked it.
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
        for conn in connections:
            conn.close()
    assert len(connections) == 1


@needs_bwrap
@pytest.mark.integration
def test_run_sandboxed_reports_limits() -> None:
    py = sandbox.base_interpreter()
    ok = run_sandboxed([py, "-I", "-S", "-c", "import os; print(os.listdir('/tmp'))"])
    assert ok.ok and ok.sandboxed and ok.stdout.strip() == b"[]"
    slow = run_sandboxed([py, "-c", "while True: pass"], limits=FAST)
    assert slow.timed_out or slow.returncode != 0
    loud = run_sandboxed([py, "-c", "print('x' * 10**7)"], limits=FAST)
    assert loud.output_exceeded and not loud.ok


def test_without_a_sandbox_code_tasks_are_refused_unless_opted_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    good = _fenced("def add(a, b):\n    return a + b")
    with pytest.raises(SandboxUnavailable, match="limits_only"):
        CodeVerifier(limits=FAST).score(ITEMS["add"], good)
    limits_only = CodeVerifier(limits=FAST, mode="limits_only", test_timeout_s=1.0)
    assert limits_only.score(ITEMS["add"], good) == 1.0
    assert limits_only.score(ITEMS["add"], _fenced(HOSTILE["infinite_loop"])) == 0.0
    assert limits_only.score(ITEMS["add"], _fenced(HOSTILE["memory_hog"])) == 0.0
    assert _runner_processes() == []


def test_binds_under_tmp_are_mounted_over_the_working_tmpfs() -> None:
    """A venv in a checkout under /tmp (CI clones) must stay visible inside the sandbox."""
    from frontier_rft.tasks.sandbox import SandboxLimits, _bwrap_argv

    argv = _bwrap_argv("bwrap", ["/tmp/clone/.venv"], SandboxLimits())
    tmpfs = argv.index("--tmpfs")
    bind = next(i for i, a in enumerate(argv) if a == "/tmp/clone/.venv")
    assert argv[tmpfs + 1] == "/tmp" and tmpfs < bind
    assert argv[argv.index("--perms") + 1] == "1777"  # /tmp stays world-writable for `nobody`
