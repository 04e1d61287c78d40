"""What the noise meter costs in TRL's GRPOTrainer, per accumulation setting, on the CPU.

    PYTHONPATH=src python benchmarks/noise_meter_trl_cost.py --steps 6

Trains the CPU testbed's tiny Llama (the ledger's start model) with FrontierGRPOTrainer on
Countdown prompts, 32 rows a step (8 prompts x 4 completions, 24 tokens), the meter on every
step, once per gradient_accumulation_steps of `--accumulation` (the rows a step fixed, the
micro-batch shrinking). The meter's own seconds (`perf/noise_s`: its gradient hooks and the
solve, timed on the host) are read beside TRL's `step_time` (the step's generation, forward and
backward passes); the first step is left out. Writes `noise_meter_trl_cost.json` and `.md`.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.start_models import START_MODELS
from frontier_rft.bench.real_rl.testbed import FAST_START_WEIGHTS
from frontier_rft.bench.scripts import RESULTS_DIR, command_line, int_at_least, write_outputs
from frontier_rft.cli.common import Parser

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "benchmarks" / "ledger" / START_MODELS / FAST_START_WEIGHTS
ROWS = 32
"""Rows a step: 8 prompts x 4 completions."""


def parse_args(argv: Sequence[str] | None) -> Any:
    parser = Parser(prog="noise_meter_trl_cost.py", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int_at_least(2), default=6, help="optimizer steps a run")
    parser.add_argument(
        "--accumulation", default="2,4,8", help="gradient_accumulation_steps to time, e.g. 2,4,8"
    )
    parser.add_argument("--out", default=RESULTS_DIR, help="output directory")
    return parser.parse_args(argv)


def _reward(completions: list[str], **kw: Any) -> list[float]:
    """A reward that varies within a group: the parity of the completion's length."""
    return [float(len(c) % 2) for c in completions]


def run(accumulation: int, steps: int) -> dict[str, float]:
    """One metered run; the meter's and TRL's mean seconds a step after the first."""
    import torch
    from datasets import Dataset
    from trl.trainer.grpo_config import GRPOConfig

    from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import load_task, train_split

    torch.set_num_threads(1)
    model, tokenizer = load_lm(MODEL)
    items = train_split(load_task("countdown"), 64, 1, "2x20,2x50")
    data = Dataset.from_dict({"prompt": [it.prompt for it in items], "task_id": list(range(64))})
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=ROWS // accumulation,
            gradient_accumulation_steps=accumulation,
            num_generations=4,
            max_completion_length=24,
            max_steps=steps,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=0,
            disable_tqdm=True,
            beta=0.0,
        )
        trainer = FrontierGRPOTrainer(
            model=model,
            reward_funcs=[_reward],
            args=args,
            train_dataset=data,
            processing_class=tokenizer,
            frontier=FrontierConfig(selector="uniform", shadows=[], noise_every=1),
        )
        trainer.train()
    logs = [h for h in trainer.state.log_history if "perf/noise_s" in h][1:]
    noise = statistics.mean(h["perf/noise_s"] for h in logs)
    step = statistics.mean(h["step_time"] for h in logs)
    return {
        "gradient_accumulation_steps": accumulation,
        "micro_batch_rows": ROWS // accumulation,
        "steps_timed": len(logs),
        "noise_s": noise,
        "step_time_s": step,
        "share": noise / max(step - noise, 1e-9),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = [int(a) for a in args.accumulation.split(",") if a.strip()]
    rows = [run(a, args.steps) for a in settings]
    lines = [
        "# The noise meter's cost in TRL's GRPOTrainer (CPU)",
        "",
        f"`{command_line()}`",
        "",
        f"The CPU testbed's tiny Llama, {ROWS} rows a step (8 prompts x 4 completions, 24 "
        "tokens), one torch thread, the meter on every step; the first step left out.",
        "",
        "| accumulation steps | rows a micro-batch | meter s a step | TRL step s | share |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['gradient_accumulation_steps']} | {r['micro_batch_rows']} | "
            f"{r['noise_s']:.4f} | {r['step_time_s']:.3f} | {100 * r['share']:.1f}% |"
        )
    payload = {"command": command_line(), "model": str(MODEL.name), "rows": rows}
    write_outputs(args.out, "noise_meter_trl_cost", payload, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
