"""METIS with a real judge: does the policy answer the paper's judge prompt, and is it right?

    python benchmarks/metis_judge_check.py --model smollm2-135m-instruct --device cuda \
        --precision bf16 --warmup-steps 20 --json benchmarks/results/smollm2_gpu_judge.json

On `--prompts` held-out tasks of the SmolLM2 testbed's mix (testbed.SMOLLM2_LEVELS; the split
every bench-rl run evaluates on), with the testbed's sampling: the realised reward variance
from `--samples` rollouts each, then the policy's prediction from METIS's judge prompt
(appendix A.1; K = 3 exemplars: the lowest, a middle and the highest realised variance of
`--exemplar-pool` further held-out tasks). Reports the parse rate (a value in [0, 1/4] in
the last `\\boxed{}`) and the Spearman correlation of predicted with realised variance
(frontier_rft.bench.real_rl.finished.judge_check). When the parse rate is below `--warmup-below` and
`--warmup-steps` > 0, a format warm-up (supervised, judge prompts answered with a random
listed value, on training-split tasks) runs and both are measured again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _flag(name: str, value: object) -> str:
    """A flag as typed: a switch alone, else with its value."""
    flag = f"--{name.replace('_', '-')}"
    return flag if value is True else f"{flag} {value}"


def main() -> int:
    from frontier_rft.bench.real_rl.finished.judge_check import JudgeCheckConfig
    from frontier_rft.bench.real_rl.testbed import SMOLLM2_LEVELS

    d = JudgeCheckConfig()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m-instruct", help="name, GGUF file or dir")
    p.add_argument("--levels", default=SMOLLM2_LEVELS, help="arithmetic levels of the tasks")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    p.add_argument("--prompts", type=int, default=d.prompts, help="prompts judged (>= 64)")
    p.add_argument("--exemplar-pool", type=int, default=d.exemplar_pool)
    p.add_argument("--samples", type=int, default=d.samples, help="rollouts per prompt")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--top-p", type=float, default=d.top_p)
    p.add_argument("--judge-max-new-tokens", type=int, default=d.judge_max_new_tokens)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps, help="0 = no warm-up")
    p.add_argument("--warmup-below", type=float, default=d.warmup_below)
    p.add_argument("--warmup-batch", type=int, default=d.warmup_batch)
    p.add_argument("--warmup-lr", type=float, default=d.warmup_lr)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--constrained",
        action="store_true",
        help="also judge with the answer constrained to \\boxed{v}, v an allowed value",
    )
    p.add_argument("--json", default="benchmarks/results/smollm2_judge.json")
    args = p.parse_args()
    config = JudgeCheckConfig(
        prompts=args.prompts,
        exemplar_pool=args.exemplar_pool,
        samples=args.samples,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        judge_max_new_tokens=args.judge_max_new_tokens,
        batch_size=args.batch_size,
        warmup_steps=args.warmup_steps,
        warmup_below=args.warmup_below,
        warmup_batch=args.warmup_batch,
        warmup_lr=args.warmup_lr,
        seed=args.seed,
        constrained=args.constrained,
    )

    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from frontier_rft.bench.real_rl.finished.judge_check import judge_check_model

    # a script: its progress lines on the console
    result = judge_check_model(args.model, args.levels, config, args.device, args.precision, print)
    out = {
        "command": "python benchmarks/metis_judge_check.py "
        + " ".join(_flag(k, v) for k, v in vars(args).items() if v is not False),
        **result,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
