"""Shadows beside a tinker-cookbook run (TinkerFrontierConfig.shadows, docs/shadow.md), driven
by the cookbook's real `rl.train.main` with the remote service stood in for (fake_service).
Rewards reach the dataset a group at a time, with each trajectory's sampled tokens; the
shadows read each batch whole, in the order drawn, once it is complete."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_service import GROUP_SIZE, NUM_TASKS, PASS_RATES, WRONG_TOKENS, Record
from test_tinker_adapter import _states_equal, _trajectory
from tinker_run import BATCH, Spy, make_dataset, spy_on

from frontier_rft.integrations.tinker import FrontierRLDataset, TinkerFrontierConfig
from frontier_rft.shadow.replay import replay, reward_record

Run = Callable[..., Record]
RULES = ("greso", "screen2", "greso+screen3")
SEED = 7  # make_dataset's


def _shadow_metrics(dataset: FrontierRLDataset) -> dict[str, float]:
    return {k: v for k, v in dataset.metrics().items() if k.startswith("shadow/")}


def _groups(spy: Spy) -> dict[tuple[int, int], tuple[float, ...]]:
    """(step, task) -> the group's rewards, as the selector got them (trajectory order)."""
    return {(step, task): rewards for step, task, rewards in spy.updates}


@pytest.mark.parametrize("lag", [None, 0], ids=["sync", "async"])
def test_shadows_change_nothing_of_the_run(run_cookbook: Run, tmp_path: Path, lag: Any) -> None:
    plain = make_dataset(tmp_path / "plain", "greso")
    plain_spy = spy_on(plain)
    plain_record = run_cookbook(plain, tmp_path / "plain", max_steps=8, async_lag=lag)
    shadowed = make_dataset(tmp_path / "shadowed", "greso", shadows=RULES)
    spy = spy_on(shadowed)
    record = run_cookbook(shadowed, tmp_path / "shadowed", max_steps=8, async_lag=lag)

    assert spy.picks == plain_spy.picks  # the same draws
    assert Counter(spy.updates) == Counter(plain_spy.updates)
    assert Counter(record.samples) == Counter(plain_record.samples)
    assert _states_equal(shadowed.selector.state_dict(), plain.selector.state_dict())
    # The shadows' metrics are logged whatever the verbosity, under curriculum/shadow/<rule>/.
    lines = (tmp_path / "shadowed" / "frontier_metrics.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    for rule in RULES:
        assert f"curriculum/shadow/{rule}/rollouts_saved" in last
        assert f"curriculum/shadow/{rule}/informative_lost" in last
    assert shadowed.metrics()["tinker/shadow_batches"] >= 7
    plain_lines = (tmp_path / "plain" / "frontier_metrics.jsonl").read_text()
    assert "shadow" not in plain_lines


def test_screen_counts_are_hand_counted_and_equal_the_replay_of_the_runs_rewards(
    run_cookbook: Run, tmp_path: Path
) -> None:
    steps = 10
    dataset = make_dataset(tmp_path, "uniform", shadows=("screen2", "greso", "greso+screen2"))
    spy = spy_on(dataset)
    run_cookbook(dataset, tmp_path, max_steps=steps)

    groups = _groups(spy)
    saved = screened = lost = tokens = tokens_saved = 0
    log = tmp_path / "rewards.jsonl"
    with log.open("w") as fh:
        for step, picks in enumerate(spy.picks):
            for task in picks:
                group = np.asarray(groups[(step, task)])
                sizes = np.where(group == 1, 1, WRONG_TOKENS)  # the sampler's answers' tokens
                tokens += int(sizes.sum())
                if group[0] == group[1]:  # screened out after 2: the other 2 not spent
                    screened += 1
                    saved += GROUP_SIZE - 2
                    lost += int(not np.all(group == group[0]))
                    tokens_saved += int(sizes[2:].sum())
            rewards = np.asarray([groups[(step, t)] for t in picks])
            lengths = np.where(rewards == 1, 1, WRONG_TOKENS)
            fh.write(reward_record(step, NUM_TASKS, SEED, np.asarray(picks), rewards, lengths))
    # Known prompts: never- and always-solved ones are always screened out, losing nothing.
    constant = sum(PASS_RATES[t] in (0.0, 1.0) for picks in spy.picks for t in picks)
    assert screened > constant > 0 and lost > 0
    live = dataset.metrics()
    assert live["tinker/shadow_batches"] == steps
    assert live["tinker/shadow_incomplete_batches"] == 0.0
    assert live["shadow/screen2/rollouts_saved"] == saved
    assert live["shadow/screen2/screened_out"] == screened
    assert live["shadow/screen2/informative_lost"] == lost
    # Tokens as well: each trajectory's sampled tokens (wrong answers run long).
    assert live["shadow/screen2/tokens_saved"] == tokens_saved > 0
    assert live["shadow/screen2/tokens_saved_share"] == pytest.approx(tokens_saved / tokens)
    assert tokens_saved / tokens != pytest.approx(live["shadow/screen2/rollouts_saved_share"])
    # `frontier shadow replay` of the same rewards and lengths: the same figures, tokens
    # included, greso's draw for draw.
    replayed = replay(log, ["screen2", "greso", "greso+screen2"])
    for shadow, again in zip(dataset.shadows.shadows, replayed, strict=True):
        assert _states_equal(again.passes(), shadow.passes())
        assert _states_equal(again.state_dict(), shadow.state_dict())


def test_resume_continues_the_shadows_exactly_in_sync(run_cookbook: Run, tmp_path: Path) -> None:
    whole = make_dataset(tmp_path / "whole", "greso", shadows=RULES)
    run_cookbook(whole, tmp_path / "whole", max_steps=8)
    first = make_dataset(tmp_path / "split", "greso", shadows=RULES)
    run_cookbook(first, tmp_path / "split", max_steps=3)
    assert (tmp_path / "split/frontier_tinker/batch_000003/frontier_shadow2.npz").is_file()
    resumed = make_dataset(tmp_path / "split", "greso", shadows=RULES)  # a new process
    run_cookbook(resumed, tmp_path / "split", max_steps=8)

    assert resumed.metrics()["tinker/resumes"] == 1.0
    assert _states_equal(resumed.shadows.state_dict(), whole.shadows.state_dict())
    got, want = _shadow_metrics(resumed), _shadow_metrics(whole)
    assert got == pytest.approx(want, nan_ok=True) and len(want) > 30
    assert resumed.metrics()["tinker/shadow_batches"] == 8


def test_async_batches_that_never_complete_are_counted_and_passed_over(
    run_cookbook: Run, tmp_path: Path
) -> None:
    # One batch awaited at a time: with two steps off policy, older batches are forgotten
    # before all their groups report; the shadows pass over them and read the rest.
    dataset = make_dataset(
        tmp_path, "uniform", num_batches=10, shadows=("screen2",), max_outstanding_batches=1
    )
    spy = spy_on(dataset)
    run_cookbook(dataset, tmp_path, max_steps=8, async_lag=2, train_delay=0.02, sample_delay=0.001)
    m = dataset.metrics()
    assert m["tinker/forgotten_groups"] > 0
    incomplete, fed = m["tinker/shadow_incomplete_batches"], m["tinker/shadow_batches"]
    assert incomplete > 0 and fed > 0
    assert incomplete + fed + m["tinker/shadow_waiting_batches"] == m["tinker/draws"]
    assert dataset.shadows.shadows[0].passes()[0]["steps"] == fed
    # Every batch the shadow read was complete: its screened groups are among those.
    per_step = Counter(step for step, _, _ in spy.updates)
    assert sum(n == BATCH for n in per_step.values()) >= fed


def test_async_resume_counts_the_batches_in_flight_as_incomplete(
    run_cookbook: Run, tmp_path: Path
) -> None:
    first = make_dataset(tmp_path, "greso", shadows=RULES)
    run_cookbook(first, tmp_path, max_steps=6, async_lag=2, train_delay=0.02, sample_delay=0.001)
    # The state of checkpoint 3: saved when batch 3 was first picked, earlier ones in flight.
    saved = json.loads(
        (tmp_path / "frontier_tinker/batch_000003/frontier_dataset.json").read_text()
    )
    in_flight = {int(k) for k in saved["outstanding"]}
    assert in_flight, "the async loop picks ahead: batches were in flight at batch 3's pick"
    resumed = make_dataset(tmp_path, "greso", shadows=RULES)
    resumed.get_batch(3)  # what the cookbook asks first when it resumes at checkpoint 3
    m = resumed.metrics()
    assert m["tinker/resumes"] == 1.0
    assert m["tinker/shadow_incomplete_batches"] == saved["shadow_stats"]["incomplete"] + len(
        in_flight & {int(k) for k in saved["shadow_batches"]}
    )
    assert m["tinker/shadow_waiting_batches"] == 1.0  # only the batch just picked
    # The held batches keep each group's sampled tokens; a state saved before they did loads.
    held = saved["shadow_batches"].values()
    assert held and all(len(b["lengths"]) == len(b["rewards"]) for b in held)
    for batch in held:
        del batch["lengths"]
    (tmp_path / "frontier_tinker/batch_000003/frontier_dataset.json").write_text(json.dumps(saved))
    older = make_dataset(tmp_path, "greso", shadows=RULES)
    older.get_batch(3)
    assert {k: v for k, v in older.metrics().items() if k.startswith("tinker/shadow")} == {
        k: v for k, v in m.items() if k.startswith("tinker/shadow")
    }


def test_bad_rules_are_one_line_errors_before_anything_runs() -> None:
    cases = [
        (["gresso"], "unknown selector 'gresso'"),
        (["greso", "greso"], "names a rule twice"),
        (["bots"], "re-draws from the whole pool"),
        ([4], "list of rules"),
    ]
    for rules, phrase in cases:
        with pytest.raises(ValueError, match=phrase) as err:
            TinkerFrontierConfig(batch_size=BATCH, shadows=rules)
        assert "\n" not in str(err.value)
    assert TinkerFrontierConfig(batch_size=BATCH, shadows="greso").shadows == ("greso",)


def test_a_screen_not_below_the_group_size_is_refused_before_any_sampling(
    run_cookbook: Run, tmp_path: Path
) -> None:
    dataset = make_dataset(tmp_path, "uniform", shadows=("screen4",))  # groups of 4
    spy = spy_on(dataset)
    with pytest.raises(ValueError, match="screens with 4 rollouts") as err:
        run_cookbook(dataset, tmp_path, max_steps=2)
    assert "\n" not in str(err.value)
    assert spy.updates == []  # refused before any group was scored
    with pytest.raises(ValueError, match="screens with 4 rollouts"):
        dataset.get_batch(1)  # remembered, if a tolerant rollout strategy swallowed it


def test_a_state_of_other_shadows_is_refused_and_an_old_state_loads(
    run_cookbook: Run, tmp_path: Path
) -> None:
    run_cookbook(make_dataset(tmp_path, "greso", shadows=("screen2",)), tmp_path, max_steps=3)
    other = make_dataset(tmp_path, "greso", shadows=("greso",))
    with pytest.raises(ValueError, match=r"shadows \['screen2'\].*resume with the shadows"):
        other.get_batch(3)
    assert other.metrics()["tinker/draws"] == 0.0  # refused: nothing changed
    assert other.shadows.shadows[0].metrics()["rollouts_saved"] == 0.0

    # A state saved before shadows existed: no shadow keys, no shadow files.
    where = tmp_path / "frontier_tinker" / "batch_000003"
    state = json.loads((where / "frontier_dataset.json").read_text())
    old = {k: v for k, v in state.items() if not k.startswith("shadow")}
    (where / "frontier_dataset.json").write_text(json.dumps(old))
    (where / "frontier_shadow0.npz").unlink()
    plain = make_dataset(tmp_path, "greso")
    assert len(plain.get_batch(3)) == BATCH
    assert plain.metrics()["tinker/resumes"] == 1.0
    with pytest.raises(ValueError, match="resume with the shadows"):
        make_dataset(tmp_path, "greso", shadows=("screen2",)).get_batch(3)


def test_a_reward_a_shadows_selector_cannot_take_is_refused_before_anything_changes() -> None:
    import asyncio

    from fake_service import TaskGroup

    from frontier_rft import TaskPool
    from frontier_rft.selectors.registry import SELECTORS

    class Unbounded(SELECTORS["uniform"]):  # type: ignore[misc,valid-type]
        """A user's selector for continuous rewards (no bounds); a greso shadow needs [0, 1]."""

        @property
        def reward_bounds(self) -> None:
            return None

    config = TinkerFrontierConfig(batch_size=4, shadows=("screen2", "greso"))
    selector = Unbounded(TaskPool(num_tasks=8), seed=0)
    dataset = FrontierRLDataset([TaskGroup(t) for t in range(8)], config, selector)
    builders = dataset.get_batch(0)
    before = (dataset.selector.state_dict(), dataset.shadows.state_dict())
    trajectories = [_trajectory(2.0), _trajectory(0.0)]
    with pytest.raises(ValueError, match=r"shadow 'greso' needs rewards in \[0, 1\].*reward_range"):
        asyncio.run(builders[0].compute_group_rewards(trajectories, [None, None]))
    assert _states_equal((dataset.selector.state_dict(), dataset.shadows.state_dict()), before)
    assert dataset.metrics()["tinker/groups_reported"] == 0.0


def test_shadows_beside_rollouts_kept_are_refused_in_one_line() -> None:
    from frontier_rft.integrations.tinker import TinkerFrontierConfig

    with pytest.raises(ValueError, match="kept") as err:
        TinkerFrontierConfig(batch_size=4, shadows=("greso",), rollouts="kept")
    assert "\n" not in str(err.value)
