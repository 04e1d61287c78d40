"""A seccomp filter that keeps sandboxed code from memory the rlimits do not charge.

Inside a user namespace of its own, unprivileged code can mount a tmpfs, whose pages are
charged to no RLIMIT: writing to it escapes the sandbox's memory cap. bubblewrap's
`--disable-userns` prevents that only when bwrap itself created a user namespace, which
the root path cannot do (its processes must keep a non-root uid for RLIMIT_NPROC to
apply). So the launcher installs this filter in every path: `unshare` and `clone` with
CLONE_NEWUSER fail with EPERM, `clone3` (whose flags a filter cannot read) with ENOSYS,
so the C library falls back to `clone`. System V shared memory and message queues and
`memfd_create` are refused too (EPERM): their pages outlive any mapping, so RLIMIT_AS
does not bound them either. Foreign syscall ABIs kill the process.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["CLONE_NEWUSER", "INSTALL", "userns_filter"]

CLONE_NEWUSER = 0x10000000
# Per machine (linux/audit.h, unistd.h): audit arch, unshare, clone, clone3, and the
# syscalls refused outright: shmget, msgget, memfd_create.
_ARCHES = {
    "x86_64": (0xC000003E, 272, 56, 435, (29, 68, 319)),
    "aarch64": (0xC00000B7, 97, 220, 435, (194, 186, 279)),
}
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS = 0x7FFF0000, 0x80000000
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_X32_BIT = 0x40000000  # x86_64's x32 ABI numbers syscalls from here


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def userns_filter(machine: str | None = None) -> bytes | None:
    """The classic-BPF program (8 bytes per instruction) for this machine, or None when
    the architecture is not one we have syscall numbers for."""
    numbers = _ARCHES.get(machine or platform.machine())
    if numbers is None:
        return None
    arch, unshare, clone, clone3, denied = numbers
    d = len(denied)
    check, eperm, enosys = 9 + d, 11 + d, 13 + d  # positions of the shared tails below

    def to(target: int, pc: int) -> int:  # BPF jumps are relative to the next instruction
        return target - pc - 1

    program = [
        _insn(_LD_W_ABS, 4),  # 0: seccomp_data.arch
        _insn(_JEQ, arch, jt=1),  # 1: native ABI -> 3
        _insn(_RET, _KILL_PROCESS),  # 2
        _insn(_LD_W_ABS, 0),  # 3: seccomp_data.nr
        _insn(_JGE, _X32_BIT, jt=to(enosys, 4)),  # 4: the x32 ABI
        _insn(_JEQ, clone3, jt=to(enosys, 5)),  # 5
        _insn(_JEQ, unshare, jt=to(check, 6)),  # 6
        _insn(_JEQ, clone, jt=to(check, 7)),  # 7
        *(_insn(_JEQ, nr, jt=to(eperm, 8 + i)) for i, nr in enumerate(denied)),
        _insn(_RET, _ALLOW),  # 8 + d
        _insn(_LD_W_ABS, 16),  # check: low 32 bits of args[0] (flags; little-endian)
        _insn(_JSET, CLONE_NEWUSER, jf=1),  # set -> eperm, else -> allow
        _insn(_RET, _ERRNO | _EPERM),  # eperm
        _insn(_RET, _ALLOW),
        _insn(_RET, _ERRNO | _ENOSYS),  # enosys
    ]
    return b"".join(program)


# Runs in the launcher (inside the sandbox, before the privilege drop and the exec);
# `program` is userns_filter() as hex. no_new_privs is required to install a filter.
INSTALL = """
import ctypes
class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
_code = ctypes.create_string_buffer(bytes.fromhex(program))
_prog = _Prog(len(program) // 16, ctypes.cast(_code, ctypes.c_void_p))
_libc = ctypes.CDLL(None, use_errno=True)
_ul = ctypes.c_ulong
_libc.prctl.argtypes = [ctypes.c_int, _ul, ctypes.c_void_p, _ul, _ul]
if _libc.prctl(38, 1, None, 0, 0) or _libc.prctl(22, 2, ctypes.addressof(_prog), 0, 0):
    sys.exit("sandbox: seccomp filter not installed: " + os.strerror(ctypes.get_errno()))
"""
