"""What machine a benchmark's runs train on, as its records and reports name it."""

from __future__ import annotations

import os
import platform

__all__ = ["gpu_total_gb", "machine_name", "this_machine"]


def gpu_total_gb(device: str) -> float | None:
    """Memory of the GPU the runs use (None on a CPU)."""
    from frontier_rft.lm.device import resolve_device

    used = resolve_device(device)
    if used.type != "cuda":
        return None
    import torch

    return float(torch.cuda.get_device_properties(used).total_memory) / 2**30


def machine_name(device: str) -> str:
    """The processor, its CPU count and, on a GPU, the GPU's name: what a run trained on."""
    text = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    if device != "cpu":
        import torch

        from frontier_rft.lm.device import resolve_device

        used = resolve_device(device)
        if used.type == "cuda":
            text = f"{torch.cuda.get_device_name(used)}, {text}"
    return text


def this_machine(device: str) -> str:
    """`machine_name` and the load average now: where these runs trained, and how busy."""
    return f"{machine_name(device)}, load average at the end {os.getloadavg()[0]:.1f}"
