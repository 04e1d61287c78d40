"""The reward functions and `reward_weights` of a TRL run, as the frontier-rft TRL adapter
records them in its output dir (`REWARDS_FILE`), so that `frontier shadow replay` weighs the
run's reward columns as the run did (docs/shadow.md).

TRL itself keeps `reward_weights` only in `training_args.bin`, a pickle never read here, and
its `trainer_state.json` names the reward functions (`rewards/<name>/mean`) but not their
weights; the completions table holds one column per function, unweighted. At the start of
`train()` the adapter writes, on the main process:

    {"reward_funcs": ["accuracy", "format"], "reward_weights": [1.0, 0.5], "seed": 42}

("seed": the seed of the run's live shadows, `selector_seed` or TRL's `args.seed`, where the
writer gives it; TRL's own trainer_state.json records no seed;
TRL's names, `GRPOTrainer.reward_func_names`, the names of its completions table's reward
columns; the weights TRL sums them with). It is read back bounded and checked, a bad file
refused in one line naming it and the fix.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from frontier_rft.core.jsonsafe import loads_bounded

__all__ = [
    "MAX_REWARDS_CHARS",
    "REWARDS_FILE",
    "read_run_rewards",
    "read_run_seed",
    "write_run_rewards",
]

REWARDS_FILE = "frontier_rewards.json"
"""The file in a TRL run's output dir that holds its reward functions and weights."""
MAX_REWARDS_CHARS = 1 << 20
"""Largest such file read (a run of 1,000 reward functions with long names is under 100 kB)."""
_FIX = f"delete {REWARDS_FILE}, or name the reward columns with --reward-column NAME=WEIGHT"


def write_run_rewards(
    directory: str | os.PathLike[str],
    names: Sequence[str],
    weights: Sequence[float],
    seed: int | None = None,
) -> Path:
    """Record a run's reward functions and their weights in `directory`, and the seed of its
    live shadows where given (written whole, then renamed into place: a run killed mid-write
    leaves the old file or none); the path. It refuses nothing (a run does not stop for its
    replay's sake): `read_run_rewards` and `read_run_seed` check."""
    record: dict[str, object] = {
        "reward_funcs": [str(n) for n in names],
        "reward_weights": [float(w) for w in weights],
    }
    if seed is not None:
        record["seed"] = int(seed)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path, part = folder / REWARDS_FILE, folder / f".{REWARDS_FILE}.part"
    part.write_text(json.dumps(record) + "\n", encoding="utf-8")
    os.replace(part, path)
    return path


def read_run_rewards(directory: str | os.PathLike[str]) -> list[tuple[str, float]] | None:
    """The reward functions and weights recorded in `directory` (a TRL run's output dir), in
    TRL's order; None where no such file is there. A ValueError naming the file and the fix
    for one that is not a regular file, too large, or not such a record."""
    record = _read(directory)
    return None if record is None else _check(record, str(Path(directory) / REWARDS_FILE))


def read_run_seed(directory: str | os.PathLike[str]) -> int | None:
    """The seed of the run's live shadows recorded in `directory`'s REWARDS_FILE; None where
    the file or its seed is absent. A ValueError naming the file for a seed that is not an int
    >= 0."""
    record = _read(directory)
    if not isinstance(record, dict) or "seed" not in record:
        return None
    seed = record["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(
            f"{Path(directory) / REWARDS_FILE}: seed must be an int >= 0, got {str(seed)[:40]}; "
            "delete the file's seed, or pass --seed"
        )
    return seed


def _read(directory: str | os.PathLike[str]) -> object:
    """REWARDS_FILE's record in `directory`, parsed and bounded; None where it is absent."""
    path = Path(directory) / REWARDS_FILE
    if not path.exists():
        return None
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file; {_FIX}")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_REWARDS_CHARS + 1)  # never more than the bound in memory
        record = loads_bounded(text, max_chars=MAX_REWARDS_CHARS, max_depth=4)
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"{path}: not a record of reward functions ({str(exc)[:60]}); {_FIX}"
        ) from None
    return record


def _check(record: object, where: str) -> list[tuple[str, float]]:
    """The (name, weight) pairs of a record, or a ValueError naming `where`."""
    names = record.get("reward_funcs") if isinstance(record, dict) else None
    weights = record.get("reward_weights") if isinstance(record, dict) else None
    if (
        not isinstance(names, list)
        or not isinstance(weights, list)
        or not names
        or len(names) != len(weights)
        or not all(isinstance(n, str) and n for n in names)
        or not all(
            isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w)
            for w in weights
        )
    ):
        raise ValueError(
            f"{where}: not a record of reward functions (reward_funcs: names, reward_weights: "
            f"one finite number each); {_FIX}"
        )
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ValueError(
            f"{where}: two reward functions are named {twice[:60]!r}: TRL logs both under one "
            "name, so their columns cannot be told apart; give each reward function its own "
            "__name__"
        )
    return [(n, float(w)) for n, w in zip(names, weights, strict=True)]
