"""`frontier demo-countdown`: a one-seed walk-through of the real trainer on Countdown.

Builds the tiny Llama and its tokenizer, warm-starts it on solver demonstrations, then
trains it on Countdown for a few dozen RL steps with each selector (same seed, model and
budget), evaluates every run on the held-out split and prints the comparison, the failure
taxonomy and a figure. Every stage is skipped when its output already exists, so an
interrupted demo resumes where it stopped. The full-length experiment is
scripts/countdown_experiment.sh (README, "Countdown on a real tiny model").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import UsageError, quiet_transformers
from frontier_rft.progress import progress_bar
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig, replace_config

__all__ = ["add_command", "run_countdown_demo"]

DEMO_SELECTORS = ("uniform", "prioritized", "bots", "sec", "frontier", "metis")


def run_countdown_demo(
    out: Path,
    selectors: tuple[str, ...],
    model: ModelConfig,
    sft_config: SFTConfig,
    train: TrainConfig,
) -> dict[str, Path]:
    """Run every stage (skipping finished ones); returns selector -> run directory.

    `train` is the shared run configuration; only its selector changes between runs."""
    from frontier_rft.training.grpo import Trainer
    from frontier_rft.training.sft import run_sft
    from frontier_rft.training.tiny_model import build_tiny_lm

    init, sft = out / "tiny-init", out / "tiny-sft"
    t0 = time.perf_counter()
    if not (init / "config.json").exists():
        build_tiny_lm(model, init)
        print(f"built the tiny model and tokenizer in {time.perf_counter() - t0:.0f} s")
    if not (sft / "config.json").exists():
        with progress_bar(sft_config.steps, "warm start", unit="step") as bar:
            run_sft(sft_config, init, sft, log=lambda _: bar.update(1), log_every=1)
    runs = {}
    for name in selectors:
        run = out / f"cd-{name}"
        runs[name] = run
        if (run / "eval.json").exists():
            continue
        config = replace_config(train, selector=name)
        resume = (run / "checkpoints" / "latest").exists()
        with progress_bar(config.steps, f"train {name}", unit="step") as bar:

            def log(line: str, bar: Any = bar) -> None:
                if line.startswith("step "):
                    bar.update(1)

            Trainer(config, sft, run, resume=resume, log=log).train()
    return runs


def _cmd(args: argparse.Namespace) -> int:
    from frontier_rft.reporting.runs import compare_runs, failure_taxonomy_table
    from frontier_rft.reporting.training_plots import plot_training_runs
    from frontier_rft.selectors.registry import SELECTORS

    selectors = tuple(s.strip() for s in args.selectors.split(",") if s.strip())
    unknown = [s for s in selectors if s not in SELECTORS]
    if unknown or not selectors:
        raise UsageError(f"unknown selectors {unknown}; choose from {', '.join(sorted(SELECTORS))}")
    quiet_transformers()
    out = Path(args.out)
    print(
        f"frontier demo-countdown: a {ModelConfig().hidden_size}-wide tiny Llama, warm-started "
        f"for {args.sft_steps} steps, then {args.steps} RL steps per selector "
        f"({', '.join(selectors)}); held-out pass@1 on {args.eval_size} tasks"
    )
    t0 = time.perf_counter()
    train = TrainConfig(
        steps=args.steps,
        eval_size=args.eval_size,
        eval_every=0,
        checkpoint_every=args.steps,
        keep_checkpoints=1,
        tensorboard=False,
    )
    runs = run_countdown_demo(out, selectors, ModelConfig(), SFTConfig(steps=args.sft_steps), train)
    dirs = [str(d) for d in runs.values()]
    table = compare_runs(dirs)
    taxonomy = failure_taxonomy_table(dirs)
    png = plot_training_runs({name: [d] for name, d in runs.items()}, out / "comparison.png")
    summary = (
        "## Held-out evaluation after training (one seed; short runs: differences of a few "
        "points are noise)\n\n"
        f"{table}\n\n## Failed held-out completions by the RLOO paper's taxonomy\n\n"
        f"{taxonomy}\n"
    )
    (out / "summary.md").write_text(summary)
    print(summary)
    print(f"wrote {out / 'summary.md'} and {png} in {time.perf_counter() - t0:.0f} s")
    return 0


def add_command(sub: Any) -> None:
    """Register `demo-countdown` on a subparsers object."""
    p = sub.add_parser(
        "demo-countdown",
        help="one-seed real-model Countdown walk-through of the selectors (not evidence)",
    )
    p.add_argument("--out", default="runs/demo-countdown", help="output directory")
    p.add_argument("--selectors", default=",".join(DEMO_SELECTORS), help="comma-separated names")
    p.add_argument("--steps", type=int, default=40, help="RL steps per selector")
    p.add_argument("--sft-steps", type=int, default=300, help="supervised warm-start steps")
    p.add_argument("--eval-size", type=int, default=64, help="held-out tasks")
    p.set_defaults(func=_cmd)
