"""Why prompts-only BOTS trails BOTS with references: where its implicit evidence falls short.

A diagnosis, not a tuning run: nothing here is a setting a user can pick. BOTS at the
paper's defaults (lam = rho = 0.1, Thompson sampling), 5 paired seeds, on `hard` and
`multidomain`, with its implicit evidence p~ taken from:

- `prompts`: what users get from prompt text alone (regression plug-in on text features);
- `references`: the paper's interpolation between weak/strong reference pass rates;
- `oracle unseen` / `oracle seen` / `oracle all`: the prompts-only plug-in, but p~ replaced
  by the simulator's true pass rate for tasks never rolled out / already rolled out / all
  (what a perfect plug-in would give; impossible in practice);
- `first observations`: the regression fitted only on each task's first rollout group, an
  unbiased sample of the never-rolled-out tasks it predicts (the selected batches lean to
  the frontier, so the default fit over-estimates unseen tasks' rates);
- `level unseen`: p~ of tasks never rolled out = E[p | domain, level] under the current
  policy (averaged over the task noise). The simulator writes a prompt from its task's
  domain and level alone (simulation/prompts.py), so no predictor from prompt text can know
  more about a never-tried task: this row bounds every text plug-in, however good;
- `fresh seen`: p~ of tasks already rolled out = the smoothed rate of a fresh group of 16
  rollouts under the current policy, redrawn every step: more than any estimator has (its
  observations are older and the policy has moved since).

`benchmarks/bots_prompts_gap.py` runs it and writes `bots_prompts_gap.{json,md}`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.bench.metrics import summarize, ttb
from frontier_rft.bench.scripts import ttb_cell
from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.feedback import Feedback, GroupBatch
from frontier_rft.core.selector import Selector
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.selectors import make_selector
from frontier_rft.selectors.bots import BOTSSelector
from frontier_rft.selectors.bots.regression import RegressionPlugin
from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.runner import given_pool
from frontier_rft.simulation.scenario import SCENARIOS

SCENARIO_NAMES = ("hard", "multidomain", "easy")
VARIANTS = (
    "prompts",
    "references",
    "oracle unseen",
    "oracle seen",
    "oracle all",
    "first observations",
    "level unseen",
    "fresh seen",
)
SEEDS, STEPS, BATCH, ROLLOUTS = range(5), 200, 32, 16


class _FirstObservations:
    """Stands in for the plug-in's OnlineRidge: fits only rows the plug-in marks as new."""

    def __init__(self, plugin: FirstObservationPlugin):
        self.plugin, self.inner = plugin, plugin.model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def observe(self, x: F64, y: F64) -> F64:
        new = self.plugin.new_rows
        return self.inner.observe(x[new], y[new])


def _settings(base: RegressionPlugin) -> dict[str, Any]:
    """The arguments `base` (the plug-in the selector built) was made with: a stand-in built
    from them starts where `base` did."""
    return {
        "features": base.features,
        "ridge": base.model.ridge,
        "forgetting": base.model.forgetting,
        "gaussian": base.gaussian,
        "anchors": base.use_anchors,
    }


class FirstObservationPlugin(RegressionPlugin):
    """The regression plug-in fitted on each task's first rollout group only."""

    def __init__(self, base: RegressionPlugin):
        super().__init__(**_settings(base))
        self.seen = np.zeros(base.features.shape[0], dtype=bool)
        self.new_rows = np.zeros(0, dtype=bool)
        self.model = _FirstObservations(self)  # type: ignore[assignment]

    def observe(self, ids: I64, sums: F64, counts: F64) -> tuple[F64, F64]:
        self.new_rows = ~self.seen[ids]
        self.seen[ids] = True
        return super().observe(ids, sums, counts)


class OraclePlugin(RegressionPlugin):
    """The regression plug-in with its p~ replaced by `rates()` on the tasks `which` names:
    'oracle unseen' (those not yet marked in `seen`), 'oracle seen' (those marked) or
    'oracle all'. Every read of p~ goes through `estimate`, the plug-in's own included."""

    def __init__(
        self,
        base: RegressionPlugin,
        rates: Callable[[], F64],
        seen: NDArray[np.bool_],
        which: str,
    ):
        if which not in ("oracle unseen", "oracle seen", "oracle all"):
            raise ValueError(f"which must be oracle unseen, seen or all, got {which!r}")
        super().__init__(**_settings(base))
        self.rates, self.seen, self.which = rates, seen, which

    def estimate(self, at: I64 | None = None, out: F64 | None = None) -> F64:
        p = super().estimate(at=at)
        truth = self.rates() if at is None else self.rates()[at]
        mask = self.seen if at is None else self.seen[at]
        mask = {"oracle unseen": ~mask, "oracle seen": mask}.get(self.which, np.ones_like(mask))
        p[mask] = truth[mask]
        if out is not None:
            out[...] = p
            return out
        return p


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)  # standard normal quadrature
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def level_rates(learner: SimulatedLearner) -> F64:
    """E[p | domain, level] of every training task never trained (no memory), under the
    current skills: the task's own difficulty noise integrated out."""
    t, cfg = learner.train_tasks, learner.cfg
    offsets = np.asarray(cfg.domain_offsets, dtype=np.float64)
    margin = t.weights @ learner.theta - cfg.level_step * t.level - offsets[t.domain]
    z = cfg.slope * (margin[:, None] - cfg.task_noise * _NODES[None, :])
    rates: F64 = (0.5 * (1.0 + np.tanh(0.5 * z)) * _WEIGHTS).sum(axis=1)
    return rates


def _fresh_rates(learner: SimulatedLearner, seed: int) -> Callable[[], F64]:
    """Smoothed rates of a fresh group of ROLLOUTS per task, one draw per training step."""
    cache: dict[int, F64] = {}

    def rates() -> F64:
        step = learner.steps_trained
        if step not in cache:
            rng = np.random.default_rng([seed, step, 99])  # not the learner's rollout stream
            cache.clear()
            cache[step] = (rng.binomial(ROLLOUTS, learner.pass_rates()) + 0.5) / (ROLLOUTS + 1)
        return cache[step]

    return rates


def run(args: tuple[str, str, int]) -> list[float]:
    """Score curve of one variant (or 'uniform') on one seeded learner."""
    scenario, variant, seed = args
    learner = SimulatedLearner(SCENARIOS[scenario], seed=seed)
    given = ("prompts", "references") if variant == "references" else ("prompts",)
    name = "uniform" if variant == "uniform" else "bots"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector(name, given_pool(learner, given), seed=seed)
    seen = np.zeros(learner.pool.num_tasks, dtype=bool)
    if isinstance(sel, BOTSSelector) and sel._regression is not None:
        base = sel._regression
        if variant == "first observations":
            sel._regression = FirstObservationPlugin(base)
        elif variant.startswith("oracle"):
            sel._regression = OraclePlugin(base, learner.pass_rates, seen, variant)
        elif variant == "level unseen":
            level = functools.partial(level_rates, learner)
            sel._regression = OraclePlugin(base, level, seen, "oracle unseen")
        elif variant == "fresh seen":
            fresh = _fresh_rates(learner, seed)
            sel._regression = OraclePlugin(base, fresh, seen, "oracle seen")
    return score_curve(learner, sel, seen)


def score_curve(
    learner: SimulatedLearner, sel: Selector, seen: NDArray[np.bool_] | None = None
) -> list[float]:
    """Held-out score before training and after each of STEPS steps of `sel` on `learner`;
    marks the rolled-out tasks in `seen` (after the selector saw them) when given."""
    curve = [learner.score()]
    for step in range(STEPS):
        ids = sel.select(BATCH)
        task_ids = np.repeat(ids, ROLLOUTS)
        rewards = learner.rollout(ids, ROLLOUTS)
        sel.update(Feedback(task_ids=task_ids, rewards=rewards, step=step))
        if seen is not None:
            seen[ids] = True
        learner.train(GroupBatch.from_rollouts(step, task_ids, rewards, np.full(task_ids.size, -1)))
        curve.append(learner.score())
    return curve


def ttb100(curve: list[float], base: list[float]) -> float | None:
    """TTB(100%) of a score curve against uniform's (both evaluated at every step)."""
    steps = range(len(base))
    return ttb(steps, curve, steps, base, 1.0, interpolate=False)


def diagnose(jobs: int | None, command: str) -> tuple[dict[str, Any], list[str]]:
    """Every variant and uniform on every scenario and seed (`jobs` processes): the results
    and the markdown table, both naming `command`."""
    runs = [(s, v, seed) for s in SCENARIO_NAMES for v in ("uniform", *VARIANTS) for seed in SEEDS]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        curves = dict(zip(runs, pool.map(run, runs), strict=True))
    results: dict[str, Any] = {"command": command, "scenarios": {}}
    for s in SCENARIO_NAMES:
        rows = results["scenarios"][s] = {}
        baselines = {k: curves[(s, "uniform", k)] for k in SEEDS}
        for v in VARIANTS:
            mine = {k: curves[(s, v, k)] for k in SEEDS}
            rows[v] = {
                "ttb100": summarize(mine, baselines, {})["ttb100"],
                "score_at_100": float(np.mean([c[100] for c in mine.values()])),
                "per_seed": [ttb100(mine[k], baselines[k]) for k in SEEDS],
            }
    lines = [
        "# Prompts-only BOTS: where its implicit evidence falls short",
        "",
        f"Command: `{command}`  ",
        "Simulator, BOTS at paper defaults (lam = rho = 0.1, Thompson sampling), 200 steps of "
        "32 prompts x 16 rollouts, 5 paired seeds (0-4). TTB(100%) relative to uniform, mean ± "
        "std (lower is better); score = held-out score at step 100, mean over seeds. Rows other "
        "than `prompts` and `references` are diagnoses, not settings: `oracle ...` gives the "
        "plug-in the true pass rate of some tasks; `level unseen` gives never-tried tasks "
        "E[p | domain, level], the most their prompt text can tell (the simulator writes a "
        "prompt from its task's domain and level alone), so it bounds every plug-in built on "
        "the text; `fresh seen` gives tried tasks a fresh 16-rollout estimate at every step, "
        "more than any estimator of them has. `easy` and `multidomain` are the tuning "
        "scenarios, `hard` is reported only.",
        "",
        "| implicit evidence p~ | given | " + " | ".join(
            f"{s} TTB(100%) | {s} score@100" for s in SCENARIO_NAMES) + " |",
        "|---|---|" + "---:|---:|" * len(SCENARIO_NAMES),
    ]  # fmt: skip
    given = {"references": "prompts + references"}
    for v in VARIANTS:
        cells = []
        for s in SCENARIO_NAMES:
            r = results["scenarios"][s][v]
            cells += [ttb_cell(r["ttb100"]), f"{r['score_at_100']:.3f}"]
        diagnosis = v not in ("prompts", "first observations")
        label = given.get(v, "prompts + truth" if diagnosis else "prompts")
        lines.append(f"| {v} | {label} | " + " | ".join(cells) + " |")
    return results, lines
