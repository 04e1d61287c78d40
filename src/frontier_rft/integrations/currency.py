"""The currency line's settings, read from a trainer's config: each value as set or the
trainer's default, saying which. The TRL, verl and SkyRL adapters count their engine's call
with it (`integrations/*/currency.py`: `currency_for`) and say it through `step_cost.advice`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.step_cost.advice import (
    Currency,
    DeviceHint,
    EngineCall,
    name_gpu,
    read_model,
    run_currency,
)
from frontier_rft.step_cost.curve import load_curve

__all__ = [
    "Read",
    "currency_for",
    "no_curve",
    "plan_curve",
    "read_fraction",
    "read_int",
    "read_str",
]


@dataclass(frozen=True)
class Read:
    """One setting as the currency line uses it: its value, and whether the config set it."""

    value: Any
    """The value: as set, else the trainer's default."""
    given: bool
    """Set in the config to another value than the default (a value equal to it reads as the
    default: a trainer's parsed config holds every default, a file only what it sets, and the
    two must read alike)."""
    whose: str
    """Whose default it would be ("verl 0.9.1's")."""

    def named(self, name: str) -> str:
        """'NAME VALUE', with '(WHOSE default)' where it is not set."""
        value = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:g}"
        return f"{name} {value}" + ("" if self.given else f" ({self.whose} default)")


def _given(config: Mapping[str, Any], key: str) -> Any:
    value = dotted_get(config, key)
    if isinstance(value, str) and "${" in value:
        return None  # an interpolation: its target is read where it is set, else the default
    return value


def read_int(config: Mapping[str, Any], key: str, default: int, whose: str) -> Read:
    """A positive int setting (a quoted one, '8', as the trainer's parser reads it); a value
    of another kind reads as the default (the trainer's checks name it)."""
    value = _given(config, key)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value == default:
        return Read(default, False, whose)
    return Read(value, True, whose)


def read_fraction(config: Mapping[str, Any], key: str, default: float, whose: str) -> Read:
    """A fraction in (0, 1] (gpu_memory_utilization), as read_int reads an int."""
    value = _given(config, key)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1
    if bad or value == default:
        return Read(default, False, whose)
    return Read(float(value), True, whose)


def read_str(config: Mapping[str, Any], key: str, default: str) -> str:
    """A string setting, else the default."""
    value = _given(config, key)
    return value if isinstance(value, str) and value else default


def currency_for(
    call: EngineCall,
    model: Any,
    *,
    device: str = "gpu",
    hint: DeviceHint | None = None,
    loaded: Mapping[str, Any] | None = None,
) -> Currency:
    """The currency of `call` for the model named `model` (a path or hub id), on the device
    the hint, torch or the run's settings name."""
    curve = load_curve(hint.curve) if hint is not None and hint.curve is not None else None
    found = read_model(model, loaded)
    gpu = name_gpu(hint)
    return run_currency(call, device=device, model=found, gpu=gpu, curve=curve)


def plan_curve(c: Currency | None, hint: DeviceHint | None = None) -> str | None:
    """The curve a plan may price this run's steps on: the one its currency was read from where
    that is a measured curve for this run (own, cpu, or h200 for the model and engine it
    measured); None where the knee was projected or is unknown (no curve measured it), or no
    currency was read."""
    if c is None:
        return None
    if c.source == "own" and hint is not None and hint.curve is not None:
        return hint.curve
    return c.source if c.source in ("cpu", "h200") else None


def no_curve(c: Currency | None, what: str = "start plan") -> str:
    """What an adapter says where no measured curve prices its steps (`plan_curve` is None):
    `what` ('start plan', 'batch plan'), none, why, and how to give it one."""
    why = (
        "its knee is projected from datasheets"
        if c and c.source == "projection"
        else (c.reason if c else "none was read")
    )
    return (
        f"{what}: none: no measured step-cost curve applies to this model and device ({why}); "
        "measure your step (benchmarks/step_cost.py) and pass it (check-config --step-cost "
        "FILE; frontier plan-batch --curve FILE)"
    )
