"""PCL, prompt curriculum learning (METIS paper's baseline, appendix A.5; Gao et al. 2026).

An online regressor (the "value model") predicts, from each task's feature vector, its pass
rate (binary rewards) or its reward variance (continuous rewards). Each step it scores an m*B
candidate pool drawn uniformly and keeps the B candidates whose predicted pass rate is closest
to the target 0.5, or whose predicted variance is highest; then it regresses on the realised
outcomes of the step. With coverage="epoch" the m*B candidates are the next m*B prompts of
this epoch's walk that were not handed out yet, so each prompt is selected once per epoch.
The paper's value model is an LLM with a 512-d value head trained by SGD;
here it is exponentially-weighted ridge regression on `TaskPool.features`, or on features of
the prompt text when only prompts are given (docs/selectors/pcl.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_float, read_keys
from frontier_rft.features.derive import task_features
from frontier_rft.selectors._ridge import OnlineRidge
from frontier_rft.structures.epoch_walk import COVERAGE_MODES, Coverage, EpochWalk

__all__ = ["PCLConfig", "PCLSelector"]

TARGETS = ("pass_rate", "variance")


@dataclass(frozen=True)
class PCLConfig(SelectorConfig):
    """PCL hyperparameters; pool multiplier and target from the METIS paper's Table 5."""

    pool_multiplier: int = 8
    """m: candidates scored per step = m * batch size (capped at the pool size)."""
    target: str = "pass_rate"
    """Regression target: 'pass_rate' (binary rewards) or 'variance' (continuous rewards)."""
    target_pass_rate: float = 0.5
    """With target='pass_rate', keep the candidates whose prediction is closest to this."""
    ridge: float = 1.0
    """L2 penalty of the ridge regression (keeps the fit defined before enough data)."""
    forgetting: float = 0.95
    """Per-batch decay of past evidence, so the fit follows the moving policy (1 = none)."""
    fit_intercept: bool = True
    """Append a constant feature (its weight is penalised like the others)."""
    coverage: Coverage = "pool"
    """'pool': m*B uniform candidates (the paper); 'epoch': the next m*B unvisited this epoch."""

    def __post_init__(self) -> None:
        super().__post_init__()
        m = self.pool_multiplier
        check(
            m >= 1,
            f"pool_multiplier must be a positive int (paper default 8), got {m!r}",
        )
        check_choice("target", self.target, TARGETS)
        check(
            0.0 <= self.target_pass_rate <= 1.0,
            f"target_pass_rate must lie in [0, 1] (paper default 0.5), "
            f"got {self.target_pass_rate!r}",
        )
        check(
            0.0 < self.ridge <= MAX_ABS_VALUE,
            f"ridge must be a positive number <= 1e100, got {self.ridge!r}",
        )
        check(
            0.0 < self.forgetting <= 1.0,
            f"forgetting must lie in (0, 1] (1 keeps all evidence), got {self.forgetting!r}",
        )
        check_choice("coverage", self.coverage, COVERAGE_MODES)


class PCLSelector(Selector):
    """PCL: pick from an m*B uniform pool by a regressor's predicted pass rate / variance.

    The regressor (`OnlineRidge`) keeps the sufficient statistics of exponentially-weighted
    ridge regression, `A <- gamma*A + X^T X`, `c <- gamma*c + X^T y`, and refits
    `w = (A + ridge*I)^-1 c` after every feedback batch: O(B d^2 + d^3) per step and O(m B d)
    per select, independent of the pool size. Every fed-back group is a training sample,
    selected by PCL or not; a late piece of an older step is one more batch (one more decay).
    """

    name = "pcl"
    needs = Needs(
        "task features (an online regressor predicts pass rates from them)",
        "prompt-text features",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings)",
        ("evidence/features/text",),
    )
    requires = Requires(("features", "prompts"), "its value model reads task features")
    cost = Cost("sublinear", "O(mB)", "value model scores m*B candidates")
    color = "#e377c2"  # pink
    test_configs = ({"coverage": "epoch"},)
    config_class = PCLConfig

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """Its model regresses pass rates on task features, always."""
        return True

    def __init__(self, pool: TaskPool, config: PCLConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        assert isinstance(self.config, PCLConfig)
        self.cfg: PCLConfig = self.config
        self._features, self.evidence["features"] = task_features(pool, self.name)
        cfg = self.cfg
        self.model = OnlineRidge(
            self._features.shape[1], cfg.ridge, cfg.forgetting, cfg.fit_intercept
        )
        self._stats = dict.fromkeys(
            (
                "regression_mse",
                "regression_mae",
                "target_mean",
                "candidate_prediction_mean",
                "selected_prediction_mean",
            ),
            float("nan"),
        )
        # coverage="epoch": this epoch's walk; the value model orders what it has left.
        self._walk = EpochWalk(pool.num_tasks) if cfg.coverage == "epoch" else None

    @property
    def weights(self) -> NDArray[np.float64]:
        """The value model's weights (intercept last when fitted)."""
        return self.model.weights

    def predict(self, task_ids: NDArray[np.int64]) -> NDArray[np.float64]:
        """Predicted pass rate (or reward variance) of the given tasks."""
        return self.model.predict(self._features[np.asarray(task_ids, dtype=np.int64)])

    def _select(self, n: int) -> NDArray[np.int64]:
        if self._walk is not None:
            m = self.cfg.pool_multiplier
            chosen = self._walk.take_best(n, self.rng, self._window_score, window=m * n)
            self._stats["selected_prediction_mean"] = float(self.predict(chosen).mean())
            return chosen
        c = min(self.cfg.pool_multiplier * n, self.num_tasks)
        cand = self.rng.choice(self.num_tasks, size=c, replace=False).astype(np.int64)
        pred = self.predict(cand)
        if self.cfg.target == "pass_rate":
            score = -np.abs(pred - self.cfg.target_pass_rate)
        else:
            score = pred
        top = np.lexsort((self.rng.random(c), -score))[:n]  # ties broken at random
        self._stats["candidate_prediction_mean"] = float(pred.mean())
        self._stats["selected_prediction_mean"] = float(pred[top].mean())
        return cand[top]

    def _window_score(self, ids: NDArray[np.int64]) -> NDArray[np.float64]:
        """coverage="epoch": the value model's score of the walk's window (the next m*n ids
        of this epoch's remainder: a uniform sample of it, as the walk keeps it shuffled)."""
        pred, cfg_target = self.predict(ids), self.cfg.target_pass_rate
        self._stats["candidate_prediction_mean"] = float(pred.mean())
        score: NDArray[np.float64] = (
            pred if self.cfg.target == "variance" else -np.abs(pred - cfg_target)
        )
        return score

    def _observe(self, batch: GroupBatch) -> None:
        y = batch.means if self.cfg.target == "pass_rate" else batch.variances
        err = self.model.observe(self._features[batch.task_ids], y)  # the choosing model's
        self._stats["regression_mse"] = float(np.mean(err * err))
        self._stats["regression_mae"] = float(np.mean(np.abs(err)))
        self._stats["target_mean"] = float(y.mean())

    def _refresh_features(self, features: NDArray[np.float64]) -> bool:
        self._features = features  # the base class kept the value model's dimension
        return True

    def _state_dict(self) -> dict[str, Any]:
        walk = {"walk": self._walk.state_dict()} if self._walk is not None else {}
        return {**self.model.state_dict(), "stats": dict(self._stats), **walk}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        stats = read_keys(state, "stats", self.name, tuple(self._stats))
        stats = {k: read_float(stats, k, self.name) for k in stats}
        # The value model's fields sit beside "stats"; unknown ones are refused by the base.
        walk = EpochWalk.optional_from_state(
            state, self.num_tasks, self.name, expected=self._walk is not None
        )
        self.model.load_state_dict({k: state[k] for k in OnlineRidge.STATE_KEYS}, self.name)
        self._stats, self._walk = stats, walk

    def _metrics(self) -> dict[str, float]:
        return {
            **self._stats,
            "effective_samples": self.model.samples,
            "updates": float(self.model.batches),
            "weight_norm": float(np.linalg.norm(self.model.weights)),
            **({"epoch": float(self._walk.epoch)} if self._walk is not None else {}),
        }
