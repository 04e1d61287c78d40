"""Supervised warm start: next-token loss on solver demonstrations (answer tokens only).

Trains on the easier levels only, so that RL starts with some tasks always solved, some
never and some mixed. A small share of each batch can be METIS judge prompts answered with
a random listed value (format only; see `metis_judge_training.judge_format_examples`).
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import torch

from frontier_rft.lm.device import resolve_device
from frontier_rft.lm.model_io import load_lm, save_lm
from frontier_rft.lm.rollout import encode_prompts, score_completions
from frontier_rft.tasks.countdown import CLOSE, OPEN
from frontier_rft.tasks.suite import load_task, train_split
from frontier_rft.training.config import SFTConfig
from frontier_rft.training.metis_judge_training import judge_format_examples

__all__ = ["demonstration_examples", "run_sft", "sft_loss", "unformatted"]

_log = logging.getLogger(__name__)

Example = tuple[list[int], list[int]]


def demonstration_examples(config: SFTConfig, tokenizer: Any) -> list[Example]:
    """(prompt ids, demonstration ids + EOS) for `num_examples` training-split tasks."""
    suite = load_task(config.task)
    items = train_split(suite, config.num_examples, config.data_seed, config.levels)
    prompts = encode_prompts(tokenizer, [it.prompt for it in items])
    eos = int(tokenizer.eos_token_id)
    out = []
    for item, prompt in zip(items, prompts, strict=True):
        text = suite.demonstration(item)
        if unformatted(item.task_id, config.unformatted_share):
            text = text.replace(OPEN, "").replace(CLOSE, "").strip()
        demo = tokenizer(text, add_special_tokens=False)["input_ids"]
        out.append((prompt, [int(i) for i in demo] + [eos]))
    return out


def unformatted(task_id: int, share: float) -> bool:
    """Whether task `task_id`'s demonstration is written bare (`SFTConfig.unformatted_share`):
    a fixed, spread-out subset of the ids (Knuth's multiplicative hash), the same on every
    machine and for every demonstration set."""
    return bool((task_id * 2654435761) % 1000 < share * 1000)


def sft_loss(model: Any, batch: Sequence[Example]) -> tuple[torch.Tensor, int]:
    """Summed negative log-likelihood of the answer tokens, and their count."""
    scores = score_completions(model, [p for p, _ in batch], [c for _, c in batch])
    return -scores.logprobs.sum(), int(scores.mask.sum())


def _lr_lambda(config: SFTConfig) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        span = max(config.steps - config.warmup_steps, 1)
        return 0.5 * (1.0 + math.cos(math.pi * (step - config.warmup_steps) / span))

    return factor


def run_sft(
    config: SFTConfig,
    model_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    log: Callable[[str], None] = _log.info,
    log_every: int = 25,
) -> dict[str, Any]:
    """Train the model in `model_dir` on demonstrations; save it to `out_dir`; return stats."""
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    model, tokenizer = load_lm(model_dir)
    model.to(device).train()
    examples = demonstration_examples(config, tokenizer)
    judge_per_step = round(config.batch_size * config.judge_format_share)
    judge_examples: list[Example] = []
    if judge_per_step:
        suite = load_task(config.task)
        items = train_split(suite, 256, config.data_seed + 1, config.levels)
        judge_examples = judge_format_examples(
            items, tokenizer, judge_per_step * config.steps, config.seed
        )
    task_per_step = config.batch_size - judge_per_step
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(config))
    rng = random.Random(config.seed)
    order: list[int] = []
    losses: list[float] = []
    start = time.perf_counter()
    for step in range(config.steps):
        if len(order) < task_per_step:  # reshuffled epochs of the demonstrations
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order.extend(fresh)
        batch = [examples[i] for i in order[:task_per_step]]
        del order[:task_per_step]
        nll, count = sft_loss(model, batch)
        if judge_per_step:  # separate pass: judge prompts are ~8x longer than task prompts
            j_nll, j_count = sft_loss(
                model, judge_examples[step * judge_per_step : (step + 1) * judge_per_step]
            )
            nll, count = nll + j_nll, count + j_count
        loss: Any = nll / count
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if log_every and (step + 1) % log_every == 0:
            recent = sum(losses[-log_every:]) / len(losses[-log_every:])
            log(f"sft step {step + 1}/{config.steps}  loss {recent:.4f}")
    seconds = time.perf_counter() - start
    stats = {
        "first_loss": losses[0],
        "final_loss": sum(losses[-10:]) / len(losses[-10:]),
        "seconds": seconds,
        "examples": len(examples),
    }
    save_lm(model, tokenizer, out_dir, stage="sft", sft_config=asdict(config), sft_stats=stats)
    return stats
