"""What every multi-process test's ranks share: leaving the process group before exit, and a
free loopback port for a rendezvous.

A rank that exits with its gloo group still alive can abort in torch.distributed's teardown
("terminate called without an active exception", SIGABRT), failing the launcher in perhaps
one run of three; a fixed port fails whenever another run holds it.
"""

from __future__ import annotations

import socket


def leave_process_group() -> None:
    """Wait for every rank, then destroy the default process group (if one was started)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the system picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
