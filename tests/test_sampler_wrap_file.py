"""A rescue or backfill checkpoint records its own kind (issue 83, item 19): `load_sampler`
rebuilds the wrapper from the trainer's own intact file, a resume from a checkpoint without the
sampler file is refused for a run whose wrapper keeps state (as dynamic sampling's is), and a
checkpoint saved with a wrapper is refused, naming it, for a run without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.sampler_file import (
    SAMPLER_FILE,
    load_sampler,
    save_sampler,
    saved_sampler_state,
)
from frontier_rft.sampling.step import Sampler

FIX = "resume with the saved settings, or start a new --out"


def _selector(seed: int = 0):  # type: ignore[no-untyped-def]
    return make_selector("uniform", TaskPool(num_tasks=16), seed=seed)


def _rescue(seed: int = 0) -> Rescue:
    return Rescue(PassThrough(_selector(seed)), 2)


def _backfill(seed: int = 0) -> Backfill:
    """Backfill around rescue around a kept step, as TrainConfig.step_sampler wraps them."""
    kept = FewerRollouts(_selector(seed), FewerRolloutsConfig())
    return Backfill(Rescue(kept, 2), 8, 3, 2)


@pytest.mark.parametrize("make", [_rescue, _backfill])
def test_load_sampler_accepts_the_wrappers_own_intact_file(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sampler: Sampler = make()
    if isinstance(sampler, Backfill):
        sampler.wraps.solved[[1, 5]] = True  # type: ignore[attr-defined]
    else:
        sampler.solved[[1, 5]] = True
    path = tmp_path / SAMPLER_FILE
    save_sampler(sampler, path)
    loaded = load_sampler(path, _selector(seed=9))
    assert type(loaded) is type(sampler)
    assert loaded.state_dict().keys() == sampler.state_dict().keys()
    inner = loaded.wraps if isinstance(loaded, Backfill) else loaded
    assert isinstance(inner, Rescue) and np.flatnonzero(inner.solved).tolist() == [1, 5]


@pytest.mark.parametrize(
    ("make", "named"), [(_rescue, "with rescue"), (_backfill, "with rescue with backfill")]
)
def test_a_resume_without_the_sampler_file_is_refused_for_a_wrapper_with_state(
    make,
    named: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    with pytest.raises(ValueError, match=rf"has no step_sampler.npz.*{named}; resume") as err:
        saved_sampler_state(tmp_path, make(), FIX)
    assert "\n" not in str(err.value)
    assert saved_sampler_state(tmp_path, PassThrough(_selector()), FIX) is None


def test_a_checkpoint_saved_with_rescue_is_refused_for_a_run_without_it(tmp_path: Path) -> None:
    save_sampler(_rescue(), tmp_path / SAMPLER_FILE, with_inner=False)
    with pytest.raises(ValueError, match=r"saved with the passthrough with rescue sampler.*"
                       r"uses passthrough; resume"):  # fmt: skip
        saved_sampler_state(tmp_path, PassThrough(_selector()), FIX)
    assert saved_sampler_state(tmp_path, _rescue(seed=3), FIX) is not None


def test_a_backfill_checkpoint_with_an_empty_buffer_resumes(tmp_path: Path) -> None:
    """Saved before any group was held (the first steps): its empty buffer read back as one
    group of nothing and the resume was refused (zip() argument 2 is shorter)."""
    save_sampler(_backfill(), tmp_path / SAMPLER_FILE, with_inner=False)
    state = saved_sampler_state(tmp_path, _backfill(seed=4), FIX)
    assert state is not None and state["backfill"]["uses"].size == 0
