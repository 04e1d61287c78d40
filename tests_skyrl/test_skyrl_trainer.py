"""frontier-rft's SkyRL trainer driven through SkyRL's real train loop (conftest says what is
real and what is stood in for)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import BATCH, N_SAMPLES, Run, pass_rates, skyrl_config, task_ids
from frontier_rft.integrations.skyrl.config import OWN_STATE_FILE

P = dict(zip(task_ids().tolist(), pass_rates().tolist(), strict=True))


def generated_rollouts(run: Run) -> Counter[tuple[int, int, float]]:
    """Every rollout SkyRL generated, as (task id, draw step, reward): call k is draw k."""
    first = run.sampler._draws - len(run.generator.calls)  # draws before this run (resume)
    return Counter(
        (task, first + k, reward)
        for k, call in enumerate(run.generator.calls)
        for task, reward in call["rollouts"]
    )


def test_prompts_are_the_selectors_picks_and_every_reward_arrives_once(
    make_run: Any, tmp_path: Path
) -> None:
    run = make_run(skyrl_config(tmp_path / "ckpt", steps=12)).train()
    assert len(run.generator.calls) == 12
    # SkyRL generated, step by step and in order, exactly the prompts the selector picked.
    assert [c["tasks"] for c in run.generator.calls] == run.picks
    assert all(len(c["rollouts"]) == BATCH * N_SAMPLES for c in run.generator.calls)
    # Each rollout's reward reached the selector once, with its task id and draw step.
    assert Counter(run.feedback) == generated_rollouts(run)
    assert len(run.feedback) == 12 * BATCH * N_SAMPLES
    # The selector's metrics went to SkyRL's tracker with each step's metrics.
    logged = run.logged()
    assert len(logged) == 12
    assert all(any(k.startswith("curriculum/") for k in step) for step in logged)


def test_greso_stops_picking_solved_prompts_once_seen_solved(make_run: Any, tmp_path: Path) -> None:
    # p fixed at 0.001: a prompt seen solved is taken again with probability 0.001 per pass
    # of GRESO's walk; 8 rollouts per prompt keep the 16 prompts of pass rate 0.3 to 0.7
    # mostly mixed, so two epochs take about four passes (seeded: the same every run).
    frontier = {
        "selector": "greso",
        "seed": 3,
        "rollouts": "full",
        "selector_config": {"p_init": 0.001, "p_min": 0.001, "p_max": 0.001, "min_keep": 1e-4},
    }
    run = make_run(skyrl_config(tmp_path / "ckpt", steps=16, n_samples=8), frontier).train()
    solved = {t for t, p in P.items() if p == 1.0}
    seen_solved: dict[int, int] = {}
    for step, call in enumerate(run.generator.calls):
        for task in call["tasks"]:
            if task in seen_solved:
                pytest.fail(
                    f"solved task {task} picked at step {step}, seen solved at {seen_solved[task]}"
                )
        for task in call["tasks"]:
            rewards = [r for t, r in call["rollouts"] if t == task]
            if task in solved and all(r == 1.0 for r in rewards):
                seen_solved[task] = step
    # Every solved prompt was seen (GRESO's first epoch takes every prompt), then skipped.
    assert set(seen_solved) == solved
    # Uniform would have taken each of them again in the second epoch.
    picked = Counter(t for c in run.generator.calls for t in c["tasks"])
    assert all(picked[t] == 1 for t in solved)


def test_skyrl_filter_reports_dropped_groups_exactly_once(make_run: Any, tmp_path: Path) -> None:
    cfg = skyrl_config(tmp_path / "ckpt", steps=8)
    cfg.trainer.algorithm.dynamic_sampling.type = "filter"
    cfg.trainer.algorithm.dynamic_sampling.max_sample_batches = 0  # no limit
    run = make_run(cfg, {"selector": "uniform", "seed": 1}).train()
    calls = run.generator.calls
    assert len(calls) > 8  # the filter resampled
    dropped = [
        (k, task)
        for k, c in enumerate(calls)
        for task in c["tasks"]
        if len({r for t, r in c["rollouts"] if t == task}) == 1
    ]
    assert dropped, "no zero-variance group: the test data should give some"
    # Every round's rollouts, the dropped groups' included, reached the selector once.
    assert Counter(run.feedback) == generated_rollouts(run)
    assert [c["tasks"] for c in calls] == run.picks


def _state(run: Run) -> dict[str, Any]:
    state = run.sampler.state_dict()
    state.pop("stats")  # updates/rollouts/lag counters are per run: a resumed run restarts lag
    return state


def _assert_same(a: Any, b: Any, where: str = "state") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), where
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, where


@pytest.mark.parametrize("keep", ["data.pt", OWN_STATE_FILE])
def test_resume_at_step_3_ends_with_the_uninterrupted_selector_state(
    make_run: Any, tmp_path: Path, keep: str
) -> None:
    whole = make_run(skyrl_config(tmp_path / "whole", steps=6, ckpt_interval=3)).train()

    ckpt = tmp_path / "resumed"
    first = make_run(skyrl_config(ckpt, steps=3, ckpt_interval=3)).train()
    folder = ckpt / "global_step_3"
    assert (folder / "data.pt").exists() and (folder / OWN_STATE_FILE).exists()
    # Resume through one of the two copies of the selector's state only.
    (folder / (OWN_STATE_FILE if keep == "data.pt" else "data.pt")).unlink()
    resumed = make_run(skyrl_config(ckpt, steps=6, ckpt_interval=3, resume_mode="latest"))
    resumed.train()

    assert len(first.generator.calls) == 3 and len(resumed.generator.calls) == 3
    assert first.picks + resumed.picks == whole.picks
    _assert_same(_state(resumed), _state(whole))
    assert Counter(first.feedback + resumed.feedback) == Counter(whole.feedback)


def test_a_frontier_config_of_another_batch_size_is_refused(tmp_path: Path) -> None:
    from frontier_rft.integrations.skyrl.config import skyrl_sampler_config
    from frontier_rft.integrations.skyrl.trainer import FrontierRayPPOTrainer

    with pytest.raises(ValueError, match=r"batch_size 8 is not .*train_batch_size 4"):
        FrontierRayPPOTrainer(
            cfg=skyrl_config(tmp_path, steps=1),
            tracker=None,
            tokenizer=None,
            train_dataset=None,
            inference_engine_client=None,
            generator=None,
            frontier_config=skyrl_sampler_config({}, 8),
        )


def test_the_trainer_and_its_sampler_hold_the_plan_the_entrypoint_decided(
    make_run: Any, tmp_path: Path
) -> None:
    """The entrypoint decides the run's step once (`resolved_plan`, before Ray starts); the
    trainer and its sampler hold that plan and read their rollouts and batch from it, deciding
    nothing again (issue 90 item 5, issue 89 item 4); a plan of another batch is refused."""
    from frontier_rft.integrations.plan import adapter_plan
    from frontier_rft.sampling.step_plan import StepRows

    plan = adapter_plan("kept", rows=StepRows(BATCH, N_SAMPLES))
    frontier = {"selector": "greso", "seed": 3, "rollouts": "auto"}
    run = make_run(skyrl_config(tmp_path / "ckpt", steps=2), frontier, frontier_plan=plan)
    assert run.trainer.frontier_plan is plan and run.sampler.plan is plan
    assert run.sampler.batch_size == BATCH and run.trainer.frontier_config.rollouts == "kept"
    run.train()
    assert all(len(c["tasks"]) <= BATCH for c in run.generator.calls)
    other = adapter_plan("full", rows=StepRows(BATCH + 1, N_SAMPLES))
    with pytest.raises(ValueError, match=rf"plan's {BATCH + 1} prompts a step are not SkyRL's"):
        make_run(skyrl_config(tmp_path / "other", steps=1), frontier, frontier_plan=other)


SHADOWS = {"selector": "greso", "seed": 3, "shadows": ["greso", "screen2"]}


def test_shadows_follow_the_run_without_changing_it_and_resume_exactly(
    make_run: Any, tmp_path: Path
) -> None:
    plain = make_run(skyrl_config(tmp_path / "plain", steps=12)).train()
    shadowed = make_run(skyrl_config(tmp_path / "shadowed", steps=12), SHADOWS).train()
    assert shadowed.picks == plain.picks and Counter(shadowed.feedback) == Counter(plain.feedback)
    logged = shadowed.logged()
    assert all("curriculum/shadow/screen2/rollouts_saved" in step for step in logged)
    assert logged[-1]["curriculum/shadow/greso/epoch"] >= 1
    # The screen's count, by hand: a group whose first 2 rewards agree saves N - 2 rollouts.
    saved = 0
    for call in shadowed.generator.calls:
        for task in call["tasks"]:
            first_two = [r for t, r in call["rollouts"] if t == task][:2]
            saved += N_SAMPLES - 2 if first_two[0] == first_two[1] else 0
    assert logged[-1]["curriculum/shadow/screen2/rollouts_saved"] == saved > 0

    ckpt = tmp_path / "resumed"
    make_run(skyrl_config(ckpt, steps=6, ckpt_interval=6), SHADOWS).train()
    resumed = make_run(skyrl_config(ckpt, steps=12, ckpt_interval=6, resume_mode="latest"), SHADOWS)
    resumed.train()
    _assert_same(resumed.sampler.shadows.state_dict(), shadowed.sampler.shadows.state_dict())


def test_shadows_beside_skyrls_filter_or_a_screen_too_large_are_refused(
    make_run: Any, tmp_path: Path
) -> None:
    cfg = skyrl_config(tmp_path / "ckpt", steps=2)
    cfg.trainer.algorithm.dynamic_sampling.type = "filter"
    with pytest.raises(ValueError, match=r"shadows with trainer\.algorithm\.dynamic_sampling"):
        make_run(cfg, SHADOWS)
    with pytest.raises(ValueError, match=r"generator\.n_samples_per_prompt above 8"):
        make_run(skyrl_config(tmp_path / "c2", steps=2, n_samples=8), {"shadows": ["screen8"]})
