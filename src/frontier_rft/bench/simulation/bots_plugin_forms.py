"""Prompts-only BOTS: other fits of its regression plug-in, and other text features (the
variants; benchmarks/bots_plugin_forms.py runs them and says what each row changes).

A negative result, kept so it need not be redone: each form changes one thing of the
default plug-in (ridge on smoothed logits, forgetting 0.95 per step, each task anchored at
its last observed offset), and `run` scores it (or uniform) on one seeded learner with the
same loop as the prompts-gap diagnosis (`bench.simulation.bots_prompts_gap.score_curve`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from frontier_rft.bench.simulation.bots_prompts_gap import score_curve
from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.pool import TaskPool
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.features.text import TextFeatureConfig, text_features
from frontier_rft.selectors import make_selector
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.selectors.bots.regression import RegressionPlugin
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.runner import given_pool
from frontier_rft.simulation.scenario import SCENARIOS

SCENARIO_NAMES = ("easy", "multidomain", "hard")  # tuning scenarios first, hard reported
MOMENTUM, HESSIAN_FORGETTING, ANCHOR_FADE = 0.9, 0.95, 0.99


def _like(base: RegressionPlugin, forgetting: float | None = None) -> dict[str, Any]:
    """Constructor arguments of a plug-in like `base` (optionally another forgetting)."""
    return {
        "features": base.features,
        "ridge": base.model.ridge,
        "forgetting": base.model.forgetting if forgetting is None else forgetting,
        "gaussian": base.gaussian,
        "anchors": True,
    }


class _OwnFit(RegressionPlugin):
    """A plug-in whose regression part is its own `_eta(x)`; anchors as the default."""

    def _eta(self, x: F64) -> F64:
        raise NotImplementedError

    def estimate(self, at: I64 | None = None, out: F64 | None = None) -> F64:
        x = self.features if at is None else self.features[at]
        p = self._inverse(self._eta(x) + (self.anchors if at is None else self.anchors[at]))
        if out is None:
            return p
        out[...] = p
        return out


class TwoTimescales(_OwnFit):
    """eta_k = x_k . w + c_t: w on all history, c_t the batch residual with momentum."""

    def __init__(self, base: RegressionPlugin):
        super().__init__(**_like(base, forgetting=1.0))
        self.offset: float | None = None

    def _eta(self, x: F64) -> F64:
        eta: F64 = self.model.predict(x) + (self.offset or 0.0)
        return eta

    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        before = self.estimate(at=ids)
        target = self._link(sums, counts)
        x = self.features[ids]
        c_t = float(np.mean(target - self.model.predict(x)))
        c = c_t if self.offset is None else MOMENTUM * self.offset + (1 - MOMENTUM) * c_t
        self.offset = c
        self.model.observe(x, target - c)
        self.anchors[ids] = target - c - self.model.predict(x)
        return before, self.estimate(at=ids)


class PooledAnchors(RegressionPlugin):
    """A task's anchor is the count-weighted mean of every offset it showed."""

    def __init__(self, base: RegressionPlugin):
        super().__init__(**_like(base))
        self.offset_sum = np.zeros(base.features.shape[0])
        self.count = np.zeros(base.features.shape[0])

    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        before = self.estimate(at=ids)
        target = self._link(sums, counts)
        x = self.features[ids]
        self.model.observe(x, target)
        self.offset_sum[ids] += counts * (target - self.model.predict(x))
        self.count[ids] += counts
        self.anchors[ids] = self.offset_sum[ids] / self.count[ids]
        return before, self.estimate(at=ids)


class BinomialFit(_OwnFit):
    """Online logistic regression on success counts; anchors as the default plug-in."""

    def __init__(self, base: RegressionPlugin):
        super().__init__(**_like(base))
        d = base.features.shape[1] + 1
        self.hessian = np.zeros((d, d))
        self.w = np.zeros(d)

    def _eta(self, x: F64) -> F64:
        out: F64 = x @ self.w[:-1] + self.w[-1]
        return out

    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        before = self.estimate(at=ids)
        x = self.features[ids]
        design = np.hstack([x, np.ones((x.shape[0], 1))])
        ridge = self.model.ridge * np.eye(self.w.size)
        hessian = self.hessian
        for _ in range(2):  # two Newton steps on this batch, earlier batches via the Hessian
            p = self._inverse(design @ self.w)
            weight = counts * p * (1 - p)
            hessian = HESSIAN_FORGETTING * self.hessian + (design * weight[:, None]).T @ design
            grad = design.T @ (sums - counts * p) - self.model.ridge * self.w
            self.w = self.w + np.linalg.solve(hessian + ridge, grad)
        self.hessian = hessian
        self.anchors[ids] = self._link(sums, counts) - self._eta(x)
        return before, self.estimate(at=ids)


class FadingAnchors(RegressionPlugin):
    """Anchors shrink towards the regression by 1% per step."""

    def __init__(self, base: RegressionPlugin):
        super().__init__(**_like(base))

    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        self.anchors *= ANCHOR_FADE
        return super().observe(ids, sums, counts)


FORMS: dict[str, tuple[dict[str, Any], Callable[[RegressionPlugin], RegressionPlugin] | None]] = {
    "default": ({}, None),
    "no forgetting": ({"regression_forgetting": 1.0}, None),
    "two timescales": ({}, TwoTimescales),
    "pooled anchors": ({}, PooledAnchors),
    "binomial fit": ({}, BinomialFit),
    "fading anchors": ({}, FadingAnchors),
}
TEXT = {
    "text features: 16 dims": TextFeatureConfig(dim=16),
    "text features: 128 dims": TextFeatureConfig(dim=128),
    "text features: word bigrams": TextFeatureConfig(ngram_max=2),
}
"""The default plug-in on other text features (the default: 64 SVD dims of word unigrams)."""
ROWS = (*FORMS, *TEXT)


def _pool(learner: SimulatedLearner, form: str) -> TaskPool:
    """Prompts only; for a TEXT row, those prompts' features under its config, as given."""
    pool = given_pool(learner, ("prompts",))
    if form not in TEXT:
        return pool
    assert pool.prompts is not None
    features = text_features(pool.prompts, TEXT[form]).astype(np.float64)
    return dataclasses.replace(pool, features=features)


def run(args: tuple[str, str, int]) -> list[float]:
    """Score curve of one plug-in form (or 'uniform') on one seeded learner, prompts only."""
    scenario, form, seed = args
    learner = SimulatedLearner(SCENARIOS[scenario], seed=seed)
    options, replace = FORMS.get(form, ({}, None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        name = "uniform" if form == "uniform" else "bots"
        sel = make_selector(name, _pool(learner, form), seed=seed, **options)
    if replace is not None:
        assert isinstance(sel, BOTSSelector) and sel._regression is not None
        sel._regression = replace(sel._regression)
    return score_curve(learner, sel)
