"""scalerl: ScaleRL's No-Positive-Resampling against TRL's code, transcribed here.

The oracle (`trl_stream`, `trl_record`) transcribes `ScaleRLRolloutLoop._repeat_iterator` and
the pass-rate line of `ScaleRLRolloutLoop._score_group` in TRL's
trl/experimental/async_grpo/scalerl_trainer.py at commit
02ca6edd2c42f6e491e7d9df4482037576fd2d63: the dataset cycled in its own order, a row
skipped when `epoch > 0 and pass_rate.get(row, 0.0) >= pass_rate_cap` (0.9), and each scored
group setting `pass_rate[row] = sum(r > 0) / len(scored)` (NaN rewards left out).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.cli.main import main
from frontier_rft.selectors.scalerl import ScaleRLSelector

CAP = 0.9


class Spin(Exception):
    """TRL's iterator would loop without yielding (every row retired)."""


def trl_stream(num_rows: int, pass_rate: dict[int, float], cap: float = CAP) -> Iterator[int]:
    """TRL's `_repeat_iterator`, one row per group (num_generations copies folded into one)."""
    epoch = 0
    idle = 0
    while True:
        for row_index in range(num_rows):
            if epoch > 0 and pass_rate.get(row_index, 0.0) >= cap:
                idle += 1
                if idle > 2 * num_rows:
                    raise Spin
                continue
            idle = 0
            yield row_index
        epoch += 1


def trl_record(pass_rate: dict[int, float], row: int, rewards: list[float]) -> None:
    """The pass-rate line of TRL's `_score_group`: recorded before the flat-group drop."""
    scored = [r for r in rewards if not np.isnan(r)]
    if scored:
        pass_rate[row] = sum(r > 0 for r in scored) / len(scored)


def feed(sel: ScaleRLSelector, step: int, ids: np.ndarray, rewards: np.ndarray) -> None:
    task_ids = np.repeat(ids, rewards.shape[1])
    sel.update(Feedback(task_ids=task_ids, rewards=rewards.ravel(), step=step))


def test_hand_computed_history() -> None:
    """5 prompts, 2 a step, 10 rollouts a group: 9/10 passes (0.9) retires, 8/10 does not;
    a fractional reward above 0 passes (TRL's r > 0); a flat all-0 group is recorded (0) and
    stays; the rule does nothing in the first pass; a prompt retired is never taken again."""
    sel = make_selector("scalerl", TaskPool(num_tasks=5), seed=0)
    assert isinstance(sel, ScaleRLSelector)
    ten = lambda k, v=1.0: np.array([[v] * k + [0.0] * (10 - k)])  # noqa: E731
    script = [  # (expected ids, rewards per id)
        ([0, 1], [ten(9), ten(8)]),  # 0: 0.9 -> retired; 1: 0.8
        ([2, 3], [ten(10, 0.1), ten(0)]),  # 2: all 0.1 -> rate 1.0, retired; 3: flat 0
        ([4, 1], [ten(5), ten(10)]),  # 4 ends pass 1; pass 2 passes over 0; 1 now 1.0
        ([3, 4], [ten(10), ten(5)]),  # pass 2 passes over 2; 3 now retired
    ]
    for step, (want, rewards) in enumerate(script):
        ids = sel.select(2)
        assert ids.tolist() == want, step
        feed(sel, step, ids, np.concatenate(rewards))
    sel.flush()
    np.testing.assert_allclose(sel.pass_rates(), [0.9, 1.0, 1.0, 1.0, 0.5])
    assert sel.retired().tolist() == [True, True, True, True, False]
    assert sel.metrics()["scalerl/topped_up_total"] == 0.0
    # Only prompt 4 is left: TRL's iterator would yield it twice in a row (or spin); a
    # batch here is distinct, so it is topped up with a retired prompt, and says so.
    ids = sel.select(2)
    assert ids[0] == 4 and sel.metrics()["scalerl/topped_up_total"] == 1.0


def run_both(
    rng: np.random.Generator, n: int, b: int, steps: int, group: int
) -> tuple[list[list[int]], list[list[int]]]:
    """The selector and the oracle on one random history, until the oracle's step would
    repeat a row or spin (TRL's trainer step may hold a row twice; a batch here may not)."""
    p = rng.beta(0.4, 0.4, size=n)  # U-shaped: many prompts solved, many never
    levels = rng.choice([0.1, 0.5, 1.0], size=n)  # a fractional reward still passes r > 0
    sel = make_selector("scalerl", TaskPool(num_tasks=n), seed=int(rng.integers(1 << 30)))
    rates: dict[int, float] = {}
    stream = trl_stream(n, rates)
    ours: list[list[int]] = []
    theirs: list[list[int]] = []
    for step in range(steps):
        try:
            want = [next(stream) for _ in range(b)]
        except Spin:
            break
        if len(set(want)) < b:
            break
        ids = sel.select(b)
        ours.append(ids.tolist())
        theirs.append(want)
        rewards = (rng.random((b, group)) < p[ids, None]) * levels[ids, None]
        if rng.random() < 0.2:  # a learning policy: prompts get easier or harder
            p = np.clip(p + rng.normal(0, 0.3, size=n), 0, 1)
        for row, r in zip(ids.tolist(), rewards.tolist(), strict=True):
            trl_record(rates, row, r)
        feed(sel, step, ids, rewards)
    return ours, theirs


@pytest.mark.parametrize("seed", range(8))
def test_skip_decisions_equal_trls_rule_on_random_histories(seed: int) -> None:
    rng = np.random.default_rng(seed)
    compared = 0
    for _ in range(40):
        n = int(rng.integers(2, 25))
        b = int(rng.integers(1, n + 1))
        group = int(rng.choice([1, 2, 4, 8, 10, 16]))
        ours, theirs = run_both(rng, n, b, int(rng.integers(1, 60)), group)
        assert ours == theirs, (n, b, group)
        compared += len(ours)
    assert compared > 200  # the histories reach the second pass and beyond


def test_start_epoch_and_cap_follow_the_config() -> None:
    pool = TaskPool(num_tasks=3)
    late = make_selector("scalerl", pool, seed=0, start_epoch=3)
    loose = make_selector("scalerl", pool, seed=0, pass_rate_cap=0.5)
    for sel in (late, loose):
        ids = sel.select(3)
        feed(sel, 0, ids, np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    assert late.select(3).tolist() == [0, 1, 2]  # pass 2: the rule not yet on
    assert late.select(2).tolist() == [1, 2]  # pass 3: 0 (rate 1) passed over, 1 (0.5) not
    assert loose.select(1).tolist() == [2]  # 0.5 >= 0.5: prompt 1 retired too


def test_shuffle_order_walks_uniforms_permutations_in_the_first_pass() -> None:
    pool = TaskPool(num_tasks=50)
    uni = make_selector("uniform", pool, seed=3)
    sel = make_selector("scalerl", pool, seed=3, order="shuffle")
    for step in range(5):  # the first pass: the rule does nothing, same seed, same walk
        ids = sel.select(10)
        assert ids.tolist() == uni.select(10).tolist()
        feed(sel, step, ids, np.ones((10, 4)))
    sel.flush()
    assert sel.metrics()["scalerl/retired"] == 50.0


def test_kept_window_and_shadow_keeps_apply_the_rule() -> None:
    pool = TaskPool(num_tasks=6)
    sel = make_selector("scalerl", pool, seed=0)
    ids = sel.select(6)
    feed(sel, 0, ids, np.array([[1.0] * 4, [0.0] * 4] * 3))  # even prompts solved
    assert sel.select_window(6).tolist() == [1, 3, 5]  # uniform's window, solved left out
    assert sel.keeps(np.array([4, 5])).tolist() == [False, True]


def test_save_load_continues_exactly(tmp_path: Path) -> None:
    for order in ("pool", "shuffle"):
        rng = np.random.default_rng(1)
        p = rng.beta(0.4, 0.4, size=30)
        a = make_selector("scalerl", TaskPool(num_tasks=30), seed=7, order=order)
        b = None
        path = tmp_path / f"{order}.npz"
        got: dict[str, list[list[int]]] = {"a": [], "b": []}
        for step in range(40):
            if step == 12:
                save_selector(a, path)
                b = load_selector(path, TaskPool(num_tasks=30))
            rewards = (rng.random((6, 8)) < p[:6, None]).astype(float)  # same for both
            for name, sel in (("a", a), ("b", b)):
                if sel is None:
                    continue
                ids = sel.select(6) if step % 3 else sel.select_window(6)
                got[name].append(ids.tolist())
                feed(sel, step, ids, rewards[: ids.size])
        assert got["a"][12:] == got["b"]
        assert b is not None and a.metrics() | {"select/overhead_ms": 0} == b.metrics() | {
            "select/overhead_ms": 0
        }


def test_rejected_calls_change_nothing() -> None:
    sel = make_selector("scalerl", TaskPool(num_tasks=4), seed=0)
    feed(sel, 0, sel.select(4), np.ones((4, 2)))
    before = sel.state_dict()
    with pytest.raises(ValueError, match="larger than the pool"):
        sel.select(5)
    with pytest.raises(ValueError):
        sel.update(Feedback(task_ids=np.array([9]), rewards=np.array([1.0]), step=1))
    after = sel.state_dict()
    assert repr(before) == repr(after)
    bad = dict(after)
    bad["algo"] = {**after["algo"], "pass_rate": np.full(4, 2.0)}
    with pytest.raises(ValueError):
        sel.load_state_dict(bad)
    assert repr(sel.state_dict()) == repr(after)


def test_config_mistakes_say_how_to_fix_them() -> None:
    pool = TaskPool(num_tasks=4)
    with pytest.raises(ValueError, match=r"pass_rate_cap must lie in \(0, 1\] \(TRL: 0.9\)"):
        make_selector("scalerl", pool, pass_rate_cap=1.5)
    with pytest.raises(ValueError, match="start_epoch must be an int >= 1"):
        make_selector("scalerl", pool, start_epoch=0)
    with pytest.raises(ValueError, match="order"):
        make_selector("scalerl", pool, order="random")


def test_frontier_selectors_scalerl_describes_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selectors", "scalerl"]) == 0
    out = capsys.readouterr().out
    for phrase in ("No-Positive-Resampling", "pass_rate_cap = 0.9", "start_epoch = 2"):
        assert phrase in out, out


def test_the_page_states_the_rule_and_trls_commit() -> None:
    page = (Path(__file__).parents[1] / "docs" / "selectors" / "scalerl.md").read_text()
    for phrase in (
        "02ca6edd2c42f6e491e7d9df4482037576fd2d63",
        ">= 0.9",
        "first pass",
        "dynamic_sampling: adaptive",
        "rollouts: kept",
    ):
        assert phrase in page, phrase
