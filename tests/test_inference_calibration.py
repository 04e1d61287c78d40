"""Calibration metrics of the ZIP-RC-Lite head against hand-computed numbers (numpy only)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.inference.calibration import (
    auc,
    calibration_report,
    countdown_answer_value,
    empirical_joint,
    format_calibration_table,
    majority_pick,
    reliability,
    reward_f1,
    selection_at_k,
    total_variation,
)
from frontier_rft.inference.spec import ZipRCSpec


def _pairwise_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels], scores[~labels]
    wins = [(p > n) + 0.5 * (p == n) for p, n in product(pos, neg)]
    return float(np.mean(wins))


def test_auc_hand_computed_with_ties_and_degenerate_cases() -> None:
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    # pos {0.5, 0.9} vs neg {0.5, 0.2}: 0.5 (tie) + 1 + 1 + 1 over 4 pairs
    assert auc([0.5, 0.5, 0.2, 0.9], [1, 0, 0, 1]) == pytest.approx(0.875)
    assert auc([0.3, 0.3, 0.3], [1, 0, 1]) == pytest.approx(0.5)
    assert np.isnan(auc([0.1, 0.2], [1, 1]))
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.integers(0, 5, size=30).astype(float)  # many ties
        y = rng.random(30) < 0.4
        if 0 < y.sum() < 30:
            assert auc(s, y) == pytest.approx(_pairwise_auc(s, y))
    with pytest.raises(ValueError, match="one label per score"):
        auc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="finite"):
        auc([np.nan, 0.2], [1, 0])


def test_small_metrics_by_hand() -> None:
    assert float(total_variation(np.array([0.5, 0.5]), np.array([1.0, 0.0]))) == 0.5
    tv = total_variation(np.array([[[0.5, 0.5]], [[1.0, 0.0]]]), np.array([[[1.0, 0.0]]] * 2))
    np.testing.assert_allclose(tv, [0.5, 0.0])
    spec = ZipRCSpec(0, (0.0, 1.0), (0, 4, 8))
    q = empirical_joint(spec, np.array([1.0, 0.0, 0.1, 1.0]), np.array([3, 5, 9, 2]))
    np.testing.assert_allclose(q, [[0.0, 0.5], [0.5, 0.0]])
    assert reward_f1(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0]), 1) == pytest.approx(0.5)
    assert np.isnan(reward_f1(np.array([0, 0]), np.array([0, 0]), 1))
    assert majority_pick([None, 3, 5, 5, 3]) == 1  # 3 and 5 tie: 3 was seen first
    assert majority_pick([7, 5, 5]) == 1
    assert majority_pick([None, None]) == 0
    rel = reliability(np.array([0.05, 0.15, 0.12, 0.95]), np.array([0, 1, 0, 1]), bins=10)
    assert rel["count"][0] == 1 and rel["count"][1] == 2 and rel["count"][9] == 1
    assert rel["predicted"][1] == pytest.approx(0.135) and rel["empirical"][1] == 0.5


def test_selection_at_k_by_hand() -> None:
    values = np.array([[0.2, 0.9, 0.6, 0.1]])
    correct = np.array([[True, False, False, True]])
    answers = [["a", "b", "c", "c"]]
    # groups {0,1}: value picks 1 (wrong), vote a/b tie -> a (right); {2,3}: value picks 2
    # (wrong), vote c -> sample 2 (wrong).
    got = selection_at_k(values, correct, answers, 2)
    assert got == {"value@2": 0.0, "majority@2": 0.5, "random@2": 0.5, "oracle@2": 1.0}
    assert "majority@4" not in selection_at_k(values, correct, None, 4)
    with pytest.raises(ValueError, match=r"k must be in 1\.\.4"):
        selection_at_k(values, correct, None, 5)


def test_countdown_answer_value_uses_the_whitelist_parser() -> None:
    ref = {"numbers": [3, 5], "target": 8}
    assert countdown_answer_value(ref, "<answer>3 + 5</answer>") == 8
    assert countdown_answer_value(ref, "<answer> 3 * 3 </answer>") == 9  # bad numbers still vote
    assert countdown_answer_value(ref, "<answer>5 / 3</answer>") == Fraction(5, 3)
    assert countdown_answer_value(ref, "<answer>5 / (3 - 3)</answer>") is None
    assert countdown_answer_value(ref, "<answer>__import__('os')</answer>") is None
    assert countdown_answer_value(ref, "<answer>(3 + 5</answer>") is None
    assert countdown_answer_value(ref, "no answer at all") is None


def _logits(p: list[float]) -> np.ndarray:
    return np.log(np.asarray(p))


def test_calibration_report_by_hand() -> None:
    spec = ZipRCSpec(0, (0.0, 1.0), (0, 4, 8))  # midpoints 2, 6; offsets (fail,short) ...
    uniform, skew = [0.25] * 4, [0.4, 0.1, 0.4, 0.1]
    hi, lo = [0.05, 0.05, 0.45, 0.45], [0.45, 0.45, 0.05, 0.05]  # values 0.9 and 0.1
    seq = lambda *ps: np.stack([_logits(p) for p in ps])  # noqa: E731
    seqs = [
        [seq(uniform, hi, hi), seq(uniform, lo, lo, lo, lo, lo)],  # rewards 1, 0; T = 3, 6
        [seq(skew, hi), seq(skew, lo)],  # rewards 0.1, 0.1 (fails); T = 2, 2
    ]
    rewards = np.array([[1.0, 0.0], [0.1, 0.1]])
    answers = [[Fraction(8), Fraction(9)], [None, None]]
    rep = calibration_report(spec, seqs, rewards, answers, ks=(2,))
    # value_end: (0.5 + 0.9 + 0.9) / 3, (0.5 + 5 * 0.1) / 6, (0.5 + 0.9) / 2, (0.5 + 0.1) / 2
    assert rep["auc_end"] == pytest.approx(1.0)
    assert rep["auc_end_within_prompt"] == pytest.approx(1.0)  # only prompt 0 is mixed
    assert rep["mixed_prompts"] == 1
    # mid (position T // 2): 0.9 (correct) vs 0.1, 0.9, 0.1
    assert rep["auc_mid"] == pytest.approx(2.5 / 3)
    assert rep["auc_prompt"] == pytest.approx(0.5)  # every prompt value is 0.5
    # prompt 0: empirical joint [[0, .5], [.5, 0]] vs uniform -> 0.5; reward marginals agree
    # prompt 1: [[1, 0], [0, 0]] vs [[.4, .1], [.4, .1]] -> 0.6; marginal [1, 0] vs [.5, .5]
    assert rep["tv_joint"] == pytest.approx(0.55)
    assert rep["tv_reward"] == pytest.approx(0.25)
    # predicted end states 1 0 1 0 vs actual 1 0 0 0
    assert rep["end_reward_accuracy"] == pytest.approx(0.75)
    assert rep["end_reward_f1"] == pytest.approx(2 / 3)
    # E[remaining] at the prompt: 4, 4, 2.8, 2.8 vs lengths 3, 6, 2, 2
    assert rep["length_mae_prompt"] == pytest.approx((1 + 2 + 0.8 + 0.8) / 4)
    assert rep["length_mae_constant"] == pytest.approx((0.25 + 2.75 + 1.25 + 1.25) / 4)
    assert rep["selection"] == {
        "value@2": 0.5,
        "majority@2": 0.5,
        "random@2": 0.25,
        "oracle@2": 0.5,
    }
    assert rep["auc_by_position"]["auc"][0] == pytest.approx(0.5)
    table = format_calibration_table(rep)
    assert "| AUC(value_end -> correct) | 1.000 | 0.5 |" in table
    assert "| majority@2 | 0.500 |" in table
    with pytest.raises(ValueError, match="one row of slice logits per prompt"):
        calibration_report(spec, seqs[:1], rewards)


def test_calibration_figure_renders(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting.ziprc_plots import calibration_figure, write_plot

    spec = ZipRCSpec(0, (0.0, 1.0), (0, 4, 8))
    rng = np.random.default_rng(0)
    seqs = [[rng.normal(size=(int(rng.integers(2, 9)), 4)) for _ in range(4)] for _ in range(5)]
    rewards = (rng.random((5, 4)) < 0.5).astype(float)
    path = write_plot(
        calibration_figure(calibration_report(spec, seqs, rewards)), tmp_path / "c.png"
    )
    assert path.read_bytes().startswith(b"\x89PNG")


def _strict(token: str) -> None:
    raise AssertionError(f"bare {token} in a JSON file: not valid JSON")


def test_calibration_json_is_strict_json_and_reads_back(tmp_path: Path) -> None:
    from frontier_rft.cli.ziprc import _write_json

    spec = ZipRCSpec(0, (0.0, 1.0), (0, 4, 8))
    rng = np.random.default_rng(1)
    seqs = [[rng.normal(size=(int(rng.integers(2, 9)), 4)) for _ in range(4)] for _ in range(5)]
    report = calibration_report(spec, seqs, np.zeros((5, 4)))  # one class: AUCs undefined
    assert math.isnan(report["auc_end"])
    _write_json(tmp_path / "calibration.json", report)
    loaded = json.loads((tmp_path / "calibration.json").read_text(), parse_constant=_strict)
    assert loaded["auc_end"] is None and loaded["prompts"] == 5
    assert "| AUC(value_end -> correct) | nan | 0.5 |" in format_calibration_table(loaded)
    pytest.importorskip("matplotlib")
    from frontier_rft.reporting.ziprc_plots import calibration_figure, write_plot

    path = write_plot(calibration_figure(loaded), tmp_path / "c.png")
    assert path.read_bytes().startswith(b"\x89PNG")
