"""predict-only (selectors/predict_only.py): skip-predict's three-way predictor alone, on the
planted-structure pool of tests/test_skip_predict.py. Every prompt, tried or untried, is
judged by the predictor's rules; none by its own posterior. The walk is skip-predict's, the
floor holds, resume is exact and bad settings or states are refused with nothing changed."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.selectors.predict_only import (
    POSTERIOR_ONLY,
    PredictOnlyConfig,
    PredictOnlySelector,
)
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.selectors.skip import SkipSelector
from frontier_rft.selectors.skip_predict import SkipPredictSelector
from helpers import assert_state_equal
from test_skip_predict import N, _drive, _planted_pool, _resumes_exactly, _untried


def _rule(sel: PredictOnlySelector, ids: np.ndarray) -> np.ndarray:
    """The keep the page states, computed from the predictor's probabilities alone."""
    cfg = sel.config
    probs = sel.predictor.predict(ids)
    keep = np.where(probs[:, 1] >= cfg.wrong_threshold, cfg.wrong_floor, 1.0)
    out: np.ndarray = np.where(
        probs[:, 0] >= cfg.correct_threshold, np.minimum(keep, cfg.correct_keep), keep
    )
    return out


# ----------------------------------------------------------------------- the planted kinds
def test_planted_flat_kinds_are_passed_over_tried_or_untried_mixed_ones_kept() -> None:
    pool, kind = _planted_pool()
    sel = make_selector("predict-only", pool, seed=0)
    _drive(sel, kind, steps=40)  # into the second walk pass: tried and untried prompts
    cfg = sel.config
    ids = np.arange(N)
    untried = np.zeros(N, bool)
    untried[_untried(sel)] = True
    x0 = pool.features[:, 0]  # type: ignore[index]
    far_correct, far_wrong, middle = x0 > 0.9, x0 < -0.9, abs(x0) < 0.2
    keep = sel.keep_probability(ids)
    for group in (far_correct, far_wrong):  # tried and untried prompts of each flat kind
        assert (group & untried).sum() >= 10 and (group & ~untried).sum() >= 10
    assert (middle & ~untried).sum() >= 10
    assert np.all(keep[far_correct] == cfg.correct_keep)  # skipped aggressively
    assert np.all(keep[far_wrong] == cfg.wrong_floor)  # retested at the floor
    assert np.all(keep[middle] == 1.0)  # never passed over
    # through the walk itself (keeps: the rule select_window applies), on a copy
    twin = make_selector("predict-only", pool, seed=0)
    twin.load_state_dict(sel.state_dict())
    passed = {name: float((~twin.keeps(ids[mask])).mean()) for name, mask in
              (("correct", far_correct), ("wrong", far_wrong), ("mixed", middle))}  # fmt: skip
    assert passed["mixed"] == 0.0
    assert passed["correct"] > 0.7  # kept with 0.1
    assert 0.0 < passed["wrong"] < 0.5  # kept with 0.75


def test_tried_prompts_are_judged_by_the_predictor_not_their_posterior() -> None:
    """After a pass, each tried prompt's keep is the predictor's rule, and on the prompts
    whose own all-wrong or all-correct groups make skip's posterior keep them below 0.5 but
    which the predictor is not confident about, predict-only keeps them (skip-predict would
    not)."""
    pool, kind = _planted_pool()
    sel = make_selector("predict-only", pool, seed=0)
    _drive(sel, kind, steps=40)
    tried = np.setdiff1d(np.arange(N), _untried(sel))
    assert tried.size > 400
    keep = sel.keep_probability(tried)
    np.testing.assert_array_equal(keep, _rule(sel, tried))
    posterior_keep = SkipSelector.keep_probability(sel, tried)  # what skip's posterior says
    overruled = (posterior_keep < 0.5) & (keep == 1.0)
    assert overruled.sum() >= 10
    assert set(kind[tried[overruled]]) <= {0, 1}  # flat kinds near the predictor's boundary


def test_the_walk_is_skip_predicts_until_a_prompt_comes_back() -> None:
    """The same seed and outcomes: predict-only and skip-predict hand out the same prompts
    through the whole first walk pass (every walked prompt untried, judged alike), and part
    ways in the second, where skip-predict reads its posterior."""
    pool, kind = _planted_pool()
    only = make_selector("predict-only", pool, seed=3)
    both = make_selector("skip-predict", pool, seed=3)
    first, second = [], []  # per step: the same prompts handed out?
    for step in range(40):  # the second pass starts near step 25
        a, b = _drive(only, kind, 1, start=step), _drive(both, kind, 1, start=step)
        in_first_pass = only.epoch == both.epoch == 1  # still, after this step
        (first if in_first_pass else second).append(np.array_equal(a[0][0], b[0][0]))
    assert len(first) >= 20 and all(first)
    assert only.metrics()["predict-only/skipped_total"] > 0  # the rules acted in pass one
    assert second and not all(second)


def test_the_floor_holds_and_no_prompt_is_starved() -> None:
    pool, kind = _planted_pool()
    sel = make_selector("predict-only", pool, seed=0)
    _drive(sel, kind, steps=50)
    cfg = sel.config
    keep = sel.keep_probability(np.arange(N))
    assert set(np.unique(keep)) == {cfg.correct_keep, cfg.wrong_floor, 1.0}
    assert keep.min() == min(cfg.correct_keep, cfg.wrong_floor)
    untried, passes = _untried(sel), sel.epoch
    _drive(sel, kind, steps=250, start=50)
    passes = sel.epoch - passes  # about 10: each prompt is walked past each pass
    assert passes >= 8
    assert _untried(sel).size < 1.2 * 0.9**passes * untried.size  # kept with >= 0.1 a pass
    never = make_selector("predict-only", pool, wrong_floor=1.0, correct_keep=1.0)
    _drive(never, kind, steps=50)
    assert np.all(never.keep_probability(np.arange(N)) == 1.0)
    assert never.metrics()["predict-only/skipped_total"] == 0.0


# ----------------------------------------------------------------------- metrics
def test_calibration_metrics_score_the_predictions_made_before_each_outcome() -> None:
    pool, kind = _planted_pool()
    sel = make_selector("predict-only", pool, seed=0)
    seen = _drive(sel, kind, steps=20)  # 320 of 600 prompts handed out: epoch 1
    probs = np.concatenate([s[1] for s in seen])
    labels = np.concatenate([s[2] for s in seen])
    metrics = sel.metrics()
    key = "predict-only/calibration/epoch1/"
    assert metrics[key + "groups"] == labels.size == 320
    for side, col in (("correct", 0), ("wrong", 1)):
        y = labels == col
        assert metrics[key + f"brier_{side}"] == pytest.approx(np.mean((probs[:, col] - y) ** 2))
        assert metrics[key + f"mean_{side}"] == pytest.approx(probs[:, col].mean())
        assert metrics[key + f"share_{side}"] == pytest.approx(y.mean())
    assert metrics["predict-only/predictor/ready"] == 1.0


# ----------------------------------------------------------------------- resume, config
def test_resume_is_exact_with_the_predictor_state() -> None:
    _resumes_exactly("predict-only", steps=45)  # into the second pass: tried prompts judged


def test_a_refused_state_changes_nothing() -> None:
    """A tampered predictor state, and skip-predict's state (another selector), are refused
    by name and the selector is as it was."""
    pool, kind = _planted_pool()
    sel = make_selector("predict-only", pool, seed=0)
    _drive(sel, kind, steps=5)
    state = sel.state_dict()
    bad = sel.state_dict()
    bad["algo"]["predictor"]["labels"] = bad["algo"]["predictor"]["labels"].copy()
    bad["algo"]["predictor"]["labels"][0] = 5
    with pytest.raises(ValueError, match="labels holds values outside"):
        sel.load_state_dict(bad)
    assert_state_equal(state, sel.state_dict())
    other = make_selector("skip-predict", pool, seed=0)
    _drive(other, kind, steps=5)
    with pytest.raises(ValueError, match="skip-predict"):
        sel.load_state_dict(other.state_dict())
    assert_state_equal(state, sel.state_dict())


@pytest.mark.parametrize(
    ("field", "value"),
    [("alpha0", 2.0), ("beta0", 3.0), ("lam", 0.5), ("plugin", "none"),
     ("regression_ridge", 2.0), ("untried", "take")],
)  # fmt: skip
def test_the_posteriors_settings_are_refused_with_one_line(field: str, value: object) -> None:
    pool, _ = _planted_pool()
    with pytest.raises(ValueError, match=f"{field} shapes skip's per-prompt posterior") as err:
        make_selector("predict-only", pool, **{field: value})
    assert "\n" not in str(err.value)
    make_selector("skip-predict", pool, **{field: value})  # skip-predict reads them


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("wrong_floor", 0.0, "wrong_floor must lie in"),
        ("correct_keep", 0.001, "correct_keep must lie in"),
        ("untried_floor", 0.1, "set wrong_floor"),
    ],
)
def test_skip_predicts_checks_hold_here(field: str, value: object, message: str) -> None:
    pool, _ = _planted_pool()
    with pytest.raises(ValueError, match=message):
        make_selector("predict-only", pool, **{field: value})


def test_registered_as_a_variant_with_its_own_colour_and_fields() -> None:
    assert SELECTORS["predict-only"] is PredictOnlySelector
    assert issubclass(PredictOnlySelector, SkipPredictSelector)
    assert not PredictOnlySelector.reads_posterior and SkipPredictSelector.reads_posterior
    assert PredictOnlySelector.color != SkipPredictSelector.color
    assert PredictOnlySelector.kept_level_epochs == SkipSelector.kept_level_epochs
    assert set(POSTERIOR_ONLY) <= {f for f in PredictOnlyConfig.__dataclass_fields__}
    with pytest.raises(ValueError, match="features"):  # the predictor needs features
        make_selector("predict-only", TaskPool(num_tasks=10))


def test_the_page_lists_every_setting_it_acts_on_with_its_default() -> None:
    """docs/selectors/predict_only.md's table: each field predict-only acts on (skip-predict's
    own and the walk's floor), with the class's default; and the refused ones, by name."""
    import dataclasses
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "selectors" / "predict_only.md").read_text()
    rows = {
        cells[1].strip("` "): cells[2].strip("` ")
        for line in page.splitlines()
        if line.startswith("| `") and len(cells := line.split("|")) > 3
    }
    defaults = {f.name: f.default for f in dataclasses.fields(PredictOnlyConfig)}
    acted_on = set(defaults) - set(POSTERIOR_ONLY) - {"untried_floor"}
    assert set(rows) == acted_on
    for name in acted_on:
        assert rows[name] == str(defaults[name]), name
    for name in POSTERIOR_ONLY:
        assert f"`{name}`" in page, name


def test_the_family_pages_point_to_it() -> None:
    from pathlib import Path

    pages = Path(__file__).parents[1] / "docs" / "selectors"
    for page in ("skip.md", "skip_predict.md"):
        assert "(predict_only.md)" in (pages / page).read_text(), page
