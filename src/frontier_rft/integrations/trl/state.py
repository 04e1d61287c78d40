"""The selector and sampler state a TRL checkpoint directory carries, written atomically.

Two files beside TRL's own: `frontier_selector.npz` (the standard `save_selector` file,
readable with `frontier_rft.load_selector`) and `frontier_sampler.npz` (the sampler's
position and records plus the adapter's counters). Both are written at the same moment,
after TRL has written the rest of the checkpoint. A third, `frontier_step_sampler.npz`: the
step sampler's kind, config and own state (`save_sampler` without the selector, which is in
the first file; plain TRL generation is the pass-through sampler), as the reference trainer's
checkpoint holds it; before it, a checkpoint held `frontier_dynamic_sampling.npz` with
dynamic sampling on, nothing otherwise. It is also the one record of the fewer-rollouts
settings (`rollouts`, `screen`, `loss_scale`: FewerRollouts' config, else off). Checkpoints
written before it hold `frontier_fewer_rollouts.json` (FEWER_FILE) instead, still read; one
with neither was written with the defaults (full, 0, batch).
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.trl.driver_kinds import spelled
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler
from frontier_rft.sampling import sampler_file
from frontier_rft.sampling.sampler_file import (
    save_sampler,
    saved_sampler_config,
    saved_sampler_state,
)
from frontier_rft.sampling.spec import SamplerSpec
from frontier_rft.sampling.step import Sampler
from frontier_rft.selectors.persistence import restore_selector, save_selector

__all__ = [
    "FEWER_DEFAULTS",
    "FEWER_FILE",
    "REPEAT_SAMPLER_FILE",
    "SELECTOR_FILE",
    "STEP_SAMPLER_FILE",
    "check_fewer_settings",
    "load_state",
    "load_step_sampler",
    "save_state",
    "save_step_sampler",
    "state_digest",
]

SELECTOR_FILE = "frontier_selector.npz"
REPEAT_SAMPLER_FILE = "frontier_sampler.npz"
"""The RepeatSampler's position, records and counters (beside the selector file)."""
_PREFIX = "frontier_"
"""Our files' prefix in TRL's checkpoint directory (the step sampler's: the trainer's name)."""
STEP_SAMPLER_FILE = _PREFIX + sampler_file.SAMPLER_FILE
FEWER_FILE = "frontier_fewer_rollouts.json"
"""Where checkpoints written before the step sampler file recorded the fewer-rollouts
settings (read, no longer written: the step sampler file holds them)."""
FEWER_DEFAULTS: dict[str, Any] = {"rollouts": "full", "screen": 0, "loss_scale": "batch"}
"""The fewer-rollouts settings of a checkpoint whose step sampler is not FewerRollouts."""


def _describe(settings: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}: {settings[key]}" for key in FEWER_DEFAULTS)


def _saved_fewer_settings(directory: Path) -> dict[str, Any]:
    """The fewer-rollouts settings checkpoint `directory` was written with: its step sampler
    file's FewerRollouts config (another sampler: the defaults), or in a checkpoint from
    before that file, its FEWER_FILE (none: the defaults)."""
    saved = dict(FEWER_DEFAULTS)
    found = saved_sampler_config(directory, prefix=_PREFIX)
    if found is not None:
        try:
            spec: SamplerSpec | None = SamplerSpec.read(*found)
        except (ValueError, TypeError):
            spec = None  # another kind or damaged settings: load_step_sampler names them
        if spec is not None:  # as its kind spells them in the fewer-rollouts keys
            saved.update({k: v for k, v in spelled(spec).items() if k in FEWER_DEFAULTS})
        if saved["rollouts"] == "full" and _ends_by_passes(directory):
            saved["rollouts"] = "fewer_steps"
        return saved
    path = directory / FEWER_FILE
    if path.is_file():
        fix = "resume from an earlier checkpoint"
        try:  # bounded: a hostile file is refused by its size or depth, never a RecursionError
            record = load_json_file(path, "a fewer-rollouts record", max_chars=1 << 16, max_depth=4)
        except ValueError as exc:  # its message names the file and what is wrong
            raise ValueError(f"{exc}; {fix}") from None
        if not isinstance(record, dict) or set(record) != set(FEWER_DEFAULTS):
            keys = sorted(record) if isinstance(record, dict) else record
            raise ValueError(f"{path} is damaged (keys {str(keys)[:80]}); {fix}")
        saved.update(record)
    return saved


def _ends_by_passes(directory: Path) -> bool:
    """Whether the checkpoint's repeat sampler ended its run by passes (rollouts:
    fewer_steps); False where it says nothing or cannot be read (load_state names that)."""
    try:
        with np.load(directory / REPEAT_SAMPLER_FILE, allow_pickle=False) as data:
            return "ends_by_passes" in data.files and bool(data["ends_by_passes"])
    except (OSError, ValueError, TypeError, zipfile.BadZipFile, EOFError):
        return False


def check_fewer_settings(directory: str | os.PathLike[str], settings: Mapping[str, Any]) -> None:
    """ValueError (one line) unless the checkpoint in `directory` was written with these
    fewer-rollouts settings (`_saved_fewer_settings`). With fewer rollouts off on both sides
    (rollouts: full, screen: 0), loss_scale changes nothing and is not compared."""
    directory = Path(directory)
    if not directory.is_dir():
        return  # load_state names the missing checkpoint
    saved = _saved_fewer_settings(directory)
    mine = {key: settings[key] for key in FEWER_DEFAULTS}

    def on(s: Mapping[str, Any]) -> bool:
        return bool(s["rollouts"] != "full" or s["screen"] != 0)

    if not on(saved) and not on(mine):
        return
    if saved != mine:
        raise ValueError(
            f"checkpoint {directory} was written with {_describe(saved)}; this run has "
            f"{_describe(mine)}: resume with the saved settings ({_describe(saved)}), or "
            "start a fresh run"
        )


def save_state(
    directory: str | os.PathLike[str],
    selector: Selector,
    sampler: FrontierRepeatSampler,
    counters: dict[str, int],
) -> None:
    """Write the selector file, then the RepeatSampler file (position, records and `counters`)."""
    directory = Path(directory)
    save_selector(selector, directory / SELECTOR_FILE)
    arrays = {k: np.asarray(v) for k, v in sampler.state_dict().items()}
    arrays.update({f"counter/{k}": np.asarray(int(v), dtype=np.int64) for k, v in counters.items()})
    atomic_write_bytes(directory / REPEAT_SAMPLER_FILE, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]


def load_state(
    directory: str | os.PathLike[str], selector: Selector, sampler: FrontierRepeatSampler
) -> dict[str, int]:
    """Restore `selector` and `sampler` in place from a checkpoint directory; returns the counters.

    The selector object is kept (the trainer and the user hold it) and its state replaced;
    collaborators (a METIS judge, an ADCL estimator) are taken from it.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"checkpoint {directory} does not exist (or is not a directory)")
    missing = [f for f in (SELECTOR_FILE, REPEAT_SAMPLER_FILE) if not (directory / f).is_file()]
    if missing:
        raise ValueError(
            f"checkpoint {directory} has no frontier-rft state ({', '.join(missing)} missing): it "
            "was not written by a frontier-rft trainer, or the run stopped while saving it. "
            "Resume from an earlier checkpoint, or start a fresh run"
        )
    try:
        with np.load(directory / REPEAT_SAMPLER_FILE, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        counters = {
            k.split("/", 1)[1]: int(v) for k, v in arrays.items() if k.startswith("counter/")
        }
    except (OSError, ValueError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(
            f"{directory / REPEAT_SAMPLER_FILE} is damaged "
            f"({type(exc).__name__}: {str(exc)[:80]}); resume from an earlier checkpoint"
        ) from exc
    sampler_state = {k: v for k, v in arrays.items() if not k.startswith("counter/")}
    backup = sampler.state_dict()
    sampler.load_state_dict(sampler_state)
    try:
        restore_selector(selector, directory / SELECTOR_FILE)
    except Exception:
        sampler.load_state_dict(backup)
        raise
    return counters


def save_step_sampler(directory: str | os.PathLike[str], sampler: Sampler) -> None:
    """Write the step sampler's kind, config and own state (the selector's is in SELECTOR_FILE)."""
    save_sampler(sampler, Path(directory) / STEP_SAMPLER_FILE, with_inner=False)


def load_step_sampler(directory: str | os.PathLike[str], sampler: Sampler) -> Callable[[], None]:
    """Check the checkpoint's step sampler state against `sampler` (same kind and settings)
    and return the call that restores it; nothing changes before that call, which cannot fail."""
    if not Path(directory).is_dir():
        return lambda: None  # load_state names the missing checkpoint
    fix = (
        "resume with the same dynamic_sampling, dynamic_sampling_config and fewer-rollouts "
        "settings, or start a fresh run"
    )
    state = saved_sampler_state(directory, sampler, fix, prefix=_PREFIX)
    return (lambda: None) if state is None else (lambda: sampler.load_state_dict(state))


def _digest_into(h: Any, obj: Any) -> None:
    if isinstance(obj, np.ndarray):
        h.update(f"a{obj.dtype.str}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        for key in sorted(obj):
            h.update(f"k{key}".encode())
            _digest_into(h, obj[key])
    elif isinstance(obj, list | tuple):
        h.update(f"l{len(obj)}".encode())
        for item in obj:
            _digest_into(h, item)
    else:
        h.update(f"v{obj!r}".encode())


def state_digest(state: Any) -> str:
    """SHA-256 of a state tree (arrays by dtype, shape and bytes): equal states, equal digests."""
    h = hashlib.sha256()
    _digest_into(h, state)
    return h.hexdigest()
