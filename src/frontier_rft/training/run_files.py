"""What a reference-trainer run keeps on disk besides its checkpoints' weights: the config
as recorded, the checks a resume makes against it, the logs cut back to a checkpoint, the
trained-prompts record, and the step's line in the log."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.core.selector import Selector
from frontier_rft.metrics_log import MAX_LINE_CHARS as METRICS_LINE_CHARS
from frontier_rft.metrics_log import MAX_LINE_DEPTH
from frontier_rft.shadow.replay import MAX_LINE_CHARS as REWARD_LINE_CHARS
from frontier_rft.shadow.replay import REWARD_LOG
from frontier_rft.training.checkpoint import logged_until
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.run_info import RESUME_MAY_CHANGE

__all__ = [
    "check_refresh",
    "check_resume_steps",
    "check_resumed_selector",
    "check_same_run",
    "has_tensorboard",
    "jsonable_config",
    "progress_line",
    "trained_tasks_mask",
    "truncate_logs",
]


def trained_tasks_mask(saved: Any, num_tasks: int) -> np.ndarray | None:
    """A checkpoint's `trained_tasks` (task indices) as a mask; None when it has none."""
    if saved is None:  # written before the trainer counted them
        return None
    if not isinstance(saved, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and 0 <= t < num_tasks for t in saved
    ):
        raise ValueError(f"trained_tasks is not a list of task indices below {num_tasks}")
    mask = np.zeros(num_tasks, dtype=np.bool_)
    mask[saved] = True
    return mask


def has_tensorboard(log: Callable[[str], None]) -> bool:
    """Whether TensorBoard is installed (`log` says so when it is not)."""
    if importlib.util.find_spec("tensorboard") is None:
        log("tensorboard is not installed: metrics go to metrics.jsonl only")
        return False
    return True


def jsonable_config(config: TrainConfig) -> dict[str, Any]:
    """The config as run.json and trainer.json record it (JSON types only)."""
    out: dict[str, Any] = json.loads(json.dumps(asdict(config)))
    return out


def check_same_run(saved: dict[str, Any], now: dict[str, Any]) -> None:
    """A resumed run must use the saved configuration (only `steps` may grow; the hardware
    settings `device` and `threads` may change, at the cost of bitwise equality)."""
    diff = sorted(k for k in saved if k not in RESUME_MAY_CHANGE and saved.get(k) != now.get(k))
    if diff:
        raise ValueError(
            f"--resume with a different configuration ({', '.join(diff)}); resume with the "
            "saved settings (only --steps, --device and --threads may change) or start a new --out"
        )


def truncate_logs(run_dir: Path, step: int, log: Callable[[str], None]) -> None:
    """Drop the log lines written after checkpoint `step` (a crashed run's tail, about to be
    redone), and a last line torn mid-write. Both logs are read, with bounds, before either
    is rewritten (atomically): a corrupt line refuses the resume with the files unchanged."""
    # Reward-log lines carry the 0-based step their rollouts came from.
    logs = [
        ("metrics.jsonl", step, METRICS_LINE_CHARS, MAX_LINE_DEPTH),
        (REWARD_LOG, step - 1, REWARD_LINE_CHARS, MAX_LINE_DEPTH),
    ]
    read = [
        (name, logged_until(run_dir / name, until, max_chars=chars, max_depth=depth))
        for name, until, chars, depth in logs
    ]
    for name, got in read:
        if got is None:
            continue
        body, torn = got
        atomic_write_bytes(run_dir / name, lambda fh, body=body: fh.write(body))
        if torn:
            log(f"{name} ended in a torn line (a crash mid-write): dropped it")


def progress_line(step: int, total: int, m: dict[str, float]) -> str:
    """One step's line in the training log."""
    return (
        f"step {step}/{total}  reward {m['train/reward_mean']:.3f}  "
        f"solved {m['train/success_rate']:.3f}  etr {m['train/effective_task_ratio']:.2f}  "
        f"|A| {m['train/mean_abs_advantage']:.3f}  select {m['perf/select_ms']:.0f} ms  "
        f"{m['perf/tokens_per_s']:.0f} tok/s  {m['perf/step_s']:.2f} s"
    )


def check_refresh(config: TrainConfig, given: Sequence[str], evidence: Mapping[str, Any]) -> None:
    """--refresh-features-every needs self-embeddings and a selector that reads features."""
    if not config.refresh_features_every:
        return
    if "self" not in given or "features" not in evidence:
        raise ValueError(
            f"--refresh-features-every re-embeds the pool for a selector that reads the "
            f"policy's self-embeddings (--given self); {config.selector!r} with --given "
            f"{','.join(given)} reads none, so drop the flag"
        )


def check_resume_steps(config: TrainConfig, reached: int, run_dir: Path, passes_done: bool) -> None:
    """Refuse, before anything is written, a resume that would go back or redo the end (the
    run reached step `reached`; `passes_done`: a fewer_steps run walked its passes)."""
    steps = config.steps
    if reached > steps:
        raise ValueError(
            f"--steps {steps} is below the step this run reached ({reached}); pass a larger "
            "--steps to extend the run, or leave --steps out"
        )
    final = run_dir / "eval.json"
    if (reached == steps or passes_done) and final.is_file():
        try:
            done = load_json_file(final, "an eval.json").get("step") == reached
        except (ValueError, AttributeError):
            done = False  # unreadable: evaluate again and rewrite it
        if done:
            raise ValueError(
                f"the run in {run_dir} already finished at step {reached}; pass "
                f"--steps N (N > {reached}) with --resume to extend it"
            )


def check_resumed_selector(
    selector: Selector, config: TrainConfig, prompts: Sequence[str], ckpt: Path
) -> None:
    """The checkpoint's selector must be this run's: same method, same training pool."""
    pool = selector.pool
    same_prompts = pool.prompts is None or list(pool.prompts) == list(prompts)
    if selector.name != config.selector or pool.num_tasks != len(prompts) or not same_prompts:
        raise ValueError(
            f"{ckpt / 'selector.npz'} holds a {selector.name!r} selector over {pool.num_tasks} "
            f"prompts, but this run trains {config.selector!r} over {len(prompts)}: the "
            "checkpoint is not this run's; resume from this run's own or start a new --out"
        )
