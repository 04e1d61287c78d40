"""How well a policy judges its own prompts with METIS's judge prompt, before any RL.

For P prompts: the realised within-prompt reward variance v(x) from n rollouts (the trainer's
sampling), then the policy's own prediction from the paper's judge prompt (appendix A.1: the
system message, K = 3 exemplars of other prompts' realised variance, the candidate). Reported:
the parse rate (a value in [0, 1/4] inside the last `\\boxed{}`, the paper's failure rule)
and the Spearman correlation of predicted with realised variance (over all prompts, a failed
judgment predicting METIS's fallback 0.0; and over the parsed ones).

A parse rate below `warmup_below` (0.9) can be followed by a short format warm-up: supervised
steps on judge prompts answered `\\boxed{v}` with v drawn uniformly from the answer list
(`metis_judge_training.judge_format_examples`, what the tiny model's SFT mixes in). It teaches
the format, not calibration (the values are random), so a Spearman near 0 after it is the
expected start for METIS's judge reward to calibrate from; both are measured again after it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import spearman
from frontier_rft.core.config import check, check_field_types
from frontier_rft.lm.decoding import Sampling
from frontier_rft.selectors.metis.judge import (
    ALLOWED_VALUES,
    parse_judgment,
    render_judge_prompt,
    system_message,
    user_message,
)

__all__ = ["JudgeCheckConfig", "judge_check", "judge_check_model", "spearman_or_none"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeCheckConfig:
    """Settings of one judge check (sampling as the trainer's rollouts)."""

    prompts: int = 64
    """Prompts judged (P)."""
    exemplar_pool: int = 16
    """Further prompts rolled out to draw the K = 3 exemplars from (their realised variance)."""
    samples: int = 8
    """Rollouts per prompt for the realised variance (n)."""
    max_new_tokens: int = 24
    """Longest task completion."""
    temperature: float = 0.7
    """Sampling temperature of rollouts and of the judge's answer."""
    top_p: float = 0.9
    """Nucleus of rollouts and of the judge's answer."""
    judge_max_new_tokens: int = 24
    """Longest judge answer."""
    batch_size: int = 16
    """Prompts per generate call (rollouts and judge)."""
    warmup_steps: int = 0
    """Format warm-up steps when the parse rate is below `warmup_below` (0 = none)."""
    warmup_below: float = 0.9
    """Parse rate under which the warm-up runs."""
    warmup_batch: int = 16
    """Judge prompts per warm-up step."""
    warmup_lr: float = 3e-5
    """AdamW learning rate of the warm-up (constant)."""
    seed: int = 0
    """Torch sampling seed and the warm-up's example seed."""
    constrained: bool = False
    """Also judge with the answer constrained to `\\boxed{v}`, v an allowed value (the
    same prompts and rollouts; PolicyJudge(constrained=True)), reported under `constrained`."""

    def __post_init__(self) -> None:
        check_field_types(self)
        for name in ("prompts", "exemplar_pool", "samples", "max_new_tokens"):
            check(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        check(self.exemplar_pool >= 3, "exemplar_pool must be >= 3 (K = 3 exemplars)")
        check(self.samples >= 2, "samples must be >= 2: a variance needs two rollouts")
        for name in ("judge_max_new_tokens", "batch_size", "warmup_batch"):
            check(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        check(self.temperature > 0, f"temperature must be > 0, got {self.temperature}")
        self.rollout_sampling()  # Sampling holds the rule for top_p, (0, 1]
        check(self.warmup_steps >= 0, f"warmup_steps must be >= 0, got {self.warmup_steps}")
        check(
            0 <= self.warmup_below <= 1,
            f"warmup_below must lie in [0, 1], got {self.warmup_below}",
        )
        check(self.warmup_lr > 0, f"warmup_lr must be > 0, got {self.warmup_lr}")

    def rollout_sampling(self) -> Sampling:
        """How the rollouts behind the realised variances are drawn."""
        return Sampling(self.samples, self.max_new_tokens, self.temperature, self.top_p)


def spearman_or_none(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> float | None:
    """bench.metrics.spearman, None when it is undefined or there are fewer than 3 pairs."""
    rho = spearman(a, b) if len(a) >= 3 else math.nan
    return rho if math.isfinite(rho) else None


def _exemplars(prompts: Sequence[str], variance: np.ndarray) -> list[tuple[str, float]]:
    """K = 3 exemplars spanning the realised range: the lowest, a middle and the highest
    variance (in that order, oldest first), so the in-context evidence is not three zeros."""
    order = np.argsort(variance, kind="stable")
    picks = [int(order[0]), int(order[len(order) // 2]), int(order[-1])]
    return [(prompts[i], float(variance[i])) for i in picks]


def _measure(
    model: Any,
    tokenizer: Any,
    items: Sequence[Any],
    verifier: Any,
    cfg: JudgeCheckConfig,
    amp: Callable[[], Any],
) -> dict[str, Any]:
    """Realised variances, judgments, parse rate and Spearman with the model as it is now."""
    import torch

    from frontier_rft.training.evaluate import rollout_scores
    from frontier_rft.training.metis_judge_training import PolicyJudge

    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    with amp():
        scores, _ = rollout_scores(
            model, tokenizer, items, verifier, cfg.rollout_sampling(),
            prompts_per_batch=cfg.batch_size,
        )  # fmt: skip
    rollout_s = time.perf_counter() - t0
    variance = scores.var(axis=1)
    judged, pool = items[: cfg.prompts], items[cfg.prompts :]
    exemplars = _exemplars([it.prompt for it in pool], variance[cfg.prompts :])
    system = system_message(ALLOWED_VALUES, True)
    rendered = [
        render_judge_prompt(system, user_message(exemplars, it.prompt, True)) for it in judged
    ]
    realised = variance[: cfg.prompts]
    out = {
        **_judged(PolicyJudge, model, tokenizer, rendered, realised, cfg, amp, False),
        "realised_variance_mean": float(realised.mean()),
        "realised_nonzero_share": float((realised > 0).mean()),
        "pass_rate": float(scores[: cfg.prompts].mean()),
        "exemplar_variances": [v for _, v in exemplars],
        "rollout_s": rollout_s,
    }
    if cfg.constrained:
        out["constrained"] = _judged(
            PolicyJudge, model, tokenizer, rendered, realised, cfg, amp, True
        )
    return out


def _judged(
    judge_type: Any,
    model: Any,
    tokenizer: Any,
    rendered: Sequence[str],
    realised: np.ndarray,
    cfg: JudgeCheckConfig,
    amp: Callable[[], Any],
    constrained: bool,
) -> dict[str, Any]:
    """The judge's answers to `rendered`: parse rate, Spearman with `realised`, its time."""
    import torch

    torch.manual_seed(cfg.seed + 1)  # the same draws whether or not the other judge ran
    judge = judge_type(
        model, tokenizer, cfg.judge_max_new_tokens, cfg.temperature, top_p=cfg.top_p,
        constrained=constrained,
    )  # fmt: skip
    t0 = time.perf_counter()
    answers: list[str] = []
    with amp():
        for lo in range(0, len(rendered), cfg.batch_size):
            answers += judge(list(rendered[lo : lo + cfg.batch_size]))
    judge_s = time.perf_counter() - t0
    parsed = [parse_judgment(a) for a in answers]
    ok = np.array([v is not None for v in parsed])
    predicted = np.array([0.0 if v is None else v for v in parsed])
    return {
        "parse_rate": float(ok.mean()),
        "spearman_all": spearman_or_none(predicted, realised),
        "spearman_parsed": spearman_or_none(predicted[ok], realised[ok]) if ok.sum() >= 3 else None,
        "parsed": int(ok.sum()),
        "prediction_mean": float(predicted[ok].mean()) if ok.any() else None,
        "prediction_distinct": int(np.unique(predicted[ok]).size),
        "judge_s": judge_s,
        "answers_sample": answers[:8],
    }


def _warm_up(
    model: Any,
    tokenizer: Any,
    items: Sequence[Any],
    cfg: JudgeCheckConfig,
    amp: Callable[[], Any],
) -> dict[str, Any]:
    """Supervised steps on judge prompts answered with a random listed value (format only)."""
    import torch

    from frontier_rft.training.metis_judge_training import judge_format_examples
    from frontier_rft.training.sft import sft_loss

    examples = judge_format_examples(
        items, tokenizer, cfg.warmup_steps * cfg.warmup_batch, cfg.seed
    )
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.warmup_lr, weight_decay=0.0)
    losses = []
    t0 = time.perf_counter()
    for step in range(cfg.warmup_steps):
        batch = examples[step * cfg.warmup_batch : (step + 1) * cfg.warmup_batch]
        with amp():
            nll, count = sft_loss(model, batch)
            loss: Any = nll / max(count, 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return {
        "steps": cfg.warmup_steps,
        "batch": cfg.warmup_batch,
        "lr": cfg.warmup_lr,
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "seconds": time.perf_counter() - t0,
    }


def judge_check(
    model: Any,
    tokenizer: Any,
    items: Sequence[Any],
    verifier: Any,
    config: JudgeCheckConfig,
    amp: Callable[[], Any],
    warmup_items: Sequence[Any] = (),
    log: Callable[[str], None] = _log.info,
) -> dict[str, Any]:
    """Measure the judge on `items` (prompts + exemplar_pool of them, held-out tasks), warm
    up the format on `warmup_items` (training tasks) when asked and needed, measure again.
    `amp` returns the forward-pass context (lm.device.autocast). Trains `model` in
    place when it warms up."""
    need = config.prompts + config.exemplar_pool
    if len(items) < need:
        raise ValueError(
            f"judge_check needs {need} items (prompts + exemplar_pool), got {len(items)}"
        )
    items = list(items[:need])
    out: dict[str, Any] = {"config": asdict(config)}
    out["before"] = _measure(model, tokenizer, items, verifier, config, amp)
    log(_line("before warm-up", out["before"]))
    if config.warmup_steps and out["before"]["parse_rate"] < config.warmup_below:
        if not warmup_items:
            raise ValueError("a format warm-up needs warmup_items (training-split tasks)")
        out["warmup"] = _warm_up(model, tokenizer, warmup_items, config, amp)
        log(
            f"format warm-up: {config.warmup_steps} steps, loss "
            f"{out['warmup']['first_loss']:.3f} -> {out['warmup']['last_loss']:.3f}"
        )
        out["after"] = _measure(model, tokenizer, items, verifier, config, amp)
        log(_line("after warm-up", out["after"]))
    return out


def _line(when: str, m: dict[str, Any]) -> str:
    rho = m["spearman_all"]
    line = (
        f"judge {when}: parse rate {m['parse_rate']:.2f} ({m['parsed']} prompts), Spearman "
        f"{'undefined' if rho is None else f'{rho:+.3f}'}, realised variance mean "
        f"{m['realised_variance_mean']:.3f}"
    )
    if "constrained" in m:
        c, rho = m["constrained"], m["constrained"]["spearman_all"]
        line += (
            f"; constrained: parse rate {c['parse_rate']:.2f}, Spearman "
            f"{'undefined' if rho is None else f'{rho:+.3f}'}"
        )
    return line


def judge_check_model(
    model_name: str,
    levels: str,
    config: JudgeCheckConfig,
    device: str = "cpu",
    precision: str = "fp32",
    log: Callable[[str], None] = _log.info,
) -> dict[str, Any]:
    """`judge_check` of a named, GGUF or local model on held-out arithmetic tasks of
    `levels` (the split every bench-rl run evaluates on), warming up on training-split
    tasks when asked; with the machine and the model's load time
    (benchmarks/metis_judge_check.py)."""
    import os
    import platform

    import torch

    from frontier_rft.lm.device import autocast, resolve_device
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import heldout_split, load_task, train_split

    where = resolve_device(device)
    t0 = time.perf_counter()
    model, tokenizer = load_lm(model_name)
    model.to(where).eval()
    load_s = time.perf_counter() - t0
    suite = load_task("arithmetic", format_reward=0.0)
    items = heldout_split(suite, config.prompts + config.exemplar_pool, 2, levels)
    warm = train_split(suite, 256, 1000, levels) if config.warmup_steps else []
    result = judge_check(
        model,
        tokenizer,
        items,
        suite.verifier,
        config,
        lambda: autocast(where, precision),
        warmup_items=warm,
        log=log,
    )
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    if where.type == "cuda":
        machine = f"{torch.cuda.get_device_name(where)}, {machine}"
    return {"machine": machine, "model": model_name, "levels": levels, "load_s": load_s, **result}
