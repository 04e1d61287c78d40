"""Hyperparameters of BOTS and its presets: the paper's defaults, validated on creation.

Values the paper does not state (priors, momentum gamma, the adaptive-rho threshold) are
those of the authors' released implementation (Trinity-RFT, `diff_estimator.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.config import SelectorConfig, check, check_choice, check_least
from frontier_rft.structures.epoch_walk import COVERAGE_MODES, Coverage

__all__ = ["PLUGINS", "REWARD_MODELS", "BOTSConfig", "DOTSConfig", "MoPPSConfig"]

PLUGINS = ("auto", "interpolation", "kernel", "regression", "none")
_MIN_COUNT, _MAX_COUNT = 1e-6, 1e6
REWARD_MODELS = ("bernoulli", "gaussian")


@dataclass(frozen=True)
class BOTSConfig(SelectorConfig):
    """BOTS hyperparameters; defaults are the paper's (lam = rho = 0.1, sampling on)."""

    lam: float = 0.1
    """Forgetting lambda in [0, 1]: share of the posterior moved back to the prior per step."""
    rho: float = 0.1
    """Weight rho in [0, 1] of implicit (plug-in) evidence against explicit rollout counts."""
    alpha0: float = 1.0
    """Base prior Beta(alpha0, beta0): pseudo-successes (released code: 1)."""
    beta0: float = 1.0
    """Base prior Beta(alpha0, beta0): pseudo-failures (released code: 1)."""
    target: float = 0.5
    """Target success rate p* (gaussian mode: target mean reward mu*)."""
    sample: bool = True
    """Thompson sampling from the posterior; False ranks tasks by the posterior mean."""
    plugin: str = "auto"
    """Implicit evidence: 'auto' (see docs), 'interpolation', 'kernel', 'regression' or 'none'."""
    momentum: float = 0.9
    """Momentum gamma of the capability coefficient mu~ (interpolation; released code 0.9)."""
    interpolation_eps: float = 1e-6
    """mu_t is skipped for a batch whose strong-weak reference gap is <= this."""
    kernel_tau: float = 1.0
    """Temperature tau of the kernel plug-in K(a, b) = exp(<e_a, e_b> / tau) (paper gives none)."""
    kernel_chunk_rows: int = 1024
    """Rows of the N x B kernel computed at a time (memory: rows * B * 8 bytes)."""
    regression_ridge: float = 1.0
    """Regression plug-in: L2 penalty of its online ridge regression (as PCL's value model)."""
    regression_forgetting: float = 0.95
    """Regression plug-in: per-step decay of past evidence in its fit (1 = none)."""
    regression_anchors: bool = True
    """Regression plug-in: keep each task's last observed offset from the regression."""
    implicit_rollouts: float | None = None
    """Pseudo sample size n of implicit evidence; None = the step's mean rollouts per task."""
    adaptive_rho: bool = False
    """Halve rho after a step whose plug-in error on the selected batch >= the threshold."""
    adaptive_rho_threshold: float = 0.25
    """Mean |p~ - observed rate| on the selected batch that halves rho (released code 0.25)."""
    reward_model: str = "bernoulli"
    """'bernoulli' (Beta posterior, rewards in [0, 1]) or 'gaussian' (known variance, any)."""
    gaussian_sigma: float = 0.5
    """Gaussian mode: known reward standard deviation sigma."""
    gaussian_prior_mean: float = 0.5
    """Gaussian mode: prior mean mu0 of a task's mean reward."""
    gaussian_prior_count: float = 2.0
    """Gaussian mode: prior pseudo count nu0 = sigma^2 / sigma0^2."""
    late_window: int = 64
    """Steps whose per-step log is kept so late pieces are folded in exactly."""
    candidates: int = 0
    """Tasks drawn uniformly per select to choose among (0 = the whole pool, the paper)."""
    coverage: Coverage = "pool"
    """'pool': best B of the whole pool each step (the paper); 'epoch': each task once per epoch."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("lam", "rho"):
            v = getattr(self, name)
            check(0.0 <= v <= 1.0, f"{name} must be a number in [0, 1], got {v!r}")
        # Pseudo counts within 12 orders of magnitude of each other: Eq. 1's update adds and
        # subtracts them, and a wider spread would round a posterior parameter to 0.
        for name in ("alpha0", "beta0", "gaussian_prior_count"):
            v = getattr(self, name)
            check(
                _MIN_COUNT <= v <= _MAX_COUNT,
                f"{name} must be a pseudo count in [1e-6, 1e6] (released code: 1), got {v!r}",
            )
        for name in ("kernel_tau", "regression_ridge", "adaptive_rho_threshold", "gaussian_sigma"):
            v = getattr(self, name)
            check(0 < v <= MAX_ABS_VALUE, f"{name} must be a positive number <= 1e100, got {v!r}")
        check_choice("plugin", self.plugin, PLUGINS)
        check_choice("reward_model", self.reward_model, REWARD_MODELS)
        if self.reward_model == "bernoulli":
            check(
                0.0 < self.target < 1.0,
                f"target must be a success rate in (0, 1), got {self.target!r}",
            )
        for name in ("target", "gaussian_prior_mean"):  # gaussian: a mean reward, same bound
            v = getattr(self, name)
            check(abs(v) <= MAX_ABS_VALUE, f"{name} must lie in [-1e100, 1e100], got {v!r}")
        check(
            0.0 <= self.momentum < 1.0,
            f"momentum must be in [0, 1), got {self.momentum!r}",
        )
        check(
            0.0 < self.regression_forgetting <= 1.0,
            f"regression_forgetting must be in (0, 1], got {self.regression_forgetting!r}",
        )
        check(
            self.interpolation_eps >= 0,
            f"interpolation_eps must be >= 0, got {self.interpolation_eps!r}",
        )
        check(
            isinstance(self.candidates, int)
            and not isinstance(self.candidates, bool)
            and self.candidates >= 0,
            f"candidates must be an int >= 0 (0 = the whole pool; e.g. 16 x the batch size "
            f"for pools of 1e7+ tasks), got {self.candidates!r}",
        )
        check_choice("coverage", self.coverage, COVERAGE_MODES)
        check(
            self.coverage == "pool" or self.candidates == 0,
            f"coverage='epoch' ranks the whole rest of the epoch each step and cannot be "
            f"combined with candidates > 0 (got {self.candidates!r}, meant for pools too large "
            f"to score per step); pass candidates=0 with coverage='epoch', or coverage='pool'",
        )
        check_least(self, ("kernel_chunk_rows", "late_window"), 1)
        n = self.implicit_rollouts
        check(
            n is None or 0 < n <= _MAX_COUNT,
            "implicit_rollouts must be None (use the step's rollouts per task) or a number in "
            f"(0, 1e6], got {n!r}",
        )


@dataclass(frozen=True)
class MoPPSConfig(BOTSConfig):
    """MoPPS preset (Qu et al. 2025 inside BOTS): explicit evidence only, no forgetting."""

    lam: float = 0.0
    """No forgetting (MoPPS's decay 1, i.e. BOTS lam = 0 as in the paper's baseline)."""
    rho: float = 0.0
    """No implicit evidence: posteriors are plain Beta-Bernoulli counts."""


@dataclass(frozen=True)
class DOTSConfig(BOTSConfig):
    """DOTS proxy preset: implicit evidence only, full forgetting, greedy selection."""

    lam: float = 1.0
    """Full forgetting: each step's posterior is the prior plus that step's evidence."""
    rho: float = 1.0
    """Unselected tasks are driven entirely by the plug-in's estimate."""
    sample: bool = False
    """Posterior sampling disabled: rank by posterior mean."""
