"""What the reference trainer's noise meter costs: its seconds over a CPU step's, per noise_every.

    PYTHONPATH=src python benchmarks/noise_meter_cost.py --testbed fast --steps 24

Runs the testbed's uniform run (seed 0, its committed warm start, one torch thread on the
CPU) with the meter on every step (`noise_every: 1`), and reads from each step's row the
meter's own seconds (`perf/noise_s`: its two half passes, the complements and the inner
products, timed inside the update) and the step's seconds without them (`perf/step_s` -
`perf/noise_s`). The meter's work is exactly those seconds, so the cost at noise_every k is
mean(noise_s) / k over mean(step_s - noise_s): no two runs timed against each other on a
shared machine. The first step (warm-up) is left out. Writes `noise_meter_cost_<testbed>.json`
and `.md` under `--out`.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES
from frontier_rft.bench.real_rl.start_models import START_MODELS
from frontier_rft.bench.real_rl.testbed import standard_cpu_testbed, testbed
from frontier_rft.bench.scripts import (
    RESULTS_DIR,
    command_line,
    int_at_least,
    positive_ints,
    write_outputs,
)
from frontier_rft.cli.common import Parser
from frontier_rft.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 0.05
"""The meter may cost at most this share of a CPU step on average (issue 89)."""


def parse_args(argv: Sequence[str] | None) -> Any:
    parser = Parser(prog="noise_meter_cost.py", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--testbed", choices=("fast", "standard"), default="fast", help="CPU testbed to time"
    )
    parser.add_argument("--steps", type=int_at_least(3), default=24, help="steps, all metered")
    parser.add_argument(
        "--every", type=positive_ints, default=(1, 2, 5, 10, 20), help="noise_every to report"
    )
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads")
    parser.add_argument("--out", default=RESULTS_DIR, help="output directory")
    return parser.parse_args(argv)


def run_config(name: str, steps: int, threads: int) -> tuple[TrainConfig, Path]:
    """The testbed's uniform run at seed 0 on the CPU, metered every step, and its start model."""
    tb = standard_cpu_testbed(512, steps) if name == "standard" else testbed(name)
    uniform = next(e for e in MAIN_ENTRIES if e.label == "uniform")
    config = dataclasses.replace(
        tb.run_config(uniform, seed=0),
        steps=steps,
        device="cpu",
        threads=threads,
        eval_every=0,
        checkpoint_every=10**6,
        tensorboard=False,
        noise_every=1,
    )
    return config, ROOT / "benchmarks" / "ledger" / START_MODELS / tb.start_weights


def measure(config: TrainConfig, model: Path) -> list[dict[str, float]]:
    """Each step's metrics (steps run one by one: no evaluation)."""
    from frontier_rft.training.grpo import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(config, model, Path(tmp) / "run", log=lambda _: None)
        rows = [trainer.step() for _ in range(config.steps)]
        trainer.sink.close()
    return rows


def report(rows: list[dict[str, float]], every: Sequence[int], default: int) -> dict[str, Any]:
    """The meter's seconds and the step's without them, and the cost at each noise_every."""
    timed = rows[1:]  # the first step warms up
    noise = statistics.mean(r["perf/noise_s"] for r in timed)
    step = statistics.mean(r["perf/step_s"] - r["perf/noise_s"] for r in timed)
    update = statistics.mean(r["perf/update_s"] for r in timed)
    share = {k: noise / k / step for k in sorted({*every, default})}
    return {
        "steps_timed": len(timed),
        "noise_s": noise,
        "step_s_without_meter": step,
        "update_s": update,
        "share_by_every": share,
        "default_every": default,
        "default_share": share[default],
        "within_limit": share[default] <= LIMIT,
        "smallest_every_within_limit": min(k for k in range(1, 1000) if noise / k / step <= LIMIT),
    }


def markdown(result: dict[str, Any], config: TrainConfig, command: str) -> list[str]:
    r = result
    lines = [
        "# The noise meter's cost on a CPU step",
        "",
        f"`{command}`",
        "",
        f"Testbed `{result['testbed']}`: {config.batch_size} prompts x {config.group_size} "
        f"rollouts, <= {config.max_new_tokens} tokens, one torch thread, {r['steps_timed']} "
        f"metered steps timed (the first left out).",
        "",
        f"- a step without the meter: {r['step_s_without_meter']:.3f} s (its update "
        f"{r['update_s']:.3f} s)",
        f"- the meter, a metered step: {r['noise_s']:.3f} s "
        f"({r['noise_s'] / r['update_s']:.2f}x the update)",
        "",
        "| noise_every | meter's seconds over a step's, on average |",
        "|---:|---:|",
    ]
    for k, share in r["share_by_every"].items():
        mark = " (default)" if k == r["default_every"] else ""
        lines.append(f"| {k}{mark} | {100 * share:.1f}% |")
    verdict = "within" if r["within_limit"] else "above"
    lines += [
        "",
        f"At the default noise_every {r['default_every']} the meter costs "
        f"{100 * r['default_share']:.1f}% of a CPU step, {verdict} the 5% limit; every step it "
        f"would cost {100 * r['share_by_every'][1]:.0f}%, so the default meters every "
        f"k-th step (the smallest k within 5% here: {r['smallest_every_within_limit']}).",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    config, model = run_config(args.testbed, args.steps, args.threads)
    rows = measure(config, model)
    result = {
        "command": command_line(),
        "testbed": args.testbed,
        "config": {
            k: getattr(config, k)
            for k in ("batch_size", "group_size", "max_new_tokens", "threads", "steps")
        },
        **report(rows, args.every, TrainConfig().noise_every),
        "per_step": [
            {k: r[k] for k in ("perf/noise_s", "perf/step_s", "perf/update_s")} for r in rows
        ],
    }
    stem = f"noise_meter_cost_{args.testbed}"
    write_outputs(args.out, stem, result, markdown(result, config, result["command"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
