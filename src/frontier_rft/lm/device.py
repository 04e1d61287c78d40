"""Where a model runs: the torch device named by a config's `device` field.

"cpu" is the default (the tests and CI); "cuda" / "cuda:N" put the policy, the reference
model and every batch on that GPU; "auto" takes the first GPU when torch sees one. Configs
hold the name only (no torch import there); it is resolved here, when a run starts.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import torch

__all__ = ["DEVICE_HELP", "autocast", "model_device", "resolve_device", "valid_device_name"]

DEVICE_HELP = "'cpu', 'cuda', 'cuda:N' or 'auto' (a GPU when torch sees one, else cpu)"
_NAME = re.compile(r"cpu|auto|cuda(:\d{1,3})?")


def valid_device_name(name: object) -> bool:
    """True for the names `resolve_device` accepts."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def resolve_device(name: str) -> torch.device:
    """The torch.device for `name`, a GPU always with its index (so RNG states and names are
    read from the device used); a clear ValueError when the GPU asked for is not there."""
    import torch

    if not valid_device_name(name):
        raise ValueError(f"device must be {DEVICE_HELP}, got {name!r}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {name!r}: this torch sees no CUDA GPU (torch.cuda.is_available() is "
                "False); install a CUDA build of torch, or pass --device cpu"
            )
        index = int(name.split(":")[1]) if ":" in name else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s) visible"
            )
        return torch.device("cuda", index)
    return torch.device(name)


def model_device(model: Any) -> torch.device:
    """The device of a model's parameters (cpu for a model without any)."""
    import torch

    for p in model.parameters():
        device: torch.device = p.device
        return device
    return torch.device("cpu")


def autocast(device: torch.device, precision: str) -> AbstractContextManager[Any]:
    """The forward-pass context of a TrainConfig.precision: bfloat16 autocast on `device`
    for 'bf16' (weights and optimizer states stay float32), nothing for 'fp32'."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision != "bf16":
        raise ValueError(f"precision must be 'fp32' or 'bf16', got {precision!r}")
    import torch

    return torch.autocast(device.type, dtype=torch.bfloat16)
