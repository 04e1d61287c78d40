"""skip-eager (selectors/skip_eager.py): skip's untried-prompt rule without the 2-se margin,
checked against a hand-computed value, on a planted pool, with its floor and exact resume."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.selectors.skip import SkipSelector
from frontier_rft.selectors.skip_eager import SkipEagerConfig, SkipEagerSelector
from helpers import assert_state_equal


def _hand_pool(cls, **config):  # type: ignore[no-untyped-def]
    """One feature x = kind; 10 first groups of kind 0 (all correct), 10 of kind 1 (4 of 8);
    prompts 10 (kind 0) and 21 (kind 1) stay untried (tests/test_skip.py's hand case)."""
    kind = np.repeat([0, 1], 11)
    cfg = SkipEagerConfig(**config) if cls is SkipEagerSelector else None
    sel = cls(TaskPool(num_tasks=22, features=kind[:, None] * 1.0), cfg)
    tried = np.r_[0:10, 11:21]
    rep = np.repeat(tried, 8)
    half = np.tile(np.r_[np.ones(4), np.zeros(4)], 20)
    sel.update(Feedback(task_ids=rep, rewards=np.where(kind[rep] == 0, 1.0, half), step=0))
    sel.flush()
    return sel


def test_untried_keep_is_the_prediction_over_the_informative_share_by_hand() -> None:
    """keep = clip((q^ + z se) / q1, floor, 1). Design rows [x, 1]: G + I = [[11, 10],
    [10, 21]] (det 131), w = [110, 10] / 131; x = 0: q^ = 10/131, se = sqrt(0.25 * 11/131),
    q1 = 1/2. z = 0: 20/131 = 0.153 -> the floor 0.25 (or 0.153 under a floor of 0.1);
    z = 1: (10/131 + se) / 0.5 = 0.732... / 2 + ...; a kind-1 prompt is kept always."""
    untried = np.array([10, 21])
    se = np.sqrt(0.25 * 11 / 131)
    assert _hand_pool(SkipEagerSelector).untried_keep(untried) == pytest.approx([0.25, 1.0])
    low = _hand_pool(SkipEagerSelector, untried_floor=0.1)
    assert low.untried_keep(untried) == pytest.approx([20 / 131, 1.0])
    one = _hand_pool(SkipEagerSelector, untried_z=1.0)
    assert one.untried_keep(untried) == pytest.approx([(10 / 131 + se) / 0.5, 1.0])
    # z = 2 is skip's own rule, to the bit
    two = _hand_pool(SkipEagerSelector, untried_z=2.0)
    assert np.array_equal(two.untried_keep(untried), _hand_pool(SkipSelector).untried_keep(untried))


def _planted(cls, seed: int = 0):  # type: ignore[no-untyped-def]
    """120 prompts in three planted kinds, told apart by a one-hot feature: all-correct,
    all-wrong, mixed (p = 1/2); the first epoch walked with kept groups fed back."""
    kind = np.arange(120) % 3
    pool = TaskPool(num_tasks=120, features=np.eye(3)[kind])
    sel = cls(pool, seed=seed)
    rng = np.random.default_rng(seed)
    p = np.array([1.0, 0.0, 0.5])
    for step in range(6):
        ids = sel.select(8)
        rep = np.repeat(ids, 8)
        sel.update(Feedback(task_ids=rep, rewards=(rng.random(rep.size) < p[kind[rep]]) * 1.0,
                            step=step))  # fmt: skip
    return sel, kind


def test_planted_kinds_flat_untried_prompts_are_passed_over_mixed_ones_kept() -> None:
    """After a few steps skip-eager keeps untried all-correct and all-wrong prompts at the
    floor and untried mixed ones always; skip (2-se margin) keeps more of the flat ones."""
    eager, kind = _planted(SkipEagerSelector)
    plain, _ = _planted(SkipSelector)
    rest = eager._walk.remaining()
    rest = rest[~eager._beta.seen(rest)]  # untried prompts only
    assert rest.size > 30
    keep = eager.keep_probability(rest)
    flat = kind[rest] != 2
    assert np.all(keep[~flat] == 1.0)
    assert np.all(keep[flat] >= 0.25) and keep[flat].max() < 0.35  # the floor holds
    assert plain.keep_probability(rest)[flat].mean() > keep[flat].mean() + 0.2


def test_resume_is_exact_with_the_untried_model() -> None:
    sel, _ = _planted(SkipEagerSelector)
    state = sel.state_dict()
    twin, _ = _planted(SkipEagerSelector, seed=1)
    twin.load_state_dict(state)
    assert_state_equal(state, twin.state_dict())
    assert np.array_equal(sel.select(16), twin.select(16))


def test_config_refuses_a_margin_out_of_range_and_is_registered() -> None:
    with pytest.raises(ValueError, match="untried_z must lie in"):
        SkipEagerConfig(untried_z=-1.0)
    assert SELECTORS["skip-eager"] is SkipEagerSelector
    assert SkipEagerSelector.kept_level_epochs == SkipSelector.kept_level_epochs  # skip's auto
