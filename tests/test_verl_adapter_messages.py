"""Error messages of the verl adapter's pure-Python parts (no verl needed): task ids, rewards
and dataset columns are named by the key, the stable task id and the row they came from.
The adapter's runs against verl itself are in tests_verl/."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from conftest import assert_state_equal
from frontier_rft.integrations.pool import PoolColumns, build_pool
from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig, read_task_ids

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
