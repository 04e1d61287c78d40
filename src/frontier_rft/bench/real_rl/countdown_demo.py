"""The Countdown walk-through `frontier demo-countdown` runs: the real trainer, one seed.

Builds the tiny Llama and its tokenizer, warm-starts it on solver demonstrations, then
trains it on Countdown for a few dozen RL steps with each selector (same seed, model and
budget), evaluates every run on the held-out split and prints the comparison, the failure
taxonomy and a figure. Every stage is skipped when its output already exists, so an
interrupted demo resumes where it stopped. The full-length experiment is
scripts/countdown_experiment.sh (README, "Countdown on a real tiny model").
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from frontier_rft.progress import progress_bar
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig, replace_config

_log = logging.getLogger(__name__)

__all__ = ["DEMO_SELECTORS", "demo_summary", "run_countdown_demo"]

DEMO_SELECTORS = ("uniform", "prioritized", "bots", "sec", "frontier", "metis")
"""The bench entries of the walk-through, uniform first (its baseline)."""


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
        _log.info("built the tiny model and tokenizer in %.0f s", time.perf_counter() - t0)
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


def demo_summary(out: Path, runs: dict[str, Path]) -> tuple[str, Path]:
    """The walk-through's comparison: held-out evaluation and failure taxonomy of every run
    (markdown, also written to `out/summary.md`) and its training figure."""
    from frontier_rft.reporting.runs import compare_runs, failure_taxonomy_table
    from frontier_rft.reporting.training_plots import plot_training_runs

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
    return summary, png
