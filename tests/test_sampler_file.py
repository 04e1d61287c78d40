"""One saved file and one "same sampler?" check for every step sampler: a checkpoint of another
kind or settings is refused in one line, and checkpoints written before the file (under the
old names) still resume. That every sampler round-trips through save_sampler / load_sampler
is the contract suite's (tests/test_sampler_contract.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.core.persistence import write_state_file
from frontier_rft.sampling.allocation import Allocation, AllocationConfig
from frontier_rft.sampling.dynamic_sampling import DynamicSampling, DynamicSamplingConfig
from frontier_rft.sampling.fewer_rollouts import FewerRollouts
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.pilot_commit import PilotCommit
from frontier_rft.sampling.sampler_file import (
    SAMPLER_FILE,
    save_sampler,
    saved_sampler_state,
)
from frontier_rft.sampling.step import Sampler
from helpers import assert_state_equal

FIX = "resume with the saved settings"


def build(kind: str, seed: int = 3) -> Sampler:
    selector = make_selector("uniform", TaskPool(num_tasks=40), seed=seed)
    if kind == "passthrough":
        return PassThrough(selector)
    if kind == "dynamic_sampling":
        return DynamicSampling(selector, DynamicSamplingConfig(adaptive=True))
    if kind == "allocation":
        return Allocation(selector, AllocationConfig())
    if kind == "fewer_rollouts":
        return FewerRollouts(selector)
    return PilotCommit(selector)


KINDS = ("passthrough", "dynamic_sampling", "allocation", "fewer_rollouts", "pilot_commit")


def run(sampler: Sampler, steps: range) -> list[list[int]]:
    """Drive `sampler` with rewards in {0, 1} fixed by (task, step); the ids it trained."""

    def rollout(ids: Any, counts: Any = None) -> Any:
        sizes = np.full(len(ids), 8) if counts is None else np.asarray(counts)
        rows = [(np.arange(k) + t + step) % 3 == 0 for t, k in zip(ids, sizes, strict=True)]
        return np.concatenate(rows).astype(np.float64)

    out = []
    for step in steps:
        samples = sampler.sample(step, 4, 8, rollout)
        out.append(samples.train.task_ids.tolist())
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_held_is_reached_through_the_protocol(kind: str) -> None:
    sampler = build(kind)
    run(sampler, range(3))
    held = sampler.held()
    assert isinstance(held, list)
    if kind != "pilot_commit":
        assert held == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpoint_of_another_sampler_is_refused_in_one_line(kind: str, tmp_path: Path) -> None:
    saved = build("pilot_commit" if kind != "pilot_commit" else "allocation")
    save_sampler(saved, tmp_path / SAMPLER_FILE, with_inner=False)
    mine = build(kind)
    before = mine.state_dict()
    with pytest.raises(ValueError, match=rf"saved with the {saved.kind} sampler.*uses {kind}; "):
        saved_sampler_state(tmp_path, mine, FIX)
    assert_state_equal(mine.state_dict(), before)


def test_a_checkpoint_with_other_settings_is_refused_in_one_line(tmp_path: Path) -> None:
    save_sampler(build("dynamic_sampling"), tmp_path / SAMPLER_FILE, with_inner=False)
    other = DynamicSampling(build("passthrough").inner, DynamicSamplingConfig(max_rounds=3))
    with pytest.raises(ValueError, match=r"saved with dynamic_sampling .*asks for .*; resume") as e:
        saved_sampler_state(tmp_path, other, FIX)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("kind", "old_name"),
    [
        ("dynamic_sampling", "dynamic_sampling.npz"),
        ("allocation", "allocation.npz"),
        ("pilot_commit", "pilot_commit.npz"),
    ],
)
def test_a_checkpoint_written_under_the_old_name_resumes(
    kind: str, old_name: str, tmp_path: Path
) -> None:
    """Before step_sampler.npz: the same layout under the sampler's own name, with a seed."""
    straight, first = build(kind), build(kind)
    expected = run(straight, range(6))
    got = run(first, range(3))
    state = {**first.state_dict(with_inner=False), "seed": 3}  # the old wrappers saved one
    write_state_file(tmp_path / old_name, kind, {"state": state})
    resumed = build(kind)
    resumed.inner.load_state_dict(first.inner.state_dict())  # selector.npz, as the trainer does
    restored = saved_sampler_state(tmp_path, resumed, FIX)
    assert restored is not None
    resumed.load_state_dict(restored)
    got += run(resumed, range(3, 6))
    assert got == expected


@pytest.mark.parametrize("cls", [DynamicSampling, Allocation])
def test_the_wrappers_take_no_seed(cls: type) -> None:
    """Nothing of theirs is random: no seed to take, none saved (an old state's is read)."""
    selector = make_selector("uniform", TaskPool(num_tasks=40), seed=3)
    with pytest.raises(TypeError, match="seed"):
        cls(selector, seed=3)
    assert "seed" not in cls(selector).state_dict() and not hasattr(cls(selector), "seed")


def test_a_checkpoint_without_the_file(tmp_path: Path) -> None:
    """Written before the file: nothing to restore for a sampler without state of its own;
    one line for a sampler that needs its state."""
    assert saved_sampler_state(tmp_path, build("passthrough"), FIX) is None
    assert saved_sampler_state(tmp_path, build("fewer_rollouts"), FIX) is None
    with pytest.raises(ValueError, match=r"has no step_sampler.npz.*not allocation; resume"):
        saved_sampler_state(tmp_path, build("allocation"), FIX)


def test_a_damaged_file_is_refused_without_change(tmp_path: Path) -> None:
    first = build("dynamic_sampling")
    run(first, range(2))
    state = first.state_dict(with_inner=False)
    state["clock"] = -5  # no sampler ever reached that
    write_state_file(tmp_path / SAMPLER_FILE, "dynamic_sampling", {"state": state})
    mine = build("dynamic_sampling")
    with pytest.raises(ValueError, match=r"step_sampler.npz: .*clock.*; resume"):
        saved_sampler_state(tmp_path, mine, FIX)


@pytest.mark.parametrize("how", ["not a zip", "cut short", "another kind", "no config"])
def test_a_file_that_does_not_read_is_refused_with_the_fix(how: str, tmp_path: Path) -> None:
    """saved_sampler_state's promise: one line ending in the fix, for a damaged file too."""
    path, mine = tmp_path / SAMPLER_FILE, build("dynamic_sampling")
    if how == "not a zip":
        path.write_bytes(b"garbage")
    elif how == "cut short":
        save_sampler(mine, path)
        path.write_bytes(path.read_bytes()[:200])
    elif how == "another kind":
        write_state_file(path, "nosuch", {"state": {"kind": "nosuch", "config": {}}})
    else:
        write_state_file(path, "dynamic_sampling", {"state": {"kind": "dynamic_sampling"}})
    before = mine.state_dict()
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: [^\n]*; {FIX}$"):
        saved_sampler_state(tmp_path, mine, FIX)
    assert_state_equal(mine.state_dict(), before)


def test_trl_reads_the_old_dynamic_sampling_file(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from frontier_rft.integrations.trl.state import (
        STEP_SAMPLER_FILE,
        load_step_sampler,
        save_step_sampler,
    )

    first = build("dynamic_sampling")
    run(first, range(3))
    save_step_sampler(tmp_path, first)
    assert (tmp_path / STEP_SAMPLER_FILE).is_file()
    (tmp_path / STEP_SAMPLER_FILE).rename(tmp_path / "frontier_dynamic_sampling.npz")
    resumed = build("dynamic_sampling")
    load_step_sampler(tmp_path, resumed)()
    assert_state_equal(resumed.state_dict(with_inner=False), first.state_dict(with_inner=False))
    with pytest.raises(ValueError, match="uses passthrough; resume with the same dynamic_"):
        load_step_sampler(tmp_path, build("passthrough"))
