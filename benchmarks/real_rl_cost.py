"""Per-selector cost of one step on the real-RL testbed (no evaluation), to size `bench-rl`.

    .venv/bin/python benchmarks/real_rl_cost.py --steps 8

Each selector trains the testbed's start model (`frontier bench-rl` builds it in
runs/bench-rl/model-sft) for a few steps, as the benchmark runs it (one torch thread, given
prompts + self-embeddings), and reports CPU and wall seconds per step (CPU seconds of one
thread are what a quiet core would take), rollouts per step and the self-embedding time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--model", default="runs/bench-rl/model-sft")
    p.add_argument("--selectors", default="uniform,prioritized,bots,sec,frontier,pcl,metis,dapo")
    p.add_argument("--json", default="benchmarks/results/real_rl_cost.json")
    p.add_argument("--runs", default="runs/real-rl-cost")
    args = p.parse_args()
    import dataclasses

    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES
    from frontier_rft.bench.real_rl.testbed import testbed
    from frontier_rft.training.grpo import Trainer

    tb = testbed("full")
    entries = {e.label: e for e in MAIN_ENTRIES}
    out: dict[str, object] = {
        "command": f"python benchmarks/real_rl_cost.py --steps {args.steps}",
        "machine": f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.1f}",
        "selectors": {},
    }
    for name in args.selectors.split(","):
        cfg = dataclasses.replace(tb.run_config(entries[name], 0), steps=args.steps)
        run = Path(args.runs) / name
        shutil.rmtree(run, ignore_errors=True)
        t0 = time.perf_counter()
        trainer = Trainer(cfg, args.model, run, log=lambda _: None)
        setup = time.perf_counter() - t0
        rows = [trainer.step() for _ in range(args.steps)]
        res = {
            "cpu_s_per_step": float(np.mean([r["perf/step_cpu_s"] for r in rows])),
            "wall_s_per_step": float(np.mean([r["perf/step_s"] for r in rows])),
            "select_ms_per_step": float(np.mean([r["perf/select_ms"] for r in rows])),
            "rollouts_per_step": float(np.mean([r["train/rollouts"] for r in rows])),
            "embed_s": trainer.embed_seconds,
            "setup_s": setup,
            "load_average": os.getloadavg()[0],
        }
        out["selectors"][name] = res  # type: ignore[index]
        print(name, json.dumps(res), flush=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
