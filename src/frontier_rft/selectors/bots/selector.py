"""BOTS: Bayesian online task selection (arXiv:2510.26374), and its MoPPS and DOTS presets.

Every task carries a conjugate posterior over its success rate, Beta(alpha, beta), updated
every trainer step for every task by the paper's Eq. 1:

    alpha <- (1 - lam) * alpha + lam * alpha0 + (1 - rho) * s + rho * s~
    beta  <- (1 - lam) * beta  + lam * beta0  + (1 - rho) * f + rho * f~

s, f are the step's explicit success/failure counts (0 for tasks not rolled out); for
rolled-out tasks s~ = s, f~ = f, for the others s~ = p~ * n, f~ = (1 - p~) * n with p~ from
an implicit-evidence plug-in (bots.plugins). Selection draws p^ ~ Beta(alpha, beta) per task
(Thompson sampling) or takes the posterior mean, and returns the B tasks with the smallest
|p^ - p*| (coverage="epoch": the B best of what this epoch has not handed out yet, so each
task is selected once per epoch). With reward_model="gaussian" the same update runs on the
natural parameters of a Gaussian with known variance (appendix E.4): alpha holds the
pseudo reward sum, beta the pseudo count. docs/selectors/bots.md has the equations, the
late-feedback rule and every deviation from the paper.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.config import SelectorConfig
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import check_keys, read_float, read_int, read_keys
from frontier_rft.features.derive import announce, task_features
from frontier_rft.selectors.bots.config import BOTSConfig, DOTSConfig, MoPPSConfig
from frontier_rft.selectors.bots.lazy import LazyPosterior
from frontier_rft.selectors.bots.plugins import (
    ExternalStep,
    StepLog,
    capability,
    interpolate,
    kernel_average,
    smallest_k,
)
from frontier_rft.selectors.bots.regression import RegressionPlugin
from frontier_rft.structures.epoch_walk import EpochWalk

__all__ = ["BOTSSelector", "DOTSSelector", "MoPPSSelector"]

NEAR_TARGET_BAND = 0.25
"""A group counts as near the target when |mean reward - target| <= this (metric only)."""
_TINY = 1e-12  # floor for posterior parameters after a late retraction (rounding guard)
_METRIC_CHUNK = 1 << 20  # tasks per chunk when candidate-mode metrics read the whole pool
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


_WITHOUT_SOURCES = (
    ("plugin", "regression", "implicit evidence from the tasks' own past pass rates"),
    ("plugin", "none", "explicit evidence only"),
)


class BOTSSelector(Selector):
    """Bayesian online task selection: per-task posteriors fusing explicit and implicit evidence.

    Late feedback: forgetting is a clock driven by trainer steps, not by calls. A step newer
    than every step seen advances the clock, applying the `(1 - lam)` discount once per
    elapsed step; evidence of an older step t is added with weight `(1 - lam)^(T - t)` (T the
    clock), which by linearity of the update is what it would have weighed on time. A late
    piece of an already observed step replaces, for its tasks, the implicit pseudo counts
    they received at that step by their explicit counts (recomputed from the step's log).
    """

    name = "bots"
    needs = Needs(
        "per-task Beta posteriors + implicit evidence for unselected tasks",
        "implicit evidence from a regression on prompt-text features (evidence/plugin/regression)",
        "reference_pass_rates=(N, 2) weak/strong models (the paper's interpolation); features=",
        ("evidence/plugin/regression", "evidence/features/text"),
    )
    cost = Cost("thompson", "O(N)", "Beta draw for every task + forgetting update of all")
    color = "#1f77b4"  # blue: the BOTS family is blue (bots mid, mopps light, dots navy)
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = (
        {"plugin": "regression"},
        {"candidates": 16},
        {"coverage": "epoch"},
    )
    config_class: ClassVar[type[SelectorConfig]] = BOTSConfig

    def __init__(self, pool: TaskPool, config: BOTSConfig | None = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        assert isinstance(self.config, BOTSConfig)
        self.cfg: BOTSConfig = self.config
        cfg = self.cfg
        n = pool.num_tasks
        self._features: F64 | None = None
        self.plugin = self._resolve_plugin()
        self.evidence["plugin"] = self.plugin
        self._regression: RegressionPlugin | None = None
        if self.plugin == "regression":
            features = self._features if self._features is not None else np.zeros((n, 0))
            self._regression = RegressionPlugin(
                features,
                cfg.regression_ridge,
                cfg.regression_forgetting,
                gaussian=cfg.reward_model == "gaussian",
                anchors=cfg.regression_anchors,
            )
        self.gaussian = cfg.reward_model == "gaussian"
        if self.gaussian:
            nu0 = float(cfg.gaussian_prior_count)
            self._prior = (float(cfg.gaussian_prior_mean) * nu0, nu0)
        else:
            self._prior = (float(cfg.alpha0), float(cfg.beta0))
        n = pool.num_tasks
        # alpha/beta (gaussian: pseudo reward sum / pseudo count). Whole-pool mode keeps a
        # scratch buffer that every full-pool pass writes into, so a step allocates no other
        # N-sized array; candidate mode keeps them lazily (bots.lazy) and touches only the
        # drawn candidates and the fed-back tasks.
        self.lazy: LazyPosterior | None = None
        if cfg.candidates:
            ref = pool.reference_pass_rates if self.plugin == "interpolation" else None
            self.lazy = LazyPosterior(n, self._prior, float(cfg.lam), self.gaussian, ref)
            self._a, self._b, self._buf = self.lazy.alpha, self.lazy.beta, _EMPTY_F
        else:
            self._a = np.full(n, self._prior[0])
            self._b = np.full(n, self._prior[1])
            self._buf = np.empty(n)
        # coverage="epoch": this epoch's walk; the posterior only orders what it has left.
        self._walk = EpochWalk(n) if cfg.coverage == "epoch" else None
        self._clock = -1
        self._mu_tilde = float("nan")
        self._rho = float(cfg.rho) if self.plugin != "none" else 0.0
        self._log: dict[int, StepLog] = {}
        # Plug-in results a sharded service's driver computed from the whole step (bots.shard).
        self._external: dict[int, ExternalStep] = {}
        self._stats = {
            "mu": float("nan"),
            "implicit_error": float("nan"),
            "posterior_error": float("nan"),
            "near_target_share": float("nan"),
            "late_pieces": 0.0,
        }

    @classmethod
    def requirement(cls, config: SelectorConfig) -> Requires | None:
        """Implicit evidence needs a source unless the config asks for none (or defers it)."""
        assert isinstance(config, BOTSConfig)
        plugin = config.plugin
        if plugin == "interpolation":
            return Requires(
                ("reference_pass_rates",),
                "the interpolation plug-in reads weak/strong reference pass rates",
                _WITHOUT_SOURCES,
            )
        if plugin == "kernel":
            return Requires(
                ("features", "prompts"),
                "the kernel plug-in compares task embeddings",
                _WITHOUT_SOURCES,
            )
        if plugin == "auto" and config.rho > 0 and not config.candidates:
            return Requires(
                ("reference_pass_rates", "features", "prompts"),
                "implicit evidence for the tasks not selected comes from reference pass rates, "
                "else from a regression on task features",
                _WITHOUT_SOURCES,
            )
        return None  # 'none', 'regression' (its anchors alone suffice), rho = 0, candidates

    # ------------------------------------------------------------------ config
    @classmethod
    def plugin_for(cls, config: BOTSConfig, given: frozenset[str]) -> str:
        """The plug-in `config` runs over a pool holding the metadata fields `given`.

        'auto': none with rho = 0 (implicit evidence has no weight: no O(N) pass), the
        interpolation when reference pass rates are given, else the regression plug-in on
        the given features or on features of the prompt text; an explicit 'regression'
        runs on the tasks' own anchors alone when the pool has neither features nor prompts.
        Candidate mode defers only the interpolation: the kernel or regression plug-in it
        would run is 'none' (`_candidate_fallback`: announced for 'auto', refused when asked
        for by name).
        """
        choice = config.plugin
        if choice == "auto":
            if config.rho == 0:
                return "none"
            if "reference_pass_rates" in given:
                return "interpolation"
            choice = "regression"
        if config.candidates and choice in ("kernel", "regression"):
            return "none"
        return choice

    @classmethod
    def reads_features(cls, config: SelectorConfig, given: frozenset[str]) -> bool:
        """The kernel plug-in, and the regression one on a pool with features or prompts."""
        assert isinstance(config, BOTSConfig)
        plugin = cls.plugin_for(config, given)
        return plugin == "kernel" or (
            plugin == "regression" and bool({"features", "prompts"} & given)
        )

    @classmethod
    def reward_bounds_for(
        cls, config: SelectorConfig, given: frozenset[str]
    ) -> tuple[float, float] | None:
        """Bernoulli rewards lie in [0, 1]; reward_model='gaussian' reads any scale."""
        assert isinstance(config, BOTSConfig)
        return None if config.reward_model == "gaussian" else (0.0, 1.0)

    def _resolve_plugin(self) -> str:
        """The plug-in in use (`plugin_for`); derives features from prompts when a feature
        plug-in needs them. Anything but the interpolation is announced with an
        `EvidenceWarning` and reported as `evidence/plugin/<name>`."""
        cfg, pool = self.cfg, self.pool
        given = pool.given()
        choice = self.plugin_for(cfg, given)
        deferred = cfg.plugin in ("kernel", "regression") or (
            cfg.plugin == "auto" and cfg.rho != 0 and "reference_pass_rates" not in given
        )
        if cfg.candidates and deferred:
            return self._candidate_fallback()
        # Selector.__init__ refused a pool without what `choice` reads (requirement()).
        if self.reads_features(cfg, given):
            self._features, self.evidence["features"] = task_features(pool, self.name)
        if cfg.plugin == "auto" and choice == "regression":
            source = "the given" if self.evidence.get("features") == "given" else "prompt-text"
            announce(
                f"{self.name}: no reference pass rates in the TaskPool, so implicit evidence "
                f"comes from the regression plug-in on {source} features; pass "
                "reference_pass_rates=(weak, strong) for the paper's interpolation"
            )
        return choice

    def _candidate_fallback(self) -> str:
        """Candidate mode cannot defer the kernel or regression plug-in: their estimate for a
        task depends on every step's batch (or fit), so catching a task up would cost the
        O(N) per step it saves. 'auto' then runs without implicit evidence, announced."""
        if self.cfg.plugin in ("kernel", "regression"):
            raise ValueError(
                f"{self.name}: candidates > 0 cannot use the {self.cfg.plugin} plug-in (its "
                "implicit evidence cannot be applied lazily); give the pool "
                "reference_pass_rates for the interpolation plug-in, use plugin='none', or "
                "candidates=0"
            )
        announce(
            f"{self.name}: candidate mode without reference pass rates runs on explicit "
            "evidence only (the regression and kernel plug-ins cannot be applied lazily); "
            "pass reference_pass_rates=(weak, strong), or candidates=0 for the whole pool"
        )
        return "none"

    # ------------------------------------------------------------------ selection
    def _select(self, n: int) -> I64:
        if self._walk is not None:  # coverage="epoch" (whole-pool mode: posterior is current)
            return self._walk.take_best(n, self.rng, self._closeness)
        if self.lazy is None:
            return smallest_k(self._score(self._a, self._b, self._buf), n, self.rng)
        cand = self._draw_candidates(n)
        self.lazy.sync(cand)
        a, b = self._a[cand], self._b[cand]
        return cand[smallest_k(self._score(a, b, np.empty_like(a)), n, self.rng)]

    def _closeness(self, ids: I64) -> F64:
        """-|p^ - target| of `ids` (higher = closer): one draw per id, for these ids only."""
        a, b = self._a[ids], self._b[ids]
        score = self._score(a, b, np.empty_like(a))
        return np.negative(score, out=score)

    def _draw_candidates(self, n: int) -> I64:
        """`candidates` tasks (at least n) uniformly without replacement, or the whole pool."""
        c, total = max(self.cfg.candidates, n), self.num_tasks
        if c >= total:
            return np.arange(total, dtype=np.int64)
        return self.rng.choice(total, size=c, replace=False).astype(np.int64)

    def _score(self, a: F64, b: F64, buf: F64) -> F64:
        """|p^ - target| per task of (a, b): a Thompson draw or the posterior mean."""
        cfg = self.cfg
        if self.gaussian:
            if cfg.sample:
                draw: F64 = self.rng.standard_normal(size=int(a.shape[0]))
                np.sqrt(b, out=buf)
                draw /= buf
                draw *= cfg.gaussian_sigma
                draw += np.divide(a, b, out=buf)
            else:
                draw = np.divide(a, b, out=buf)
        elif cfg.sample:
            draw = self._beta_draw(a, b, buf)
        else:
            np.add(a, b, out=buf)
            draw = np.divide(a, buf, out=buf)
        draw -= cfg.target
        return np.abs(draw, out=draw)

    def _beta_draw(self, a: F64, b: F64, buf: F64) -> F64:
        """One Beta(alpha_k, beta_k) draw per task, as the ratio G_a / (G_a + G_b) of gammas.

        Exactly Beta-distributed, and what numpy's own beta does unless both parameters are
        <= 1, where it switches to Johnk's rejection sampler: several times slower, and hit
        by every task still at a Beta(1, 1) prior (most of a large pool under MoPPS). Since
        alpha >= alpha0 and beta >= beta0 always (Eq. 1 mixes towards the prior and adds
        non-negative evidence), the gammas cannot both underflow when the prior is >= 1/2;
        smaller priors use numpy's sampler.
        """
        if min(self._prior) < 0.5:
            return self.rng.beta(a, b)
        ga = self.rng.standard_gamma(a, out=buf)
        total = self.rng.standard_gamma(b)
        total += ga
        return np.divide(ga, total, out=ga)

    def posterior_mean(self, ids: I64 | None = None) -> F64:
        """Posterior mean success rate (gaussian: mean reward) of all tasks or of `ids`."""
        a, b = self._posterior(ids)
        mean: F64 = a / b if self.gaussian else a / (a + b)
        return mean

    def effective_sample_size(self) -> F64:
        """alpha + beta per task (gaussian: the pseudo count nu), Proposition 2's n_t."""
        a, b = self._posterior(None)
        ess: F64 = b if self.gaussian else a + b
        return ess

    def _posterior(self, ids: I64 | None) -> tuple[F64, F64]:
        """(alpha, beta) of all tasks or of `ids` as of now (candidate mode: caught up)."""
        if self.lazy is not None:
            return self.lazy.values(slice(None) if ids is None else ids)
        if ids is None:
            return self._a.copy(), self._b.copy()
        return self._a[ids], self._b[ids]

    def _sync(self, ids: I64) -> None:
        """Candidate mode: apply the forgetting and implicit evidence `ids` missed so far."""
        if self.lazy is not None:
            self.lazy.sync(ids)

    # ------------------------------------------------------------------ update
    def _observe(self, batch: GroupBatch) -> None:
        cfg, t = self.cfg, batch.step
        ids = batch.task_ids
        counts = batch.counts.astype(np.float64)
        sums = batch.sums
        rates = sums / counts
        x = sums  # successes (gaussian: reward sum); fractional rewards count as sum r
        y = counts if self.gaussian else counts - sums
        self._stats["posterior_error"] = float(np.abs(self.posterior_mean(ids) - rates).mean())
        self._stats["near_target_share"] = float(
            (np.abs(rates - cfg.target) <= NEAR_TARGET_BAND).mean()
        )
        self._advance(t, ids, rates, counts, x, y)

    def fold_external_step(self, t: int) -> None:
        """Fold step t with no rollouts of this selector's tasks: forgetting and implicit
        evidence only, as the rest of the pool's shards fold it (sharded service)."""
        self._advance(t, _EMPTY_I, _EMPTY_F, _EMPTY_F, _EMPTY_F, _EMPTY_F)

    def _advance(self, t: int, ids: I64, rates: F64, counts: F64, x: F64, y: F64) -> None:
        """Fold step t's groups by where t lies against the clock (see the class docstring)."""
        cfg = self.cfg
        if self._clock < 0:
            self._clock = t  # the state is still the prior, which forgetting leaves unchanged
        if t > self._clock:
            self._fold_step(t, ids, rates, counts, x, y, t - self._clock, 1.0)
            self._clock = t
        else:
            weight = (1.0 - cfg.lam) ** (self._clock - t)
            self._stats["late_pieces"] += float(
                ids.size > 0 and (t < self._clock or t in self._log)
            )
            if weight == 0.0:
                pass  # lam = 1: evidence of a past step has no weight left
            elif t in self._log:
                self._fold_late_piece(self._log[t], ids, x, y, counts, weight)
            elif t > self._clock - cfg.late_window:
                self._fold_step(t, ids, rates, counts, x, y, 0, weight)
            else:  # older than the log: unknown whether seen, so explicit evidence only
                self._sync(ids)
                self._a[ids] += weight * x
                self._b[ids] += weight * y
        # A log is dropped once its step leaves the window or its weight is 0 (lam = 1).
        horizon = self._clock - (cfg.late_window if cfg.lam < 1.0 else 1)
        for s in [s for s in self._log if s <= horizon]:
            del self._log[s]
        if self._regression is not None:
            oldest = min((log.anchor_seq for log in self._log.values()), default=None)
            self._regression.forget_changes_before(
                self._regression.seq if oldest is None else oldest
            )

    def _fold_step(
        self, t: int, ids: I64, rates: F64, counts: F64, x: F64, y: F64, steps: int, weight: float
    ) -> None:
        """Eq. 1 for every task: forget over `steps` steps, then add `weight` x the evidence."""
        cfg, a, b = self.cfg, self._a, self._b
        a0, b0 = self._prior
        d = (1.0 - cfg.lam) ** steps
        ext = self._external.get(t)
        n_imp = ext.n_implicit if ext else float(cfg.implicit_rollouts or counts.mean())
        mu, p_sel = self._plugin_on_batch(t, ids, rates, counts)
        implicit = p_sel is not None and self._rho > 0
        if self.lazy is not None:
            dx, dy = self._fold_step_lazy(ids, steps, mu, p_sel, n_imp, weight, x, y, implicit)
        elif implicit:
            assert p_sel is not None
            k = self._rho * n_imp * weight
            q = self._plugin_full(mu, ids, rates, k)  # q = k * p~ for every task, in self._buf
            ca, cb = (1.0 - d) * a0, (1.0 - d) * b0
            # alpha += ca + q; beta += cb + k - q (Bernoulli: f~ = (1 - p~) n), cb + k (gaussian)
            if d == 0.0:  # lam = 1: nothing of the old posterior survives; assign directly
                np.add(q, ca, out=a)
                if self.gaussian:
                    b.fill(cb + k)
                else:
                    np.subtract(cb + k, q, out=b)
            else:
                q += ca
                if d != 1.0:
                    a *= d
                    b *= d
                a += q
                if self.gaussian:
                    b += cb + k
                else:
                    b -= q
                    b += cb + k + ca
            # Rolled-out tasks: s~ = s, so their evidence is explicit only; undo the implicit.
            dx = weight * x - k * p_sel
            dy = weight * y - (k if self.gaussian else k * (1.0 - p_sel))
        else:
            if d == 0.0:
                a.fill(a0)
                b.fill(b0)
            elif d != 1.0:
                a *= d
                a += (1.0 - d) * a0
                b *= d
                b += (1.0 - d) * b0
            dx, dy = weight * x, weight * y
        a[ids] += dx
        b[ids] += dy
        # Keep only what a late piece needs: the rolled-out ids when implicit evidence was
        # applied (to retract it), and for the kernel the batch that produced p~.
        kept = ids.copy() if implicit else _EMPTY_I
        kernel = implicit and self.plugin == "kernel"
        plugin = self._regression
        self._log[t] = StepLog(
            implicit=implicit,
            mu=mu,
            rho=self._rho if implicit else 0.0,
            n_implicit=n_imp,
            ref_ids=kept if kernel else _EMPTY_I,
            ref_rates=rates.copy() if kernel else _EMPTY_F,
            explicit_ids=kept,
            weights=plugin.model.weights.copy() if implicit and plugin else _EMPTY_F,
            anchor_seq=plugin.seq if plugin is not None else 0,
        )

    def _fold_step_lazy(
        self,
        ids: I64,
        steps: int,
        mu: float,
        p_sel: F64 | None,
        n_imp: float,
        weight: float,
        x: F64,
        y: F64,
        implicit: bool,
    ) -> tuple[F64, F64]:
        """Candidate mode's Eq. 1: record the step as one event for every task (forgetting
        over `steps`, implicit weight k), catch the batch up; returns its explicit deltas."""
        assert self.lazy is not None
        k = self._rho * n_imp * weight if implicit else 0.0
        clock = self._clock + steps
        self.lazy.advance(clock, k, mu, clip=self.plugin == "interpolation")
        self.lazy.sync(ids)
        if not implicit:
            return weight * x, weight * y
        assert p_sel is not None
        dy = weight * y - (k if self.gaussian else k * (1.0 - p_sel))
        return weight * x - k * p_sel, dy

    def _fold_late_piece(
        self, log: StepLog, ids: I64, x: F64, y: F64, counts: F64, weight: float
    ) -> None:
        """Explicit evidence of an already observed step; retract the implicit it replaces."""
        self._sync(ids)
        dx, dy = weight * x, weight * y
        new = ~np.isin(ids, log.explicit_ids)
        if log.implicit and new.any():
            at = ids[new]
            if self.plugin == "interpolation":
                ref = self.pool.reference_pass_rates
                assert ref is not None
                p_old = interpolate(ref, log.mu, clip=not self.gaussian, at=at)
            elif self.plugin == "regression":
                assert self._regression is not None
                p_old = self._regression.estimate_as_of(log.anchor_seq, log.weights, at)
            else:
                p_old = self._kernel(log.ref_ids, log.ref_rates, at=at)
            k = log.rho * log.n_implicit * weight
            dx[new] -= k * p_old
            dy[new] -= k if self.gaussian else k * (1.0 - p_old)
        self._a[ids] += dx
        self._b[ids] += dy
        if not self.gaussian:
            self._a[ids] = np.maximum(self._a[ids], _TINY)
        self._b[ids] = np.maximum(self._b[ids], _TINY)
        log.explicit_ids = np.union1d(log.explicit_ids, ids)
        if self._regression is not None:
            self._regression.observe(ids, x, counts)  # learn from it for the steps to come

    # ------------------------------------------------------------------ plug-ins
    def _plugin_on_batch(
        self, t: int, ids: I64, rates: F64, counts: F64
    ) -> tuple[float, F64 | None]:
        """Update mu~ (interpolation) and return (mu~, p~ on the batch) or (nan, None)."""
        cfg = self.cfg
        ext = self._external.get(t)
        if ext is not None:  # the driver saw the whole step; this shard holds part of it
            self._mu_tilde, self._rho = ext.mu_tilde, ext.rho
            self._stats["mu"] = ext.mu
            if not math.isnan(ext.error):
                self._stats["implicit_error"] = ext.error
            if not ext.implicit:
                return ext.mu_tilde, None
            ref = self.pool.reference_pass_rates
            assert ref is not None
            return ext.mu_tilde, interpolate(ref, ext.mu_tilde, clip=not self.gaussian, at=ids)
        if self.plugin == "none":
            return float("nan"), None
        if self.plugin == "kernel":
            p_sel = self._kernel(ids, rates, at=ids)
            mu = float("nan")
        elif self.plugin == "regression":
            assert self._regression is not None
            before, p_sel = self._regression.observe(ids, rates * counts, counts)
            self._stats["implicit_error"] = float(np.abs(before - rates).mean())
            return float("nan"), p_sel  # error measured before this batch was learned
        else:
            ref = self.pool.reference_pass_rates
            assert ref is not None
            mu_t = capability(ref, ids, rates, cfg.interpolation_eps)
            self._stats["mu"] = float("nan") if mu_t is None else mu_t
            if mu_t is not None:
                g = cfg.momentum
                prev = self._mu_tilde
                self._mu_tilde = mu_t if math.isnan(prev) else g * prev + (1.0 - g) * mu_t
            mu = self._mu_tilde
            if math.isnan(mu):
                return mu, None  # no usable batch yet: no implicit evidence this step
            p_sel = interpolate(ref, mu, clip=not self.gaussian, at=ids)
        err = float(np.abs(p_sel - rates).mean())
        self._stats["implicit_error"] = err
        if cfg.adaptive_rho and err >= cfg.adaptive_rho_threshold:
            self._rho *= 0.5
        return mu, p_sel

    def _plugin_full(self, mu: float, ids: I64, rates: F64, scale: float) -> F64:
        """`scale * p~` for every task, written into the scratch buffer."""
        if self.plugin == "kernel":
            q = self._kernel(ids, rates, out=self._buf)
            q *= scale
            return q
        if self.plugin == "regression":
            assert self._regression is not None
            q = self._regression.estimate(out=self._buf)
            q *= scale
            return q
        ref = self.pool.reference_pass_rates
        assert ref is not None
        return interpolate(ref, mu, clip=not self.gaussian, scale=scale, out=self._buf)

    def _kernel(
        self, ref_ids: I64, ref_rates: F64, out: F64 | None = None, at: I64 | None = None
    ) -> F64:
        features = self._features
        assert features is not None
        cfg = self.cfg
        return kernel_average(
            features, ref_ids, ref_rates, cfg.kernel_tau, cfg.kernel_chunk_rows, out=out, at=at
        )

    def _refresh_features(self, features: F64) -> bool:
        if self._features is None:
            return False  # interpolation, none, or regression on anchors alone
        self._features = features  # of the same dimension (the base class checked it)
        if self._regression is not None:
            self._regression.features = features
        return True

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "alpha": self._a,
            "beta": self._b,
            "clock": self._clock,
            "mu_tilde": self._mu_tilde,
            "rho": self._rho,
            "stats": dict(self._stats),
            "log": [log.to_state(s) for s, log in sorted(self._log.items())],
            "regression": {} if self._regression is None else self._regression.state_dict(),
            **({"lazy": self.lazy.state_dict()} if self.lazy is not None else {}),
            **({"walk": self._walk.state_dict()} if self._walk is not None else {}),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n = self.num_tasks
        a = np.array(state["alpha"], dtype=np.float64)
        b = np.array(state["beta"], dtype=np.float64)
        if a.shape != (n,) or b.shape != (n,):
            raise ValueError(f"{self.name} state: posterior arrays do not match the pool size {n}")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(b > 0)):
            raise ValueError(f"{self.name} state: posterior parameters must be finite and > 0")
        if not self.gaussian and not np.all(a > 0):
            raise ValueError(f"{self.name} state: Beta parameters must be > 0")
        who = self.name
        rho = read_float(state, "rho", who, 0.0, 1.0, nan=False)
        if not isinstance(state["log"], list):
            raise ValueError(f"{who} state: log must be a list of step records")
        logs = dict(StepLog.from_state(d, n, who) for d in state["log"])
        if self.plugin == "interpolation" and any(
            log.implicit and math.isnan(log.mu) for log in logs.values()
        ):
            raise ValueError(f"{who} state: a log with implicit evidence lacks its mu")
        stats = read_keys(state, "stats", who, tuple(self._stats))
        stats = {k: read_float(stats, k, who) for k in stats}
        clock = read_int(state, "clock", who, lo=-1)
        mu_tilde = read_float(state, "mu_tilde", who, -MAX_ABS_VALUE, MAX_ABS_VALUE)
        if self._regression is not None:
            self._regression.load_state_dict(state["regression"], who)
        else:  # saved empty: nothing in it may be ignored
            check_keys(state["regression"], f"{who} state: regression", ())
        if (self.lazy is None) != ("lazy" not in state):
            raise ValueError(f"{who} state: candidate mode does not match the config")
        walk = EpochWalk.optional_from_state(state, n, who, expected=self._walk is not None)
        if self.lazy is not None:
            self.lazy.load_state_dict(state["lazy"], a, b)
        self._a, self._b, self._rho, self._log, self._walk = a, b, rho, logs, walk
        self._stats, self._clock, self._mu_tilde = stats, clock, mu_tilde

    def _metrics(self) -> dict[str, float]:
        mean, ess = self._pool_averages()
        return {
            "posterior_mean": mean,
            "effective_sample_size": ess,
            "mu_tilde": self._mu_tilde,
            "rho": self._rho,
            "clock": float(self._clock),
            **self._stats,
            **({"epoch": float(self._walk.epoch)} if self._walk is not None else {}),
        }

    def _pool_averages(self) -> tuple[float, float]:
        """Mean posterior mean and mean effective sample size over the whole pool."""
        if self.lazy is None:
            return float(self.posterior_mean().mean()), float(self.effective_sample_size().mean())
        n, total_mean, total_ess = self.num_tasks, 0.0, 0.0
        for lo in range(0, n, _METRIC_CHUNK):  # caught-up copies, a chunk at a time
            a, b = self.lazy.values(slice(lo, min(lo + _METRIC_CHUNK, n)))
            total_mean += float((a / b if self.gaussian else a / (a + b)).sum())
            total_ess += float((b if self.gaussian else a + b).sum())
        return total_mean / n, total_ess / n


class MoPPSSelector(BOTSSelector):
    """BOTS-MoPPS: Thompson sampling on explicit evidence only (lam = 0, rho = 0)."""

    name = "mopps"
    needs = Needs.rewards_only(
        "per-task Beta posteriors from its own rollouts (rho = 0)", ("evidence/plugin/none",)
    )
    cost = Cost("thompson", "O(N)", "BOTS preset with Thompson sampling")
    color = "#17becf"  # cyan
    linestyle = "-."  # next to bots's blue, and can trace the same curve
    test_configs = ()  # BOTS's extra configs are BOTS's
    config_class = MoPPSConfig


class DOTSSelector(BOTSSelector):
    """BOTS-DOTS proxy (lam = 1, rho = 1, no sampling): selection on implicit evidence alone."""

    name = "dots"
    # BOTS's plug-ins, so BOTS's evidence keys
    needs = replace(
        BOTSSelector.needs,
        uses="implicit evidence only (lam = rho = 1)",
        from_prompts="implicit evidence from a regression on prompt-text features",
        richer="reference_pass_rates=(N, 2) weak/strong models (the paper's DOTS setting); "
        "features=",
    )
    # Greedy on the posterior mean: its floor is a distance pass + argpartition (against
    # contract + a read pass, from the floors table, it is ~9x at N = 1e6).
    cost = Cost("greedy", "O(N)", "BOTS preset, greedy top-B on the posterior mean")
    color = "#393b79"  # navy
    linestyle = "-."  # next to bots's blue, and can trace the same curve
    test_configs = ({"coverage": "epoch"},)  # BOTS's other extra configs are BOTS's
    config_class = DOTSConfig
