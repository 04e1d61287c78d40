"""`frontier simulate --fit RUN`: the calibrated simulator fitted to your run, and its ranking."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from frontier_rft.bench.simulation.benchmark import parse_entries
from frontier_rft.cli.common import UsageError
from frontier_rft.cli.simulate_run import run_and_report
from frontier_rft.selectors import SELECTORS
from frontier_rft.simulation.fit_log import read_run_log
from frontier_rft.simulation.fit_run import START_STEPS, RunFit, fit_run
from frontier_rft.simulation.runner import Entry, sampler_spec

__all__ = ["cmd_fit"]

MAX_FIT_STEPS = 10_000
"""Most steps of a run the fit reads."""


def calibration_line(fit: RunFit) -> str:
    """How far the fitted simulator's first steps are from the run's."""
    return (
        f"Calibration error over the first {fit.steps_fitted} steps: mean reward RMSE "
        f"{fit.reward_rmse:.3f} (a perfect fit: {fit.reward_noise:.3f}), "
        f"ETR RMSE {fit.etr_rmse:.3f} (perfect: {fit.etr_noise:.3f}). Fitted: start offset "
        f"{fit.scenario.domain_offsets[0]:.2f} and spread {fit.scenario.task_noise:.2f} "
        f"(logits), learning rate {fit.scenario.learning_rate:.3g}; the rest as calibrated on "
        "real GRPO (scenario small-pool)."
    )


def cmd_fit(args: argparse.Namespace) -> int:
    if not START_STEPS + 2 <= args.fit_steps <= MAX_FIT_STEPS:
        raise UsageError(
            f"--fit-steps must be in [{START_STEPS + 2}, {MAX_FIT_STEPS}], got {args.fit_steps}"
        )
    try:
        log = read_run_log(
            args.fit,
            args.fit_steps,
            pool_size=args.fit_pool,
            batch=args.batch,
            rollouts=args.rollouts,
            steps=args.steps,
            known_selectors=tuple(SELECTORS),
        )
    except ValueError as exc:
        raise UsageError(f"--fit: {exc}") from None
    logged = "" if log.span == log.reward_mean.size else f", {log.reward_mean.size} of them logged"
    print(
        f"Fitting the simulated learner to the first {log.span} steps{logged} of "
        f"{log.source} (selector {log.selector}{' in DAPO' if log.dynamic_sampling else ''}, "
        f"{log.num_tasks} prompts, {log.batch} x {log.rollouts} rollouts per step)..."
    )
    fit = fit_run(log)
    print(calibration_line(fit))
    if args.selector:
        entries = parse_entries([args.selector])
    else:
        names = list(SELECTORS)
        entries = [
            *parse_entries(names),
            Entry("uniform+dapo", "uniform", sampler=sampler_spec(dynamic_sampling="fixed")),
        ]
    args.steps, args.batch, args.rollouts = log.steps, log.batch, log.rollouts
    out = Path(args.out or f"runs/fit-{Path(log.source).name or 'run'}")
    extra = {
        "fit": {
            "source": log.source,
            "steps_fitted": fit.steps_fitted,
            "reward_rmse": fit.reward_rmse,
            "etr_rmse": fit.etr_rmse,
            "reward_noise": fit.reward_noise,
            "etr_noise": fit.etr_noise,
            "run_steps": log.steps_at.tolist(),
            "run_reward": log.reward_mean.tolist(),
            "run_etr": log.etr.tolist(),
            "sim_reward": fit.sim_reward.tolist(),
            "sim_etr": fit.sim_etr.tolist(),
            "scenario": {
                f.name: getattr(fit.scenario, f.name) for f in dataclasses.fields(fit.scenario)
            },
        }
    }
    code = run_and_report(args, entries, out, scenario=fit.scenario, extra=extra)
    print("\n" + calibration_line(fit))
    return code
