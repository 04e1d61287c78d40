"""`skip-predict`: the Bayesian skip with a rollout-free three-way predictor and separate
rules for the all-correct and the never-solved side (issue 62, items 2 and 3).

`skip` and `skip-eager` judge an untried prompt by one number, the predicted chance of an
informative first group, and pass it over when that chance is low: on the CPU testbed that
passed over never-solved prompts (95% of the 3-number level's first groups are all-wrong)
and lost pass@8 (`skip-eager`: −0.035 at 512 prompts; docs/results/first_epoch.md). pass@k
is won on prompts the policy has never solved (BBG, arXiv 2606.15455); an all-correct prompt
is safe to skip. So the two sides get their own rules here:

- A predictor (selectors/_outcome.py) gives each prompt P(all-correct), P(all-wrong) and
  P(mixed) from its features alone (the policy's self-embeddings where given, else
  prompt-text features): a multinomial logistic learned online across prompts from every
  group outcome, with forgetting (`regression_forgetting` per step, over the last
  `predictor_window` groups), calibrated by a temperature and a shift per side fitted on
  prompts held out of a second fit (Platt's scaling; checked per epoch in the metrics).
  It scores prompts never rolled out.
- All-correct side (aggressive): any prompt, untried or tried, with P(all-correct) >=
  `correct_threshold` is kept with probability at most `correct_keep`.
- Never-solved side (a retest floor): an untried prompt with P(all-wrong) >=
  `wrong_threshold` is kept with probability `wrong_floor`, by default high (0.75): it is
  taken three passes in four until it is tried. A tried prompt follows `skip`'s own posterior.
- Otherwise an untried prompt is taken (until `predictor_min_groups` decayed groups were
  seen, every untried prompt is). Every keep probability is at least
  min(min_keep, correct_keep, wrong_floor) > 0: no prompt is starved.

Its calibration is in the metrics, per epoch of the run: Brier score and AUC of each side
(all-correct vs rest, all-wrong vs rest) of the prediction made for each group before its
outcome was folded in (`skip-predict/calibration/epoch<e>/...`). Everything else is `skip`'s,
and `skip` itself is unchanged (its runs keep their ledger definitions).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Literal

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.informative import PRIOR_MIN_GROUPS
from frontier_rft.core.pool import TaskPool
from frontier_rft.features.derive import task_features
from frontier_rft.selectors._outcome import CORRECT, WRONG, Calibration, OutcomePredictor, labels_of
from frontier_rft.selectors.skip import SkipConfig, SkipSelector
from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = ["SkipPredictConfig", "SkipPredictSelector"]

_SKIP_UNTRIED_FLOOR = next(f.default for f in fields(SkipConfig) if f.name == "untried_floor")


@dataclass(frozen=True)
class SkipPredictConfig(SkipConfig):
    """`skip` with a three-way outcome predictor and pass@k-aware rules (our variant)."""

    untried: Literal["auto", "take", "predict"] = "auto"
    """A prompt with no rollouts of its own: 'predict' judge it by the three-way predictor,
    'take' take it always (the predictor still learns and reports its calibration); 'auto'
    is 'predict' (its thresholds act only on confident predictions, from any features)."""
    correct_threshold: float = 0.8
    """P(all-correct) at or above which a prompt (untried or tried) is kept with at most
    `correct_keep`: the side that is safe to skip."""
    correct_keep: float = 0.1
    """Keep probability of a prompt predicted all-correct (at least `min_keep`)."""
    wrong_threshold: float = 0.9
    """P(all-wrong) at or above which an untried prompt is kept with `wrong_floor`."""
    wrong_floor: float = 0.75
    """Retest floor: keep probability of an untried prompt predicted all-wrong (high: pass@k
    is won on never-solved prompts; skip-eager's 0.25 lost pass@8)."""
    predictor_ridge: float = 1.0
    """L2 penalty of the predictor's weights, on pool-standardised features."""
    predictor_window: int = 1024
    """Most recent groups the predictor is fitted on (older ones are forgotten anyway)."""
    predictor_min_groups: float = float(PRIOR_MIN_GROUPS)
    """Decayed groups seen before the predictor's rules act (until then untried prompts are
    taken and the all-correct rule is off)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("untried", self.untried, ("auto", "take", "predict"))
        check(
            self.untried_floor == _SKIP_UNTRIED_FLOOR,
            f"untried_floor is skip's untried rule, which skip-predict does not use; set "
            f"wrong_floor (and correct_keep) instead, got untried_floor={self.untried_floor!r}",
        )
        for name in ("correct_threshold", "wrong_threshold"):
            v = getattr(self, name)
            check(
                0.5 <= v <= 1.0, f"{name} must lie in [0.5, 1] (a confident prediction), got {v!r}"
            )
        check(
            self.min_keep <= self.correct_keep <= 1.0,
            f"correct_keep must lie in [min_keep={self.min_keep:g}, 1] so every prompt comes "
            f"back within a bounded walk, got {self.correct_keep!r}",
        )
        check(
            self.min_keep <= self.wrong_floor <= 1.0,
            f"wrong_floor must lie in [min_keep={self.min_keep:g}, 1] (1: never pass over a "
            f"prompt predicted all-wrong), got {self.wrong_floor!r}",
        )
        check(
            0.0 < self.predictor_ridge <= 1e6,
            f"predictor_ridge must be a positive number <= 1e6, got {self.predictor_ridge!r}",
        )
        check(
            isinstance(self.predictor_window, int) and 16 <= self.predictor_window <= 1_000_000,
            f"predictor_window must be an int in [16, 1000000] groups, "
            f"got {self.predictor_window!r}",
        )
        check(
            1.0 <= self.predictor_min_groups <= 1e6,
            f"predictor_min_groups must lie in [1, 1e6], got {self.predictor_min_groups!r}",
        )


class SkipPredictSelector(SkipSelector):
    """`skip` whose untried prompts are judged by a calibrated three-way predictor: those
    predicted all-correct skipped aggressively, those predicted all-wrong retried at a high
    floor, the rest taken."""

    name = "skip-predict"
    # kept_loses and kept_level_epochs are skip's (rollouts: auto keeps full batches)
    config_class = SkipPredictConfig
    config: SkipPredictConfig
    # skip's features and evidence, read by the predictor too
    needs: ClassVar[Needs] = replace(
        SkipSelector.needs,
        uses="per-prompt Beta posteriors; a three-way outcome predictor across prompts for "
        "untried ones",
        from_prompts="the predictor and the implicit evidence from prompt-text features",
    )
    cost: ClassVar[Cost] = Cost(
        "sublinear",
        "O(B n / keep + W d^2)",
        "skip's, plus the predictor's last W groups (a Newton refit per step)",
    )
    color: ClassVar[str] = "#0b6e4f"  # a dark green: skip's family, apart from every colour
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = ({"untried": "take"},)
    reads_posterior: ClassVar[bool] = True
    """Tried prompts start from skip's posterior keep and only the all-correct rule judges
    them (False, `predict-only`: every prompt, tried or untried, is judged by the predictor's
    rules alone, as an untried one is here)."""

    @classmethod
    def requirement(cls, config: SelectorConfig) -> Requires | None:
        """The predictor reads features (given, or derived from the prompt text)."""
        return Requires(
            ("features", "prompts"),
            "a predictor learned across prompts reads their features",
        )

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """The predictor always reads features."""
        return True

    def __init__(self, pool: TaskPool, config: SkipPredictConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        cfg = self.config
        self._first = None  # skip's untried model: this variant's predictor replaces it
        if self._features is None:  # plugin='none': the predictor still reads features
            self._features, self.evidence["features"] = task_features(pool, self.name)
        self._predictor = OutcomePredictor(
            self._features,
            cfg.predictor_ridge,
            cfg.regression_forgetting,
            cfg.predictor_window,
            cfg.predictor_min_groups,
        )
        # the AUC keeps an epoch's scores: about a pool's worth of groups, bounded
        self._calibration = Calibration(cap=8 * pool.num_tasks + 1024)

    @property
    def predictor(self) -> OutcomePredictor:
        """The three-way outcome predictor (read-only use: its `predict(ids)`)."""
        return self._predictor

    @property
    def calibration(self) -> Calibration:
        """Brier scores and AUCs of the predictor, per epoch."""
        return self._calibration

    def untried_keep(self, ids: I64) -> F64:
        """1: untried prompts are judged in keep_probability, by the predictor's rules."""
        return np.ones(ids.shape[0])

    def keep_probability(self, ids: I64) -> F64:
        """skip's keep for tried prompts (1 without `reads_posterior`); then the predictor's
        rules: untried prompts (every prompt without `reads_posterior`) with P(all-wrong) >=
        wrong_threshold kept with wrong_floor, any prompt with P(all-correct) >=
        correct_threshold with at most correct_keep (see the module docstring)."""
        if self.reads_posterior:
            keep = super().keep_probability(ids)
            untried = ~self._beta.seen(ids)
        else:  # predict-only: every prompt judged as an untried one, from 1
            keep, untried = np.ones(ids.shape[0]), np.ones(ids.shape[0], np.bool_)
        cfg = self.config
        if not self._predictor.ready or self.group_size < 2:
            return keep
        probs = self._predictor.predict(ids)
        if cfg.untried == "take":
            judged = np.zeros(ids.shape[0], np.bool_)
        else:
            judged = np.ones(ids.shape[0], np.bool_)
        wrong = judged & untried & (probs[:, WRONG] >= cfg.wrong_threshold)
        keep[wrong] = cfg.wrong_floor
        correct = (probs[:, CORRECT] >= cfg.correct_threshold) & (judged | ~untried)
        keep[correct] = np.minimum(keep[correct], cfg.correct_keep)
        return keep

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        ids = batch.task_ids
        lo = np.minimum.reduceat(batch.rewards, batch.offsets[:-1])
        hi = np.maximum.reduceat(batch.rewards, batch.offsets[:-1])
        labels = labels_of(lo, hi)
        before = self._predictor.observe(ids, labels)  # predictions made before the outcome
        epoch = EpochWalk.run_epoch(self._beta.handed_out, self.num_tasks)
        self._calibration.add(epoch, before, labels)
        super()._observe(batch)

    def _refresh_features(self, features: F64) -> bool:
        super()._refresh_features(features)
        self._features = features
        self._predictor.refresh(features)
        return True

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        state = super()._state_dict()
        state["predictor"] = self._predictor.state_dict()
        state["calibration"] = self._calibration.state_dict()
        return state

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        who = self.name
        cfg = self.config
        predictor = OutcomePredictor(
            self._features if self._features is not None else np.zeros((self.num_tasks, 1)),
            cfg.predictor_ridge,
            cfg.regression_forgetting,
            cfg.predictor_window,
            cfg.predictor_min_groups,
        )
        predictor.load_state_dict(state["predictor"], who)
        calibration = Calibration(self._calibration.cap)
        calibration.load_state_dict(state["calibration"], who)
        rest = {k: v for k, v in state.items() if k not in ("predictor", "calibration")}
        super()._load_state_dict(rest)
        self._predictor, self._calibration = predictor, calibration

    def _metrics(self) -> dict[str, float]:
        out = super()._metrics()
        p = self._predictor
        out["untried_predicted"] = float(self.config.untried != "take")
        out["predictor/ready"] = float(p.ready)
        out["predictor/groups"] = p.evidence
        out.update(self._calibration.metrics())
        return out
