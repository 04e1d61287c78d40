"""skip-predict (selectors/skip_predict.py, selectors/_outcome.py): the three-way outcome
predictor on a pool whose outcomes follow a planted structure in feature 0, its per-epoch
calibration against hand-computed Brier scores and AUCs, the floors, exact resume and the
refusal of bad settings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.selectors.skip import SkipSelector
from frontier_rft.selectors.skip_predict import SkipPredictConfig, SkipPredictSelector
from helpers import assert_state_equal

N = 600


def _planted_pool(seed: int = 0) -> tuple[TaskPool, np.ndarray]:
    """Feature 0 > 0.5: every rollout correct; < -0.5: every rollout wrong; else p = 1/2.
    Two more features are noise. Kinds: 0 all-correct, 1 all-wrong, 2 mixed."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(-1.5, 1.5, N), rng.normal(size=(N, 2))])
    kind = np.where(x[:, 0] > 0.5, 0, np.where(x[:, 0] < -0.5, 1, 2))
    return TaskPool(num_tasks=N, features=x), kind


def _rewards(ids: np.ndarray, kind: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = np.array([1.0, 0.0, 0.5])[kind[np.repeat(ids, 8)]]
    out: np.ndarray = (rng.random(p.size) < p) * 1.0
    return out


def _drive(sel, kind, steps: int, seed: int = 0, start: int = 0):  # type: ignore[no-untyped-def]
    """`steps` steps of 16 prompts x 8 rollouts; returns, per step, the ids, the predictions
    the test read before handing their feedback over (what the metrics must score) and each
    group's class (0 all-correct, 1 all-wrong, 2 mixed)."""
    rng = np.random.default_rng(seed + 1000 * start)
    seen = []
    for step in range(start, start + steps):
        ids = sel.select(16)
        probs = sel.predictor.predict(ids) if hasattr(sel, "predictor") else None
        rewards = _rewards(ids, kind, rng)
        groups = rewards.reshape(-1, 8)
        labels = np.where(groups.min(1) == 1, 0, np.where(groups.max(1) == 0, 1, 2))
        seen.append((ids, probs, labels))
        sel.update(Feedback(task_ids=np.repeat(ids, 8), rewards=rewards, step=step))
    sel.flush()
    return seen


def _untried(sel) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Prompts with no rollouts of their own yet (the selector's posterior counts)."""
    ids = np.arange(N)
    out: np.ndarray = ids[~sel._beta.seen(ids)]
    return out


# ----------------------------------------------------------------------- the planted kinds
def test_untried_prompts_of_the_planted_flat_kinds_are_passed_over_mixed_ones_kept() -> None:
    pool, kind = _planted_pool()
    sel = SkipPredictSelector(pool, seed=0)
    _drive(sel, kind, steps=15)
    cfg = sel.config
    untried = _untried(sel)
    x0 = pool.features[untried, 0]  # type: ignore[index]
    far_correct, far_wrong, middle = untried[x0 > 0.9], untried[x0 < -0.9], untried[abs(x0) < 0.2]
    assert min(far_correct.size, far_wrong.size, middle.size) >= 20
    probs = sel.predictor.predict(middle)
    assert probs[:, 2].min() > 0.8  # the mixed kind is predicted mixed
    keep = sel.keep_probability
    assert np.all(keep(far_correct) == cfg.correct_keep)  # skipped aggressively
    assert np.all(keep(far_wrong) == cfg.wrong_floor)  # retested at the high floor
    assert np.all(keep(middle) == 1.0)  # never passed over
    # through the walk itself (keeps: the rule select_window applies), on a copy
    twin = SkipPredictSelector(pool, seed=0)
    twin.load_state_dict(sel.state_dict())
    passed = {name: float((~twin.keeps(ids)).mean()) for name, ids in
              (("correct", far_correct), ("wrong", far_wrong), ("mixed", middle))}  # fmt: skip
    assert passed["mixed"] == 0.0
    assert passed["correct"] > 0.7  # kept with 0.1
    assert 0.0 < passed["wrong"] < 0.5  # kept with 0.75


def test_skip_with_its_margin_passes_over_fewer_of_them() -> None:
    """skip's rule (2-se upper bound of an informative first group) on the same history
    keeps the planted all-correct prompts that skip-predict passes over."""
    pool, kind = _planted_pool()
    pred, plain = SkipPredictSelector(pool, seed=0), SkipSelector(pool, seed=0)
    _drive(pred, kind, steps=20)
    _drive(plain, kind, steps=20)
    untried = _untried(pred)
    far = untried[pool.features[untried, 0] > 0.9]  # type: ignore[index]
    assert pred.keep_probability(far).mean() < plain.keep_probability(far).mean()


def test_untried_take_judges_no_untried_prompt_but_still_learns() -> None:
    pool, kind = _planted_pool()
    sel = SkipPredictSelector(pool, SkipPredictConfig(untried="take"), seed=0)
    _drive(sel, kind, steps=20)
    assert sel.predictor.ready
    assert np.all(sel.keep_probability(_untried(sel)) == 1.0)
    assert sel.metrics()["skip-predict/untried_predicted"] == 0.0


def test_the_floor_holds_and_a_floor_of_one_passes_over_no_untried_prompt() -> None:
    pool, kind = _planted_pool()
    sel = SkipPredictSelector(pool, seed=0)
    _drive(sel, kind, steps=50)
    cfg = sel.config
    keep = sel.keep_probability(np.arange(N))
    assert keep.min() >= min(cfg.min_keep, cfg.correct_keep, cfg.wrong_floor)
    untried = _untried(sel)
    assert sel.keep_probability(untried).min() == cfg.correct_keep  # the least, for untried
    # none starved: the untried prompts (kept with 0.1 a pass) are taken as the walk goes on
    _drive(sel, kind, steps=250, start=50)  # 16 more walk passes: 0.9^16 = 0.19 stay untried
    assert _untried(sel).size < 0.3 * untried.size
    never = SkipPredictSelector(pool, SkipPredictConfig(wrong_floor=1.0, correct_keep=1.0))
    _drive(never, kind, steps=20)
    assert np.all(never.keep_probability(_untried(never)) == 1.0)


# ----------------------------------------------------------------------- calibration
def test_auc_and_calibration_equal_hand_computed_values() -> None:
    """Scores of 5 groups, P(all-correct) = [0.9, 0.8, 0.3, 0.3, 0.1], P(all-wrong) =
    [0.0, 0.1, 0.6, 0.2, 0.8], labels correct, wrong, correct, mixed, wrong.
    All-correct side: positives {0.9, 0.3} against {0.8, 0.3, 0.1}: pairs won 0.9 > all 3,
    0.3 > 0.1, 0.3 = 0.3 (half): 4.5 / 6 = 0.75. Brier: (0.01 + 0.64 + 0.49 + 0.09 + 0.01)
    / 5 = 0.248. All-wrong side: positives {0.1, 0.8} against {0.0, 0.6, 0.2}: 0.8 > all 3,
    0.1 > 0.0: 4 / 6. Brier: (0 + 0.81 + 0.36 + 0.04 + 0.04) / 5 = 0.25."""
    from frontier_rft.selectors._outcome import Calibration, auc

    pc = np.array([0.9, 0.8, 0.3, 0.3, 0.1])
    pw = np.array([0.0, 0.1, 0.6, 0.2, 0.8])
    labels = np.array([0, 1, 0, 2, 1], np.int8)
    assert auc(pc, labels == 0) == pytest.approx(0.75)
    assert auc(pw, labels == 1) == pytest.approx(4 / 6)
    assert np.isnan(auc(pc, np.zeros(5, bool)))
    cal = Calibration(cap=100)
    probs = np.column_stack([pc, pw, 1 - pc - pw])
    cal.add(1, probs[:3], labels[:3])
    cal.add(1, probs[3:], labels[3:])
    got = cal.metrics()
    assert got["calibration/epoch1/groups"] == 5
    assert got["calibration/epoch1/brier_correct"] == pytest.approx(0.248)
    assert got["calibration/epoch1/auc_correct"] == pytest.approx(0.75)
    assert got["calibration/epoch1/brier_wrong"] == pytest.approx(0.25)
    assert got["calibration/epoch1/auc_wrong"] == pytest.approx(4 / 6)
    assert got["calibration/epoch1/mean_correct"] == pytest.approx(2.4 / 5)
    assert got["calibration/epoch1/share_correct"] == pytest.approx(2 / 5)
    assert got["calibration/epoch1/mean_wrong"] == pytest.approx(1.7 / 5)
    assert got["calibration/epoch1/share_wrong"] == pytest.approx(2 / 5)
    cal.add(2, probs[:2], labels[:2])  # a new epoch: epoch 1 is kept as it was
    again = cal.metrics()
    assert {k: v for k, v in again.items() if "epoch1" in k} == got
    assert again["calibration/epoch2/brier_correct"] == pytest.approx((0.01 + 0.64) / 2)


def _pairwise_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The AUC by counting every (positive, negative) pair: the definition itself."""
    pos, neg = scores[positive], scores[~positive]
    wins = sum((a > b) + 0.5 * (a == b) for a, b in itertools.product(pos, neg))
    return float(wins / (pos.size * neg.size))


def test_metrics_score_each_epochs_predictions_made_before_the_outcome() -> None:
    """Through the selector: the Brier scores and AUCs of each epoch equal the ones computed
    by hand from the predictions the test read before handing each step's feedback over."""
    pool, kind = _planted_pool()
    sel = SkipPredictSelector(pool, seed=0)
    seen = _drive(sel, kind, steps=60)  # about 1.6 passes of the pool's 600 prompts
    metrics = sel.metrics()
    walked = 0
    by_epoch: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for ids, probs, labels in seen:
        walked += 16  # uniform's count: a select of 16 hands out 16
        by_epoch.setdefault(-(-walked // N), []).append((ids, probs, labels))
    assert set(by_epoch) == {1, 2}
    for epoch, rows in by_epoch.items():
        probs = np.concatenate([r[1] for r in rows])
        labels = np.concatenate([r[2] for r in rows])
        key = f"skip-predict/calibration/epoch{epoch}/"
        assert metrics[key + "groups"] == labels.size
        for side, col in (("correct", 0), ("wrong", 1)):
            y = labels == col
            brier = np.mean((probs[:, col] - y) ** 2)
            assert metrics[key + f"brier_{side}"] == pytest.approx(brier)
            assert metrics[key + f"auc_{side}"] == pytest.approx(_pairwise_auc(probs[:, col], y))
            assert metrics[key + f"mean_{side}"] == pytest.approx(probs[:, col].mean())
            assert metrics[key + f"share_{side}"] == pytest.approx(y.mean())
    # the planted kinds are told apart well before the end of the first epoch, and the
    # probabilities are calibrated in the large: mean prediction near the observed share
    for side in ("correct", "wrong"):
        key = "skip-predict/calibration/epoch2/"
        assert abs(metrics[key + f"mean_{side}"] - metrics[key + f"share_{side}"]) < 0.05
    assert metrics["skip-predict/calibration/epoch2/auc_wrong"] > 0.95
    assert metrics["skip-predict/calibration/epoch2/auc_correct"] > 0.95


# ----------------------------------------------------------------------- resume, config
def test_resume_is_exact_with_the_predictor_state() -> None:
    _resumes_exactly("skip-predict", steps=25)


def _resumes_exactly(name: str, steps: int) -> None:
    """Saved after `steps` steps and loaded into a selector with another history, `name`
    goes on exactly as the one never interrupted (predictor, calibration, RNG)."""
    pool, kind = _planted_pool()
    sel = make_selector(name, pool, seed=0)
    _drive(sel, kind, steps=steps)
    state = sel.state_dict()
    twin = make_selector(name, pool, seed=7)
    _drive(twin, kind, steps=3, seed=5)  # another history: a partial load would show
    twin.load_state_dict(state)
    assert_state_equal(state, twin.state_dict())
    after = _drive(sel, kind, steps=10, start=steps), _drive(twin, kind, steps=10, start=steps)
    for a, b in zip(*after, strict=True):
        assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    assert sel.rng.bit_generator.state == twin.rng.bit_generator.state
    timing = "select/overhead_ms"  # wall time, not state
    assert {k: v for k, v in sel.metrics().items() if k != timing} == pytest.approx(
        {k: v for k, v in twin.metrics().items() if k != timing}, nan_ok=True
    )


@pytest.mark.parametrize(
    ("part", "key", "value", "message"),
    [
        ("predictor", "labels", 5, "labels holds values outside"),
        ("predictor", "ids", N, "ids holds values outside"),
        ("predictor", "stamps", -1, "stamps holds values outside"),
        ("calibration", "counted", -1, "counted"),
    ],
)
def test_a_tampered_predictor_state_is_refused_and_changes_nothing(
    part: str, key: str, value: object, message: str
) -> None:
    pool, kind = _planted_pool()
    sel = SkipPredictSelector(pool, seed=0)
    _drive(sel, kind, steps=5)
    state = sel.state_dict()
    target = sel.state_dict()
    leaf = target["algo"][part]
    if isinstance(leaf[key], np.ndarray) and leaf[key].size:
        leaf[key] = leaf[key].copy()
        leaf[key][0] = value
    else:
        leaf[key] = value
    with pytest.raises(ValueError, match=message):
        sel.load_state_dict(target)
    assert_state_equal(state, sel.state_dict())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("correct_threshold", 0.3, "correct_threshold must lie in"),
        ("wrong_threshold", 1.5, "wrong_threshold must lie in"),
        ("correct_keep", 0.001, "correct_keep must lie in"),
        ("wrong_floor", 0.0, "wrong_floor must lie in"),
        ("predictor_ridge", -1.0, "predictor_ridge must be"),
        ("predictor_window", 4, "predictor_window must be"),
        ("predictor_min_groups", 0.0, "predictor_min_groups must lie in"),
        ("untried_floor", 0.1, "set wrong_floor"),
        ("untried", "maybe", "untried"),
    ],
)
def test_bad_settings_are_refused_with_one_line(field: str, value: object, message: str) -> None:
    pool, _ = _planted_pool()
    with pytest.raises(ValueError, match=message) as err:
        make_selector("skip-predict", pool, **{field: value})
    assert "\n" not in str(err.value)


def test_registered_with_skips_auto_and_its_own_colour() -> None:
    assert SELECTORS["skip-predict"] is SkipPredictSelector
    assert SkipPredictSelector.kept_level_epochs == SkipSelector.kept_level_epochs
    assert SkipPredictSelector.kept_loses == SkipSelector.kept_loses


def test_the_page_lists_every_new_setting_with_its_default() -> None:
    """docs/selectors/skip_predict.md's table: each field skip-predict adds to skip's, with
    the default the class has (one fact, checked where it is repeated)."""
    import dataclasses
    from pathlib import Path

    from frontier_rft.selectors.skip import SkipConfig

    page = (Path(__file__).parents[1] / "docs" / "selectors" / "skip_predict.md").read_text()
    rows = {
        cells[1].strip("` "): cells[2].strip("` ")
        for line in page.splitlines()
        if line.startswith("| `") and len(cells := line.split("|")) > 3
    }
    inherited = {f.name for f in dataclasses.fields(SkipConfig)} - {"untried"}
    for field in dataclasses.fields(SkipPredictConfig):
        if field.name in inherited:
            continue
        assert rows.get(field.name) == str(field.default), field.name
