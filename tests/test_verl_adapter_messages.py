"""Error messages of the verl adapter's pure-Python parts (no verl needed): task ids, rewards
and dataset columns are named by the key, the stable task id and the row they came from.
The adapter's runs against verl itself are in tests_verl/."""

from __future__ import annotations

import re
from collections import UserList
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from frontier_rft import Feedback
from frontier_rft.integrations.pool import PoolColumns, build_pool, refused_rewards
from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig, read_task_ids
from frontier_rft.integrations.verl.task_ids import as_task_ids
from helpers import assert_state_equal

N = 16


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a trainer seam the sampler logs to ./frontier_metrics.jsonl: keep it here."""
    monkeypatch.chdir(tmp_path)


def rows(index: Any = lambda i: 100 + i) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i}", "index": index(i)} for i in range(N)]


def sampler(**config: Any) -> FrontierSampler:
    return FrontierSampler(rows(), config=VerlSamplerConfig(batch_size=4, **config))


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        ("abc", "task id 'abc' (str)"),
        (None, "no task id"),
        (float("nan"), "no task id"),
        ("7", "task id '7' (str)"),
        (-3, "task id -3 (int)"),
        (2.5, "task id 2.5 (float)"),
        (True, "task id True (bool)"),
    ],
    ids=repr,
)
def test_bad_task_ids_in_the_dataset_name_the_key_the_value_and_the_row(
    bad: Any, shown: str
) -> None:
    data = rows(lambda i: bad if i == 5 else 100 + i)
    with pytest.raises(
        ValueError, match=rf"'index' has {re.escape(shown)} at row 5: task ids must be non-neg"
    ):
        read_task_ids(data)
    custom = [{"prompt": r["prompt"], "problem": r["index"]} for r in data]
    with pytest.raises(ValueError, match=rf"'problem' has {re.escape(shown)} at row 5"):
        FrontierSampler(custom, config=VerlSamplerConfig(batch_size=4, task_id_key="problem"))
    with pytest.raises(ValueError, match=rf"'task_ids' has {re.escape(shown)} at item 5"):
        FrontierSampler(
            rows(), config=VerlSamplerConfig(batch_size=4), task_ids=[r["index"] for r in data]
        )


def test_task_id_hints_fit_where_the_ids_came_from() -> None:
    bad: list[Any] = [100 + i for i in range(N)]
    bad[5] = "x"
    with pytest.raises(ValueError, match=r"item 5: .*; fix the task_ids given to FrontierSampler$"):
        FrontierSampler(rows(), config=VerlSamplerConfig(batch_size=4), task_ids=bad)
    with pytest.raises(ValueError, match=r"row 5: .*; fix 'index' or set task_id_key to the col"):
        read_task_ids(rows(lambda i: bad[i]))


@pytest.mark.parametrize("huge", [2**63, 2**64 - 1])
def test_uint64_ids_beyond_int64_are_refused_not_wrapped(huge: int) -> None:
    raw = np.array([1, huge, 3], dtype=np.uint64)
    with pytest.raises(
        ValueError, match=rf"'index' has task id {huge} \(int\) at item 1: .*2\*\*63"
    ):
        as_task_ids(raw, "index")
    ids = np.arange(100, 100 + N, dtype=np.uint64)
    ids[1] = huge
    with pytest.raises(ValueError, match=rf"task id {huge} \(int\) at item 1"):
        FrontierSampler(rows(), config=VerlSamplerConfig(batch_size=4), task_ids=ids)
    ok = np.array([0, 2**63 - 1], dtype=np.uint64)
    assert as_task_ids(ok, "index").tolist() == [0, 2**63 - 1]


def test_a_ragged_task_id_column_gets_the_one_line_hint() -> None:
    ragged = rows(lambda i: [1, 2] if i == 3 else 100 + i)
    with pytest.raises(ValueError, match=r"^every dataset item needs one task id under 'index'$"):
        read_task_ids(ragged)
    with pytest.raises(ValueError, match=r"^task_ids must have one id per dataset item \(16\)"):
        FrontierSampler(
            rows(), config=VerlSamplerConfig(batch_size=4), task_ids=[r["index"] for r in ragged]
        )


def test_integral_float_ids_still_work() -> None:
    assert read_task_ids(rows(lambda i: float(100 + i))).tolist() == list(range(100, 100 + N))


@pytest.mark.parametrize("bad", ["abc", None, "103"], ids=repr)
def test_bad_task_ids_in_a_batch_name_the_key_and_change_nothing(bad: Any) -> None:
    s = sampler(selector="prioritized")
    drawn = iter(s)
    ids = s.task_ids[[next(drawn) for _ in range(4)]].tolist()
    before = s.selector.state_dict()
    raw = np.array([*ids[:2], bad, ids[3]], dtype=object)
    with pytest.raises(
        ValueError, match=r"'index' has (task id|no task id).* at item 2: .*non-neg"
    ):
        s.report(raw, np.full(4, 0.5))
    batch = SimpleNamespace(
        non_tensor_batch={"index": raw, "token_level_scores": np.full(4, 0.5)}, batch=None
    )
    with pytest.raises(ValueError, match=r"'index' has (task id|no task id).* at item 2"):
        s.update(batch)
    batch.non_tensor_batch = {
        "extra_info": np.array([{"index": v} for v in raw], dtype=object),
        "token_level_scores": np.full(4, 0.5),
    }
    with pytest.raises(ValueError, match=r"'extra_info.index'|lack 'index'"):
        s.update(batch)
    assert_state_equal(before, s.selector.state_dict())
    s.report(ids, np.full(4, 0.5))  # the good report still lands
    assert s.selector.metrics()["feedback/rollouts"] == 4


def test_a_nan_reward_names_the_stable_task_id_not_a_batch_position() -> None:
    s = sampler(selector="prioritized")
    drawn = iter(s)
    positions = [next(drawn) for _ in range(4)]
    ids = s.task_ids[positions]
    before = s.selector.state_dict()
    rewards = np.array([0.5, 0.5, np.nan, 0.5])
    with pytest.raises(ValueError, match=rf"NaN reward for task {ids[2]} \(1 bad"):
        s.report(ids, rewards)
    with pytest.raises(ValueError, match=rf"reward inf for task {ids[1]} .*reward_range"):
        s.report(ids, np.array([0.5, np.inf, 0.5, 0.5]))
    with pytest.raises(ValueError, match=rf"reward 1.5 for task {ids[3]} .*in \[0, 1\]"):
        s.report(ids, np.array([0.5, 0.5, 0.5, 1.5]))
    assert_state_equal(before, s.selector.state_dict())
    ranged = sampler(selector="prioritized", reward_range=(0.0, 2.0))
    drawn = iter(ranged)
    ids = ranged.task_ids[[next(drawn) for _ in range(4)]]
    with pytest.raises(ValueError, match=rf"NaN reward for task {ids[0]}"):
        ranged.report(ids, np.array([np.nan, 0.5, 0.5, 0.5]))
    ranged.report(ids, np.array([np.inf, -np.inf, 3.0, 1.0]))  # mapped and clipped, as TRL
    assert ranged.selector.metrics()["feedback/rollouts"] == 4


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_a_huge_reward_for_an_unbounded_selector_names_the_task() -> None:
    s = sampler(selector="bots", selector_config={"reward_model": "gaussian"})
    drawn = iter(s)
    ids = s.task_ids[[next(drawn) for _ in range(4)]]
    before = s.selector.state_dict()
    with pytest.raises(ValueError, match=rf"reward 1e\+200 for task {ids[2]} .*finite, of mag"):
        s.report(ids, np.array([0.5, 0.5, 1e200, 0.5]))
    assert_state_equal(before, s.selector.state_dict())
    s.report(ids, np.array([0.5, -3.0, 1e99, 7.0]))  # any finite, moderate reward lands


@pytest.mark.parametrize("bounds", [(0.0, 1.0), None], ids=["bounded", "unbounded"])
@pytest.mark.parametrize("reward_range", [None, (0.0, 2.0)], ids=["raw", "ranged"])
def test_refused_rewards_is_what_feedback_refuses(
    bounds: tuple[float, float] | None, reward_range: tuple[float, float] | None
) -> None:
    values = [0.0, 0.5, 1.0, -0.1, 1.5, 1e99, -1e101, 1e200, np.inf, -np.inf, np.nan]
    for value in values:
        rewards = np.array([0.5, value])
        bad, need = refused_rewards(rewards, reward_range, bounds)
        assert need and not bad[0]
        mapped = rewards if reward_range is None else np.clip(rewards / 2.0, 0.0, 1.0)
        try:
            Feedback(np.array([0, 1]), mapped, step=0).validated(2, bounds)
            refused = False
        except ValueError:
            refused = True
        assert bool(bad[1]) == refused, value


@pytest.mark.parametrize("value", [1.5, -0.2, 85.0])
def test_a_pass_rate_column_out_of_range_is_named(value: float) -> None:
    data = [{"prompt": f"q{i}", "weak": 0.1, "strong": 0.9} for i in range(N)]
    data[3]["strong"] = value
    read = lambda c: [r[c] for r in data]  # noqa: E731
    columns = PoolColumns(pass_rates=("weak", "strong"))
    with pytest.raises(ValueError, match=rf"column 'strong' holds pass rate {value:g} at row 3"):
        build_pool(read, ["prompt", "weak", "strong"], N, columns)
    data[3]["strong"] = 1.0
    pool = build_pool(read, ["prompt", "weak", "strong"], N, columns)
    assert pool.reference_pass_rates is not None and pool.reference_pass_rates[3, 1] == 1.0


def test_a_misspelt_selector_or_option_is_named_when_the_config_is_read() -> None:
    """Before the dataset is read: the closest selector name, and only settable options."""
    with pytest.raises(ValueError, match=r"unknown selector 'bot' \(did you mean 'bots'\?\)"):
        VerlSamplerConfig.from_fields({"selector": "bot"}, 8, "data.sampler.frontier")
    with pytest.raises(ValueError, match=r"'selectr' \(did you mean 'selector'\?\)") as err:
        VerlSamplerConfig.from_fields({"selectr": "bots"}, 8, "data.sampler.frontier")
    assert not re.search(r"\bbatch_size", str(err.value))  # verl's own setting
    config = VerlSamplerConfig.from_fields({"selector": "bots"}, 8, "data.sampler.frontier")
    assert (config.selector, config.batch_size) == ("bots", 8)


@pytest.mark.parametrize("field", ["category_keys", "pass_rate_keys"])
def test_column_lists_left_empty_in_yaml_mean_none_and_others_are_named(field: str) -> None:
    """`pass_rate_keys:` with nothing after it is YAML null: no columns, not a TypeError."""
    config = VerlSamplerConfig.from_fields({field: None}, 8, "data.sampler.frontier")
    assert getattr(config, field) == ()
    # verl hands YAML lists over as OmegaConf ListConfig: any sequence of names is a list
    config = VerlSamplerConfig.from_fields(
        {field: UserList(["weak", "strong"])}, 8, "data.sampler.frontier"
    )
    assert getattr(config, field) == ("weak", "strong")
    for bad in (3, {"weak": "a"}, ["weak", 2]):
        with pytest.raises(ValueError, match=rf"{field} must be a list of column names"):
            VerlSamplerConfig.from_fields({field: bad}, 8, "data.sampler.frontier")


def test_a_sampler_state_with_an_unknown_field_is_refused_and_changes_nothing() -> None:
    s = sampler(selector="bots")
    ids = s.selector.select(4)
    before = s.state_dict()
    with pytest.raises(ValueError, match=r"FrontierSampler state.*unknown field.*'zz_unknown'"):
        s.load_state_dict({**before, "zz_unknown": 1})
    with pytest.raises(ValueError, match=r"missing 'draws'"):
        s.load_state_dict({k: v for k, v in before.items() if k != "draws"})
    assert_state_equal(before, s.state_dict())
    s.load_state_dict(before)  # what it saved still loads
    assert ids.size == 4


def test_the_trainer_adapters_default_to_uniforms_batches_with_skip_as_a_shadow() -> None:
    # Issue 70: skip with kept lost held-out score where the policy learns fast (SmolLM2, the
    # CPU fast regime), so every adapter trains uniform's batches by default and follows
    # skip as a live shadow: what it would save and lose, on the user's own rewards.
    from frontier_rft.integrations.skyrl.config import skyrl_sampler_config
    from frontier_rft.integrations.trl.config import FrontierConfig

    trl = FrontierConfig()
    verl = VerlSamplerConfig(batch_size=4)
    skyrl = skyrl_sampler_config(None, 4)
    for config in (trl, verl, skyrl):
        assert (config.selector, config.rollouts, config.shadows) == ("uniform", "auto", None)
        assert [r.name for r in config.shadow_configs()] == ["skip"]


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_a_sampler_built_by_hand_takes_auto_as_full_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No v1 buffer resolved it: a per-prompt sampler (the legacy trainer, verl <= 0.7) packs
    # full batches, so auto is full, with one warning where the selector skips (planted:
    # skip as kept was measured free of loss up to 2 epochs).
    auto = "frontier_rft.integrations.verl.auto"
    with caplog.at_level("INFO", logger=auto):
        skip = sampler(selector="skip")
    assert skip.config.rollouts == "full" and len(list(iter(skip))) == N
    (warning,) = [r for r in caplog.records if r.name == auto]
    text = warning.getMessage()
    assert warning.levelname == "WARNING" and "\n" not in text
    assert "rollouts: auto generates verl's whole batch (full)" in text
    assert "rollouts: kept needs verl's v1 sync trainer (FrontierReplayBuffer)" in text
    caplog.clear()
    with caplog.at_level("INFO", logger=auto):
        assert sampler(selector="uniform").config.rollouts == "full"
    (info,) = [r for r in caplog.records if r.name == auto]
    assert info.levelname == "INFO"  # uniform never skips: no warning
    assert "selector 'uniform' passes over no prompt" in info.getMessage()


def test_a_checkpoint_of_the_former_default_resumes_when_named_and_is_refused_otherwise() -> None:
    old = sampler(selector="greso", rollouts="full", seed=0)  # the former defaults
    ids = next(iter(old))
    old.report(np.repeat([100 + ids], 2), np.ones(2))
    saved = old.state_dict()
    named = sampler(selector="greso", rollouts="full", seed=0)
    named.load_state_dict(saved)  # resumes as before
    assert_state_equal(named.state_dict(), saved)
    default = sampler(seed=0, selector="skip")  # a later former default
    before = default.state_dict()
    with pytest.raises(ValueError) as err:
        default.load_state_dict(saved)
    assert str(err.value) == (
        "the checkpoint's curriculum was saved with selector: greso, not selector: skip: resume "
        "with selector: greso (and rollouts: full, if it ran with the former default), or start "
        "a fresh run"
    )
    assert_state_equal(default.state_dict(), before)  # refused, nothing changed
    saved = default.state_dict()  # skip's curriculum, resumed under today's default
    today = sampler(seed=0)
    before = today.state_dict()
    with pytest.raises(ValueError) as err:
        today.load_state_dict(saved)
    assert str(err.value).startswith(
        "the checkpoint's curriculum was saved with selector: skip, not selector: uniform: resume "
        "with selector: skip"
    )
    default = today
    assert_state_equal(default.state_dict(), before)  # refused, nothing changed


def test_a_report_with_draw_steps_credits_each_group_to_its_own_draw() -> None:
    # An async trainer (SkyRL's fully-async) can draw a task again before its first group
    # came back, then return the later group first.
    s = FrontierSampler(rows(), config=VerlSamplerConfig(batch_size=4, selector="uniform", seed=0))
    s.selector.select = lambda n: np.array([0, 1, 2, 3])  # type: ignore[method-assign]
    it = iter(s)
    drawn = [next(it) for _ in range(8)]  # draws 0 and 1, both of tasks 100..103
    assert drawn == [0, 1, 2, 3, 0, 1, 2, 3]
    seen: list[tuple[int, int]] = []
    update = s.selector.update

    def spy(fb: Feedback) -> None:
        seen.extend((int(t), fb.step) for t in fb.task_ids)
        update(fb)

    s.selector.update = spy  # type: ignore[method-assign]
    # Task 100 of draw 1, and task 101 of draws 0 and 1, in one report (uids differ by draw).
    s.report([100, 101, 101], [1.0, 0.0, 1.0], ["0@1", "1@0", "1@1"], steps=[1, 0, 1])
    assert sorted(seen) == [(0, 1), (1, 0), (1, 1)]
    assert [(step, ids.tolist()) for step, ids in s._outstanding] == [(0, [0, 2, 3]), (1, [2, 3])]
    # Without steps the oldest draw holding the task is credited, as before.
    s.report([100], [1.0])
    assert seen[-1] == (0, 0)


def _everything(s: FrontierSampler) -> list[Any]:
    """The sampler's state (selector and every shadow), and each reader's RNG on its own."""
    rngs = [s.selector.rng.bit_generator.state] + [
        sh.selector.rng.bit_generator.state for sh in s.shadows.shadows if sh.selector is not None
    ]
    return [s.state_dict(), s.shadows.state_dict(), rngs]


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
@pytest.mark.parametrize("rules", [["screen2", "greso"], ["greso", "screen2"], ["skip"]])
def test_a_reward_a_shadow_refuses_changes_nothing_and_names_the_task(rules: list[str]) -> None:
    # sec reads any finite reward; greso's and skip's shadows read [0, 1]. Refused before the
    # selector or any shadow moves (screen2 first no longer observes the step greso refuses).
    s = sampler(selector="sec", shadows=rules)
    drawn = iter(s)
    ids = np.repeat(s.task_ids[[next(drawn) for _ in range(4)]], 4)
    rewards = np.tile([0.0, 1.0, 0.0, 1.0], 4)
    rewards[6] = 1.5
    before = _everything(s)
    who = next(r for r in rules if r != "screen2")
    with pytest.raises(
        ValueError,
        match=rf"reward 1.5 for task {ids[6]} .*shadow '{who}' needs rewards in \[0, 1\]: set "
        r"VerlSamplerConfig.reward_range=",
    ):
        s.report(ids, rewards)
    assert_state_equal(before, _everything(s))
    rewards[6] = 1.0
    s.report(ids, rewards)  # the retry lands once, on the selector and every shadow
    assert s.selector.metrics()["feedback/rollouts"] == 16
    assert all(sh.metrics()["epoch"] == 1 for sh in s.shadows.shadows)
    ranged = sampler(selector="sec", shadows=rules, reward_range=(0.0, 2.0))
    drawn = iter(ranged)
    ranged.report(np.repeat(ranged.task_ids[[next(drawn) for _ in range(4)]], 4), rewards * 1.5)


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_a_metrics_file_it_cannot_open_refuses_the_report_before_anything_moves(
    tmp_path: Any,
) -> None:
    (tmp_path / "metrics").mkdir()  # a directory where the file should be
    s = sampler(selector="greso", shadows=["screen2"], metrics_jsonl=str(tmp_path / "metrics"))
    drawn = iter(s)
    ids = np.repeat(s.task_ids[[next(drawn) for _ in range(4)]], 4)
    rewards = np.tile([0.0, 1.0, 0.0, 1.0], 4)
    before = _everything(s)
    with pytest.raises(ValueError, match=r"cannot write the selector metrics to .*: set metrics_"):
        s.report(ids, rewards)
    assert_state_equal(before, _everything(s))
