"""Issue 72, items 4 and 5: every multi-process test's ranks leave their process group before
they exit (a rank exiting inside its gloo group aborted the launcher in 1 of 3 fresh-clone
runs), and no test binds a fixed port (one failed whenever another run held 29517)."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LAUNCHERS = ("torch.distributed.run", "_launch(")
"""How a test starts ranks: torchrun, or test_trl_fewer's accelerate launch."""


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("*.py"))}


def test_every_two_process_worker_leaves_its_process_group() -> None:
    launching = {p: s for p, s in _sources().items() if any(k in s for k in LAUNCHERS)}
    launching.pop(Path(__file__).resolve(), None)
    assert len(launching) >= 5, sorted(launching)  # test_trl{,_config,_dynamic,_fewer,_vllm}
    for path, source in launching.items():
        main = source.partition('if __name__ == "__main__":')[2]
        if not main:
            continue  # launches another module's workers (its file is checked too)
        worker = re.search(r"(_\w*worker\w*)\(", main) or re.search(r"(\w+)\(", main)
        assert worker is not None, path
        body = source.partition(f"def {worker.group(1)}(")[2].partition("\ndef ")[0]
        assert "leave_process_group()" in body, f"{path.name}: {worker.group(1)}"


def test_no_test_binds_a_fixed_port() -> None:
    fixed = re.compile(
        r"""(MASTER_PORT["']?\s*[:=,]\s*["']?\d{2,}|main_process_port["'],\s*["']\d{2,})"""
    )
    for path, source in _sources().items():
        assert not fixed.search(source), path.name


def test_free_port_gives_a_port_nothing_holds() -> None:
    sys.path.insert(0, str(TESTS / "integration"))
    try:
        from two_ranks import free_port
    finally:
        sys.path.remove(str(TESTS / "integration"))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = free_port()
        assert port != held.getsockname()[1]
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free: binds
