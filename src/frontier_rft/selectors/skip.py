"""Bayesian skip: walk the data like uniform; skip a prompt by the posterior probability
that its next group of n rollouts would carry no signal.

GRESO (selectors/greso.py) skips by a streak count and adapts one rate per streak kind to
a target; this selector asks each prompt's own posterior instead. Per prompt a Beta
posterior over its success rate p (BOTS's machinery: explicit counts with forgetting, a
prior that carries implicit evidence), and the chance that a group of n rollouts is
informative, i.e. not all-correct and not all-wrong:

    q(a, b) = 1 - E[p^n] - E[(1-p)^n],   E[p^n] = prod_{i<n} (a + i) / (a + b + i)

A tried prompt is taken with probability keep = clip(q / q0, min_keep, 1), where q0 is q of
an average prompt nothing is known about: one predicted at least as informative is always
taken; one whose groups kept coming out all-correct or all-wrong is taken less and less
often, but at least with min_keep.

A prompt with no rollouts of its own (untried) follows a separate, deliberate rule,
`untried`: 'take' takes it always (GRESO; uniform's first epoch); 'predict' keeps it with
probability clip(u / q1, untried_floor, 1), where u = q^ + 2 se is the upper bound of a
linear-probability ridge regression of "the first group was informative" on the prompt's
features (fitted on first groups only) and q1 the share of first groups that were
informative: both are the same quantity, so a prompt the features say nothing about is
taken, and one is passed over only for a prediction significantly below average. 'auto'
(the default) is 'predict' with given features and 'take' with features derived from the
prompt text, where the prediction gained a tenth as much (benchmarks/results/skip_untried.md)
and a prompts-only user keeps GRESO's promise.

Posterior of prompt k, with S_k, F_k its discounted success / failure counts (the model
of structures/beta_posterior.py, which the rollout allocation shares):

    a_k = c p~_k + S_k,  b_k = c (1 - p~_k) + F_k
    S_k <- d^(e - e_k) S_k + s,  F_k <- d^(e - e_k) F_k + f     when its group arrives

with e the prompts handed out so far in pool sizes (uniform's epochs: a clock that skipping
does not speed up, unlike the walk's own epochs) and d = 1 - lam: the forgetting is per
pass over the pool, the rate at which uniform would observe a prompt again (BOTS forgets
per step because it can re-select a task every step). Applied lazily from the last
update, it is exact.

The prior Beta(c p~, c (1 - p~)) is empirical Bayes: its strength c is fitted by moments
to the pass rates the pool has shown so far (groups of n rollouts, past batches decayed
like the regression's), c = m (1 - m) / var(p) - 1 with m the mean rate and var(p) the
spread of rates once the binomial noise E[p (1 - p)] / n is taken out; clipped to
[0.1, 100]. RL pools are U-shaped (most prompts always or never solved), so c comes out
small and one all-wrong group already says much; a pool of alike prompts gives a large
c. Until a batch of 16 groups has been seen, c = alpha0 + beta0 and m = alpha0 / (alpha0 +
beta0). q0 is then q of an average untried prompt, Beta(c m, c (1 - m)).
p~_k is the implicit evidence: with features (given, the policy's self-embeddings, or
derived from the prompt text) an online ridge regression of each group's pass rate on its
prompt's features predicts it (clipped to [0, 1]; the scale of m, so q and q0 compare like
with like); with plugin='none' (the only way to build it on a pool with neither features
nor prompts), p~ = m.
Fractional rewards in [0, 1] count as s = sum of rewards, f = n - s; q is then the binary
model's chance of a spread-out group (a group whose rewards are all equal to a value in
between is not predicted, so it is never skipped for it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.config import SelectorConfig, check, check_choice
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.informative import (
    MAX_GROUP,
    PRIOR_MIN_GROUPS,
    informative_probability,
)
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_array, read_counts, read_float, read_int
from frontier_rft.features.derive import task_features
from frontier_rft.selectors._ridge import OnlineRidge
from frontier_rft.selectors._skip_walk import SkipsOnAWalk
from frontier_rft.structures.beta_posterior import BetaPosteriors
from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = ["SkipConfig", "SkipSelector", "informative_probability"]

_MAX_GROUP = MAX_GROUP  # group sizes beyond this are read as this
_MIN_GROUPS = PRIOR_MIN_GROUPS  # (decayed) groups seen before the prior is fitted
_UNTRIED_Z = 2.0  # untried='predict': standard errors added to the predicted informative chance


@dataclass(frozen=True)
class SkipConfig(SelectorConfig):
    """The Bayesian skip (our method; BOTS's prior and forgetting defaults)."""

    alpha0: float = 1.0
    """Base prior Beta(alpha0, beta0): pseudo-successes (BOTS: 1)."""
    beta0: float = 1.0
    """Base prior Beta(alpha0, beta0): pseudo-failures (BOTS: 1)."""
    lam: float = 0.1
    """Share of a prompt's own evidence forgotten per pool-size of prompts handed out
    (BOTS's lambda, per pass over the pool instead of per step)."""
    min_keep: float = 0.01
    """Floor of the keep probability, so no prompt is skipped for good (GRESO's 0.01); at
    least `min_keep_floor`."""
    min_keep_floor: ClassVar[float] = 1e-4
    """Smallest min_keep: one select on a pool the posterior calls all-solved walks about
    1/min_keep epochs (as GRESOConfig.min_keep_floor)."""
    plugin: Literal["auto", "regression", "none"] = "auto"
    """Implicit evidence: 'regression' on task features (given or derived from the prompt
    text), or 'none' (the base prior); 'auto' is 'regression'."""
    regression_ridge: float = 1.0
    """L2 penalty of the implicit-evidence regression (as BOTS's regression plug-in)."""
    regression_forgetting: float = 0.95
    """Per-step decay of past batches in the regression's and the prior's fit (BOTS: 0.95)."""
    untried: Literal["auto", "take", "predict"] = "auto"
    """A prompt with no rollouts of its own: 'take' it always (GRESO; uniform's first epoch),
    'predict' skip it by a calibrated prediction from tried prompts' features, 'auto' predict
    with given features and take with features derived from the prompt text."""
    untried_floor: float = 0.25
    """With untried='predict': the least keep probability of an untried prompt."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("alpha0", "beta0", "regression_ridge"):
            v = getattr(self, name)
            check(0.0 < v <= 1e6, f"{name} must be a positive number <= 1e6, got {v!r}")
        check(0.0 <= self.lam <= 1.0, f"lam must lie in [0, 1] (0 = never forget), got {self.lam}")
        check(
            self.min_keep_floor <= self.min_keep <= 1.0,
            f"min_keep must lie in [{self.min_keep_floor:g}, 1] so every prompt comes back within "
            f"a bounded walk (GRESO: 0.01), got {self.min_keep}",
        )
        check_choice("plugin", self.plugin, ("auto", "regression", "none"))
        check_choice("untried", self.untried, ("auto", "take", "predict"))
        check(
            0.0 < self.untried_floor <= 1.0,
            f"untried_floor must lie in (0, 1] so every prompt can be tried, "
            f"got {self.untried_floor}",
        )
        check(
            0.0 < self.regression_forgetting <= 1.0,
            f"regression_forgetting must lie in (0, 1], got {self.regression_forgetting}",
        )


class SkipSelector(SkipsOnAWalk, Selector):
    """Bayesian skip: walks the data each epoch and skips a prompt by its posterior chance
    of a zero-variance group (Beta posteriors with forgetting, implicit evidence from
    prompt features for prompts never tried)."""

    name = "skip"
    kept_loses = (
        "with rollouts: kept it lost held-out score where the policy learns fast: over 2 "
        "epochs on SmolLM2-135M (H200, 6 paired seeds) pass@1 over the last quarter -0.021 "
        "[-0.032, -0.007] against uniform, on the CPU regime closest to it (fast-format-lr4, 20 "
        "paired seeds) -0.024 [-0.044, -0.006] (its fresh 10 alone -0.007, within noise); over "
        "3 to 11 epochs on the CPU testbed pass@1 -0.017 [-0.028, -0.007] (40 paired seeds)"
    )
    kept_saves = (
        "0.78x of uniform's rollouts over 2 epochs on SmolLM2-135M (GPU, 6 paired seeds; 1.04x "
        "its wall-clock there, its steps latency-bound as the timings suggest), 0.82-0.84x on "
        "the CPU testbeds; nothing in a first epoch from prompt text alone"
    )
    fewer_steps_saves = (
        "0.83-0.84x of uniform's steps and rollouts over 2 epochs on the CPU testbeds (20 "
        "paired seeds each) at held-out pass@1 -0.003 and -0.007, within noise but short of "
        "the no-loss target; on SmolLM2-135M (H200, 2 epochs, 6 fresh pairs) 0.78x the "
        "rollouts in 50 of 64 steps at pass@1 -0.030 [-0.055, -0.005], pass@4 -0.054: it "
        "scored what uniform scored at its 50th step, as a uniform run stopped there would"
    )
    config_class = SkipConfig
    config: SkipConfig
    needs: ClassVar[Needs] = Needs(
        "per-prompt Beta posteriors of its own rollouts; implicit evidence for untried ones",
        "implicit evidence from a regression on prompt-text features",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings)",
        ("evidence/features/text", "evidence/plugin/regression"),
    )
    cost: ClassVar[Cost] = Cost(
        "sublinear", "O(B n / keep)", "posteriors of the walked prompts only, lazily forgotten"
    )
    color: ClassVar[str] = "#17a589"  # teal

    @classmethod
    def requirement(cls, config: SelectorConfig) -> Requires | None:
        """The regression for prompts never tried reads features, unless plugin='none'."""
        assert isinstance(config, SkipConfig)
        if config.plugin == "none":
            return None
        return Requires(
            ("features", "prompts"),
            "prompts never tried are judged by a regression on prompt features",
            (("plugin", "none", "prompts never tried get the base prior only"),),
        )

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """Prompts never tried are judged by a regression on features, unless plugin='none'."""
        assert isinstance(config, SkipConfig)
        return cls._plugin(config) == "regression"

    @staticmethod
    def _plugin(config: SkipConfig) -> str:
        """The plug-in `config` runs: 'auto' is the regression."""
        return "regression" if config.plugin == "auto" else config.plugin

    def __init__(self, pool: TaskPool, config: SkipConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        cfg = self.config
        n = pool.num_tasks
        self._walk = EpochWalk(n)
        self._features: F64 | None = None
        self._ridge: OnlineRidge | None = None
        plugin = self._plugin(cfg)  # requirement() checked
        if plugin == "regression":
            self._features, self.evidence["features"] = task_features(pool, self.name)
            self._ridge = OnlineRidge(
                self._features.shape[1], cfg.regression_ridge, cfg.regression_forgetting
            )
        self.evidence["plugin"] = plugin
        # untried="predict": P(a first group is informative | features), a linear probability
        # model fitted on first groups only, and the decayed share of informative first
        # groups (the average it is compared with: one scale).
        # 'auto': on prompt-text features the prediction gained a tenth of what it gains on
        # given ones (benchmarks/results/skip_untried.md): a prompts-only user keeps 'take'.
        source = self.evidence.get("features")
        predict = cfg.untried == "predict" or (cfg.untried == "auto" and source == "given")
        self._first: OnlineRidge | None = None
        if predict and self._features is not None:
            self._first = OnlineRidge(
                self._features.shape[1], cfg.regression_ridge, cfg.regression_forgetting
            )
        self._first_moments = np.zeros(2)  # decayed first groups, informative ones among them
        # S_k, F_k, the clock (prompts selected / N) and the prior's moments, decayed like
        # the regression's.
        self._beta = BetaPosteriors(
            n, cfg.lam, (cfg.alpha0, cfg.beta0), cfg.regression_forgetting, per_rollout=False
        )
        self._group = 0  # rollouts per group, from feedback (0 = none seen yet)
        self._skip_totals = {"skipped": 0}
        self._last_skipped = 0
        self._last_keep = float("nan")

    @property
    def clock(self) -> float:
        """Prompts handed out so far, in pool sizes (the forgetting's time)."""
        return self._beta.clock

    @property
    def group_size(self) -> int:
        """n in q: the size of the groups fed back (8 before any feedback)."""
        return self._group or 8

    # ------------------------------------------------------------------ posterior
    def population_prior(self) -> tuple[float, float]:
        """(m, c): mean and strength of the prior, fitted by moments to the observed pass
        rates (the base prior's until 16 groups are seen; see the module docstring)."""
        return self._beta.prior(self.group_size)

    def prior_mean(self, ids: I64) -> F64:
        """p~: the regression's predicted pass rate for these prompts, or the population's
        mean. Both are on the scale of m (pass rates, not logits), so a prompt the features
        say nothing about gets p~ = m and the q0 it is compared with."""
        if self._ridge is None or self._features is None or self._ridge.batches == 0:
            return np.full(ids.shape[0], self.population_prior()[0])
        out: F64 = np.clip(self._ridge.predict(self._features[ids]), 0.0, 1.0)
        return out

    def posterior(self, ids: I64) -> tuple[F64, F64]:
        """(a, b) of the Beta posterior of each prompt, forgetting applied up to now."""
        return self._beta.posterior(ids, self.prior_mean(ids), self.group_size)

    def keep_probability(self, ids: I64) -> F64:
        """clip(q / q0, min_keep, 1) for tried prompts; for untried ones 1 (untried='take')
        or the calibrated rule of untried_keep (see the module docstring)."""
        cfg = self.config
        n = self.group_size
        q = informative_probability(*self.posterior(ids), n)
        m, c = self.population_prior()
        m = min(max(m, 1e-6), 1.0 - 1e-6)
        q0 = float(informative_probability(np.array([c * m]), np.array([c * (1.0 - m)]), n)[0])
        if q0 <= 1e-12:  # groups of one rollout, or a pool with no spread: skip nothing
            return np.ones(ids.shape[0])
        keep: F64 = np.clip(q / q0, cfg.min_keep, 1.0)
        untried = ~self._beta.seen(ids)
        if untried.any():
            keep[untried] = self.untried_keep(ids[untried])
        return keep

    @property
    def untried_z(self) -> float:
        """Standard errors added to an untried prompt's predicted informative chance."""
        return _UNTRIED_Z

    def untried_keep(self, ids: I64) -> F64:
        """Keep probability of prompts with no rollouts of their own: 1 (untried='take', no
        features, or fewer than 16 first groups seen), else clip(q^ / q1, untried_floor, 1)
        with q^ the predicted chance that a first group is informative and q1 the observed
        share of informative first groups (both decayed alike)."""
        out: F64 = np.ones(ids.shape[0])
        groups, informative = self._first_moments
        if self._first is None or self._features is None or groups < _MIN_GROUPS:
            return out
        q1 = informative / groups
        if q1 <= 0.0:  # no first group was informative: nothing to tell prompts apart by
            return out
        x = self._features[ids]
        model = self._first
        # The prediction's upper bound (z = 2 standard errors, binomial noise at q1): a
        # prompt is skipped for a prediction significantly below average, not for the
        # regression's noise, which alone would pass over many prompts of a featureless pool.
        design = model.design(x)
        penalty = model.ridge * np.eye(model.gram.shape[0])
        spread = np.einsum("ij,ji->i", design, np.linalg.solve(model.gram + penalty, design.T))
        se = np.sqrt(q1 * (1.0 - q1) * np.maximum(spread, 0.0))
        upper = np.clip(model.predict(x) + self.untried_z * se, 0.0, 1.0)
        out = np.clip(upper / q1, self.config.untried_floor, 1.0)
        return out

    # ------------------------------------------------------------------ select
    def _select(self, n: int) -> I64:
        kept: list[float] = []
        bound = EpochWalk.epochs_bound(self.config.min_keep)
        ids, self._last_skipped = self._walk.take_where(n, self.rng, self._keep(kept), bound)
        self._skip_totals["skipped"] += self._last_skipped
        self._beta.advance(n)
        self._last_keep = kept[0] if kept else float("nan")
        return ids

    def _select_window(self, positions: int) -> I64:
        kept: list[float] = []
        ids, skipped = self._walk.take_window(positions, self.rng, self._keep(kept))
        if ids.size == 0:  # every prompt of the window passed over: walk on to one kept
            bound = EpochWalk.epochs_bound(self.config.min_keep)
            ids, more = self._walk.take_where(1, self.rng, self._keep(kept), bound)
            skipped += more
        self._count_window(ids.size + skipped, skipped, kept)
        return ids

    def _keeps(self, ids: I64) -> NDArray[np.bool_]:
        kept: list[float] = []
        mask = self._walk.walk_beside(ids, self.rng, self._keep(kept))
        self._count_window(ids.size, int(ids.size - mask.sum()), kept)
        return mask

    def _count_window(self, walked: int, skipped: int, kept: list[float]) -> None:
        """A window's bookkeeping: `walked` positions, `skipped` of them passed over."""
        self._last_skipped = skipped
        self._skip_totals["skipped"] += skipped
        # The clock counts walk positions: uniform's prompts, which a window passes at
        # uniform's pace (the forgetting is per pass of uniform's).
        self._beta.advance(walked)
        self._last_keep = kept[0] if kept else float("nan")

    def _keep(self, kept: list[float]) -> Callable[[I64], NDArray[np.bool_]]:
        """The keep rule of one select: draws, and records each chunk's mean keep chance."""

        def keep(ids: I64) -> NDArray[np.bool_]:
            p = self.keep_probability(ids)
            kept.append(float(p.mean()))
            out: NDArray[np.bool_] = self.rng.random(ids.shape[0]) < p
            return out

        return keep

    # ------------------------------------------------------------------ observe
    def _observe(self, batch: GroupBatch) -> None:
        ids = batch.task_ids
        sums, counts = batch.sums, batch.counts.astype(np.float64)
        first = ~self._beta.seen(ids)  # before this group is counted
        self._observe_first(batch, first)
        self._beta.observe(ids, sums, counts)
        # The full group's size: under screening a step's groups have k or n rollouts (a
        # median would flip between them, or land on neither); q asks about a group of n.
        self._group = int(min(batch.counts.max(), _MAX_GROUP))
        if self._ridge is not None and self._features is not None:
            # the pass rate itself: the scale of m, which q0 is computed from
            self._ridge.observe(self._features[ids], sums / counts)

    def _observe_first(self, batch: GroupBatch, first: NDArray[np.bool_]) -> None:
        """untried='predict': fit the first groups' informativeness on their features."""
        if self._first is None or self._features is None:
            return
        mixed = batch.mixed[first].astype(np.float64)
        decay = self.config.regression_forgetting
        self._first_moments = decay * self._first_moments + np.array([first.sum(), mixed.sum()])
        if first.any():
            self._first.observe(self._features[batch.task_ids[first]], mixed)

    def _refresh_features(self, features: F64) -> bool:
        if self._ridge is None:
            return False
        self._features = features  # same dimension (the base class checked it)
        return True

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "walk": self._walk.state_dict(),
            **self._beta.state_dict(),
            "group": self._group,
            "totals": dict(self._skip_totals),
            "last_skipped": self._last_skipped,
            "last_keep": self._last_keep,
        }
        if self._ridge is not None:
            state["ridge"] = self._ridge.state_dict()
        if self._first is not None:
            state["first"] = self._first.state_dict()
            state["first_moments"] = self._first_moments
        return state

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n, who = self.num_tasks, self.name
        walk = EpochWalk(n)
        walk.load_state_dict(state["walk"], who)
        big = 1e300
        beta = self._beta.loaded(state, who)
        group = read_int(state, "group", who, hi=_MAX_GROUP)
        totals = read_counts(state, "totals", who, tuple(self._skip_totals), hi=2**62)
        last_skipped = read_int(state, "last_skipped", who, hi=2**62)
        last_keep = read_float(state, "last_keep", who, lo=0.0, hi=1.0)
        ridge = None
        if self._ridge is not None:
            ridge = self._ridge.loaded(state["ridge"], who)
        elif "ridge" in state:
            raise ValueError(f"{who} state: holds a regression this selector does not use")
        first, first_moments = None, np.zeros(2)
        if self._first is not None:
            first = self._first.loaded(state["first"], who)
            first_moments = read_array(
                state, "first_moments", who, np.float64, shape=(2,), lo=0, hi=big, finite=True
            )
            if first_moments[1] > first_moments[0]:
                raise ValueError(
                    f"{who} state: first_moments counts more informative groups than groups"
                )
        elif "first" in state or "first_moments" in state:
            raise ValueError(
                f"{who} state: holds an untried-prompt model this selector does not use "
                "(saved with untried='predict'?)"
            )
        self._walk, self._beta = walk, beta
        self._group, self._skip_totals, self._last_skipped = group, totals, last_skipped
        self._last_keep = last_keep
        if ridge is not None:
            self._ridge = ridge
        if first is not None:
            self._first, self._first_moments = first, first_moments

    def _metrics(self) -> dict[str, float]:
        m, c = self.population_prior()
        return {
            "epoch": float(EpochWalk.run_epoch(self._beta.handed_out, self.num_tasks)),
            "walk_passes": float(self._walk.epoch),
            "skipped": float(self._last_skipped),
            "skipped_total": float(self._skip_totals["skipped"]),
            "mean_keep_probability": self._last_keep,
            "group_size": float(self.group_size),
            "prior_mean": m,
            "prior_strength": c,
            "untried_predicted": float(self._first is not None),
        }
