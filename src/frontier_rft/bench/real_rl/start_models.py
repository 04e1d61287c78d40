"""The start model every run of a benchmark trains from, and each seed's start state.

`prepare_start_model` builds the tiny Llama and warm-starts it on demonstrations, copies the
ledger's committed start weights, or saves a pretrained start model once; `measure_start_states`
measures the share of zero-variance prompts of each seed's training pool under `group_size`
rollouts of it (a run's worker measures its seed's first, `measure_start_state_once`). Nothing
here imports torch at module level.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.ledger import directory_digest
from frontier_rft.bench.real_rl.testbed import Testbed
from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.training.config import TrainConfig

__all__ = [
    "START_MODELS",
    "cached_start_state",
    "measure_start_state",
    "measure_start_state_once",
    "measure_start_states",
    "prepare_start_model",
    "start_model_dir",
    "start_state_file",
]

_log = logging.getLogger(__name__)


START_MODELS = "start_models"
"""The ledger's folder of committed start models, one `<digest>/` each (~3.7 MB for the
standard testbed's): the weights a `start_weights` testbed trains from on any machine."""


def prepare_start_model(
    tb: Testbed,
    root: Path,
    log: Callable[[str], None] = _log.info,
    ledger_root: Path | None = None,
) -> Path:
    """The start model's directory, made once (skipped when done): the tiny Llama built and
    warm-started, the ledger's committed `start_weights` copied, or a pretrained
    `start_model` loaded once and saved as a plain Hugging Face directory (every run then
    loads that in seconds instead of de-quantising a GGUF). A warm start built here is
    also saved to the ledger's start_models/ (when there is a ledger), to be committed."""
    if tb.start_model:
        return _save_pretrained_start(tb.start_model, root / "model-start", log)
    if tb.start_weights:
        return _copy_start_weights(tb.start_weights, root / "model-sft", ledger_root, log)
    from frontier_rft.training.sft import run_sft
    from frontier_rft.training.tiny_model import build_tiny_lm

    assert tb.model is not None and tb.sft is not None  # Testbed.__post_init__
    init, sft = root / "model-init", root / "model-sft"
    if not (init / "config.json").exists():
        t0 = time.perf_counter()
        build_tiny_lm(tb.model, init)
        log(f"built the tiny model in {time.perf_counter() - t0:.0f} s")
    if not (sft / "config.json").exists():
        import torch

        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        stats = run_sft(tb.sft, init, sft, log=log, log_every=100)
        log(
            f"warm start: loss {stats['first_loss']:.3f} -> {stats['final_loss']:.3f} "
            f"in {stats['seconds']:.0f} s"
        )
    if ledger_root is not None:
        saved = ledger_root / START_MODELS / directory_digest(sft)
        if not (saved / "config.json").is_file():
            _copy_model_dir(sft, saved)
            log(
                f"saved the start model to {saved}: commit it, and pass --start-weights "
                f"{saved.name} on any machine to train from these weights"
            )
    return sft


def _copy_start_weights(
    digest: str, out: Path, ledger_root: Path | None, log: Callable[[str], None]
) -> Path:
    """The ledger's start model `digest` copied to `out` (checked against its digest)."""
    if ledger_root is None:
        raise ValueError("--start-weights reads the start model from the ledger: pass --ledger")
    source = ledger_root / START_MODELS / digest
    if not (source / "config.json").is_file():
        held = sorted(p.name for p in (ledger_root / START_MODELS).glob("*") if p.is_dir())
        raise ValueError(
            f"--start-weights {digest}: the ledger holds no start model {source}; it holds "
            f"{', '.join(held) or 'none'}"
        )
    if directory_digest(source) != digest:
        raise ValueError(
            f"{source}: its weights' digest is {directory_digest(source)}, not {digest}"
        )
    if not (out / "config.json").is_file() or directory_digest(out) != digest:
        _copy_model_dir(source, out)
        log(f"start model {digest} copied from the ledger")
    return out


def _copy_model_dir(source: Path, out: Path) -> None:
    """A model directory's files copied, the folder renamed into place whole."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def _save_pretrained_start(source: str, out: Path, log: Callable[[str], None]) -> Path:
    """`source` (name, GGUF file or directory) saved to `out` once; refuses an `out` that
    holds another source's model."""
    from frontier_rft.lm.model_io import load_lm, save_lm

    info = out / "frontier_rft.json"
    if (out / "config.json").exists() and info.exists():
        saved = load_json_file(info, "a start model's frontier_rft.json")
        held = saved.get("source") if isinstance(saved, dict) else None
        if held != source:
            raise ValueError(
                f"{out} holds the start model of {held!r}, not {source!r}: pass a new --runs "
                "directory"
            )
        return out
    t0 = time.perf_counter()
    model, tokenizer = load_lm(source)
    save_lm(model, tokenizer, out, stage="pretrained", source=source)
    params = sum(p.numel() for p in model.parameters())
    log(
        f"start model {source}: {params:,} parameters, saved to {out} in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return out


def start_state_file(root: Path, seed: int) -> Path:
    """Where a seed's start state is cached under a runs directory."""
    return root / "start_states" / f"seed{seed}.json"


def measure_start_state(config: TrainConfig, model_dir: Path, seed: int) -> dict[str, Any]:
    """Zero-variance share of one seed's training pool (`config.train_seed`) under
    `group_size` rollouts of the start model, with its outcome histogram overall and per
    level; sampled at torch seed 10,000 + seed, on this process's torch threads."""
    import numpy as np
    import torch

    from frontier_rft.lm.device import autocast, resolve_device
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import load_task, train_split
    from frontier_rft.training.evaluate import outcome_histogram, rollout_scores

    model, tokenizer = load_lm(model_dir)
    device = resolve_device(config.device)
    model.to(device)
    suite = load_task(config.task, config.format_reward)
    items = train_split(suite, config.train_size, config.train_seed, config.levels)
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[device.index] if device.type == "cuda" else []):
        torch.manual_seed(10_000 + seed)
        with autocast(device, config.precision):
            scores, _ = rollout_scores(
                model,
                tokenizer,
                items,
                suite.verifier,
                config.rollout_sampling(),
                prompts_per_batch=64,
            )
    levels = np.array([it.level for it in items])
    report = outcome_histogram(scores)
    report["zero_variance"] = float(np.mean(scores.var(axis=1) == 0))
    report["seconds"] = time.perf_counter() - t0
    report["per_level"] = {
        str(lv): outcome_histogram(scores[levels == lv]) for lv in np.unique(levels)
    }
    del model
    if device.type == "cuda":  # the runs of this GPU share its memory
        torch.cuda.empty_cache()
    return report


def _write_start_state(path: Path, report: Mapping[str, Any]) -> None:
    body = (json.dumps(report, indent=1, sort_keys=True) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, lambda fh: fh.write(body))


def cached_start_state(root: Path, seed: int) -> dict[str, Any] | None:
    """A seed's cached start state (or the single-file cache of earlier versions), or None."""
    for path, key in ((start_state_file(root, seed), None), (root / "start_state.json", str(seed))):
        if path.is_file():
            held = load_json_file(path, "a bench-rl start state")
            if isinstance(held, dict) and key is not None:
                held = held.get(key)
            if isinstance(held, dict) and "zero_variance" in held:
                return held
    return None


def measure_start_states(
    tb: Testbed, model_dir: Path, seeds: Sequence[int], root: Path
) -> dict[str, Any]:
    """Each seed's start state: cached (the first run of a seed measures it in its worker,
    `run_worker`), else measured here at one torch thread and cached."""
    out: dict[str, Any] = {}
    for s in seeds:
        held = cached_start_state(root, s)
        if held is None:
            import torch

            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                config = dataclasses.replace(tb.train, train_seed=tb.pool_seed_base + s)
                held = measure_start_state(config, model_dir, s)
            finally:
                torch.set_num_threads(threads)
            _write_start_state(start_state_file(root, s), held)
        out[str(s)] = held
    return out


def start_model_dir(tb: Testbed, root: Path) -> Path:
    """Where `prepare_start_model` puts the start model under a runs directory."""
    return root / ("model-start" if tb.start_model else "model-sft")


def measure_start_state_once(path: Path, config: TrainConfig, model_dir: Path, seed: int) -> None:
    """Measure a seed's start state into `path` at one thread, unless it is there or another
    worker claimed it (an exclusive lock file; the report measures a seed whose claimant
    died)."""
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_suffix(".lock")
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    try:
        import torch

        torch.set_num_threads(1)
        _write_start_state(path, measure_start_state(config, model_dir, seed))
    finally:
        lock.unlink(missing_ok=True)
