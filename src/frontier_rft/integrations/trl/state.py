"""The selector and sampler state a TRL checkpoint directory carries, written atomically.

Two files beside TRL's own: `frontier_selector.npz` (the standard `save_selector` file,
readable with `frontier_rft.load_selector`) and `frontier_sampler.npz` (the sampler's
position and records plus the adapter's counters). Both are written at the same moment,
after TRL has written the rest of the checkpoint.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.trl.sampler import FrontierRepeatSampler
from frontier_rft.selectors.persistence import load_selector, save_selector

__all__ = ["SAMPLER_FILE", "SELECTOR_FILE", "load_state", "save_state", "state_digest"]

SELECTOR_FILE = "frontier_selector.npz"
SAMPLER_FILE = "frontier_sampler.npz"


def save_state(
    directory: str | os.PathLike[str],
    selector: Selector,
    sampler: FrontierRepeatSampler,
    counters: dict[str, int],
) -> None:
    """Write the selector file, then the sampler file (position, records and `counters`)."""
    directory = Path(directory)
    save_selector(selector, directory / SELECTOR_FILE)
    arrays = {k: np.asarray(v) for k, v in sampler.state_dict().items()}
    arrays.update({f"counter/{k}": np.asarray(int(v), dtype=np.int64) for k, v in counters.items()})
    atomic_write_bytes(directory / SAMPLER_FILE, lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]


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
    missing = [f for f in (SELECTOR_FILE, SAMPLER_FILE) if not (directory / f).is_file()]
    if missing:
        raise ValueError(
            f"checkpoint {directory} has no frontier-rft state ({', '.join(missing)} missing): it "
            "was not written by a frontier-rft trainer, or the run stopped while saving it. "
            "Resume from an earlier checkpoint, or start a fresh run"
        )
    collaborators = {}
    for name in type(selector).collaborators:
        if not hasattr(selector, name):
            raise ValueError(f"cannot reload {selector.name}: it has no attribute {name!r}")
        collaborators[name] = getattr(selector, name)
    saved = load_selector(directory / SELECTOR_FILE, pool=selector.pool, **collaborators)
    try:
        with np.load(directory / SAMPLER_FILE, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        counters = {
            k.split("/", 1)[1]: int(v) for k, v in arrays.items() if k.startswith("counter/")
        }
    except (OSError, ValueError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(
            f"{directory / SAMPLER_FILE} is damaged ({type(exc).__name__}: {str(exc)[:80]}); "
            "resume from an earlier checkpoint"
        ) from exc
    sampler_state = {k: v for k, v in arrays.items() if not k.startswith("counter/")}
    backup = sampler.state_dict()
    sampler.load_state_dict(sampler_state)
    try:
        selector.load_state_dict(saved.state_dict())
    except Exception:
        sampler.load_state_dict(backup)
        raise
    return counters


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
