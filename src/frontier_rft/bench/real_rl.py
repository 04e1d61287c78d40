"""The real-RL selector benchmark (`frontier bench-rl`): every selector trains the same start
model with the reference GRPO trainer, for paired seeds, and is scored against uniform.

Stages, each skipped when its output exists (an interrupted benchmark resumes, and a run
killed mid-way continues from its last checkpoint):

1. build the tiny Llama and its tokenizer, warm-start it on demonstrations (one start model
   for every run), or save a pretrained start model once;
2. measure the start state of each seed's training pool (share of zero-variance prompts
   under `group_size` rollouts);
3. train one run per (entry, seed) in parallel worker processes (one torch thread each):
   seed s gives every entry the same start model, the same training pool (train_seed =
   pool_seed_base + s), the same held-out split and the same torch/selector seed;
4. collect the curves (held-out pass@1 against steps, rollouts and wall-clock), for the
   report (frontier_rft.bench.real_rl_report) or the calibration
   (frontier_rft.bench.real_rl_calibration).

The testbeds and entries are frontier_rft.bench.testbed. Nothing here imports torch at
module level; a worker is `python -m frontier_rft.bench.real_rl SPEC_JSON`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from frontier_rft.bench.testbed import BenchEntry, Testbed
from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.progress import progress_bar
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.run_info import read_run_info

__all__ = [
    "BenchRunError",
    "RunOptions",
    "RunSpec",
    "calibration_testbeds",
    "gpu_total_gb",
    "load_run",
    "measure_start_states",
    "prepare_start_model",
    "run_all",
    "run_calibration",
    "run_comparison",
    "run_specs",
    "run_to_complete_seeds",
    "this_machine",
]

Runs = dict[str, dict[int, dict[str, Any]]]
"""Loaded runs by label, then seed (`load_run`)."""

_log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- start model


def prepare_start_model(tb: Testbed, root: Path, log: Callable[[str], None] = _log.info) -> Path:
    """The start model's directory, made once (skipped when done): the tiny Llama built and
    warm-started, or a pretrained `start_model` loaded once and saved as a plain Hugging
    Face directory (every run then loads that in seconds instead of de-quantising a GGUF)."""
    if tb.start_model:
        return _save_pretrained_start(tb.start_model, root / "model-start", log)
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
    return sft


def _save_pretrained_start(source: str, out: Path, log: Callable[[str], None]) -> Path:
    """`source` (name, GGUF file or directory) saved to `out` once; refuses an `out` that
    holds another source's model."""
    from frontier_rft.core.jsonsafe import load_json_file
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


def measure_start_states(
    tb: Testbed, model_dir: Path, seeds: Sequence[int], root: Path
) -> dict[str, Any]:
    """Zero-variance share of each seed's training pool under `group_size` rollouts of the
    start model (cached in root/start_state.json)."""
    path = root / "start_state.json"
    cached: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    missing = [s for s in seeds if str(s) not in cached]
    if missing:
        import numpy as np
        import torch

        from frontier_rft.lm.device import autocast, resolve_device
        from frontier_rft.lm.model_io import load_lm
        from frontier_rft.tasks.suite import load_task, train_split
        from frontier_rft.training.evaluate import outcome_histogram, rollout_scores

        model, tokenizer = load_lm(model_dir)
        cfg = tb.train
        device = resolve_device(cfg.device)
        model.to(device)
        suite = load_task(cfg.task, cfg.format_reward)
        for s in missing:
            items = train_split(suite, cfg.train_size, tb.pool_seed_base + s, cfg.levels)
            torch.manual_seed(10_000 + s)
            t0 = time.perf_counter()
            with autocast(device, cfg.precision):
                scores, _ = rollout_scores(
                    model,
                    tokenizer,
                    items,
                    suite.verifier,
                    cfg.rollout_sampling(),
                    prompts_per_batch=64,
                )
            levels = np.array([it.level for it in items])
            report = outcome_histogram(scores)
            report["zero_variance"] = float(np.mean(scores.var(axis=1) == 0))
            report["seconds"] = time.perf_counter() - t0
            report["per_level"] = {
                str(lv): outcome_histogram(scores[levels == lv]) for lv in np.unique(levels)
            }
            cached[str(s)] = report
        path.write_text(json.dumps(cached, indent=1, sort_keys=True) + "\n")
        del model
        if device.type == "cuda":  # the runs about to start share this GPU
            torch.cuda.empty_cache()
    return {str(s): cached[str(s)] for s in seeds}


# ---------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class RunSpec:
    """One training run of the benchmark."""

    entry: BenchEntry
    seed: int
    config: TrainConfig
    model_dir: Path
    run_dir: Path
    drop_weights: bool = False
    """Delete the run's checkpoints and final model once it finished (a pretrained start
    model's are ~2 GB a run; the results need only metrics.jsonl, run.json, eval.json)."""

    @property
    def done(self) -> bool:
        return (self.run_dir / "eval.json").exists()

    def steps_done(self) -> int:
        """Training steps logged so far (read from metrics.jsonl)."""
        path = self.run_dir / "metrics.jsonl"
        if not path.exists():
            return 0
        try:
            text = path.read_text()
        except OSError:
            return 0
        return text.count('"train/reward_mean"')


def run_specs(
    tb: Testbed, entries: Sequence[BenchEntry], seeds: Sequence[int], model_dir: Path, root: Path
) -> list[RunSpec]:
    """One spec per (entry, seed), run directory root/runs/<label>/seed<s>, seed-major: a
    benchmark stopped early has whole paired seeds done."""
    return [
        RunSpec(
            e,
            s,
            tb.run_config(e, s),
            model_dir,
            root / "runs" / e.label / f"seed{s}",
            drop_weights=bool(tb.start_model),
        )
        for s in seeds
        for e in entries
    ]


def _spec_file(spec: RunSpec) -> Path:
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    path = spec.run_dir / "spec.json"
    payload = {
        "config": json.loads(json.dumps(asdict(spec.config))),
        "model_dir": str(spec.model_dir),
        "run_dir": str(spec.run_dir),
        "label": spec.entry.label,
        "drop_weights": spec.drop_weights,
    }
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return path


def run_worker(spec_path: str) -> int:
    """Train one run from its spec.json (resuming from its checkpoint when one exists)."""
    from frontier_rft.training.grpo import Trainer

    spec = json.loads(Path(spec_path).read_text())
    raw = spec["config"]
    raw = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    config = TrainConfig(**raw)
    run_dir = Path(spec["run_dir"])
    resume = (run_dir / "checkpoints" / "latest").exists()
    with open(run_dir / "log.txt", "a", encoding="utf-8") as fh:

        def log(line: str) -> None:
            fh.write(line + "\n")
            fh.flush()

        Trainer(config, spec["model_dir"], run_dir, resume=resume, log=log).train()
    if spec.get("drop_weights"):
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        shutil.rmtree(run_dir / "final", ignore_errors=True)
    return 0


def run_all(
    specs: Sequence[RunSpec], jobs: int, progress: bool = True, poll_s: float = 2.0
) -> list[RunSpec]:
    """Run every unfinished spec in `jobs` parallel worker processes; returns failed specs.

    A bar (frontier_rft.progress) counts training steps over all runs; it redraws in place on
    a terminal and writes one line per refresh to a log file."""
    todo = [s for s in specs if not s.done]
    total = sum(s.config.steps for s in specs)
    reached = sum(s.config.steps if s.done else s.steps_done() for s in specs)
    bar = progress_bar(total, "bench-rl steps", unit="step", enabled=progress, initial=reached)
    running: dict[subprocess.Popen[bytes], RunSpec] = {}
    failed: list[RunSpec] = []
    counted = {id(s): (s.config.steps if s.done else s.steps_done()) for s in specs}
    queue = list(todo)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    try:
        while queue or running:
            while queue and len(running) < jobs:
                spec = queue.pop(0)
                cmd = [sys.executable, "-m", "frontier_rft.bench.real_rl", _spec_file(spec)]
                err = open(spec.run_dir / "stderr.txt", "ab")  # noqa: SIM115 - closed below
                proc = subprocess.Popen([str(c) for c in cmd], stdout=err, stderr=err, env=env)
                err.close()
                running[proc] = spec
            time.sleep(poll_s)
            for proc, spec in list(running.items()):
                now = spec.config.steps if spec.done else spec.steps_done()
                bar.update(max(0, now - counted[id(spec)]))
                counted[id(spec)] = max(now, counted[id(spec)])
                if proc.poll() is None:
                    continue
                del running[proc]
                if proc.returncode != 0 or not spec.done:
                    failed.append(spec)
                    bar.write(
                        f"run {spec.entry.label} seed {spec.seed} failed "
                        f"(exit {proc.returncode}); see {spec.run_dir / 'stderr.txt'}"
                    )
                bar.set_postfix_str(f"{spec.entry.label} seed {spec.seed} done", refresh=False)
    finally:
        for proc in running:  # interrupted: stop our workers (they resume next time)
            proc.terminate()
        for proc in running:
            proc.wait()
        bar.close()
    return failed


# ---------------------------------------------------------------------------- results


def load_run(run_dir: Path) -> dict[str, Any]:
    """Curves and summaries of one finished run (from metrics.jsonl, run.json, eval.json)."""
    rows = read_metrics_jsonl(run_dir / "metrics.jsonl")  # selector keys also unprefixed
    info = read_run_info(run_dir / "run.json")
    train = [r for r in rows if "train/reward_mean" in r]
    evals = [r for r in rows if "eval/pass@1" in r]
    cum_rollouts = [0.0]
    cum_seconds = [float(info.get("embed_seconds", 0.0))]
    for r in train:
        cum_rollouts.append(cum_rollouts[-1] + r.get("train/rollouts", 0.0))
        cum_seconds.append(cum_seconds[-1] + r["perf/step_s"])
    eval_steps = [int(r["step"]) for r in evals]
    return {
        "eval_steps": eval_steps,
        "eval_rollouts": [cum_rollouts[s] for s in eval_steps],
        "eval_seconds": [cum_seconds[s] for s in eval_steps],
        "pass1": [float(r["eval/pass@1"]) for r in evals],
        "final": {k: v for k, v in evals[-1].items() if k.startswith("eval/")},
        "train": train,
        "info": info,
    }


# ---------------------------------------------------------------------------- a benchmark


class BenchRunError(RuntimeError):
    """Runs failed, or no seed has all its runs finished: nothing to report yet."""


def run_to_complete_seeds(
    specs: Sequence[RunSpec],
    seeds: Sequence[int],
    jobs: int,
    *,
    report_only: bool = False,
    progress: bool = True,
) -> list[int]:
    """Run the unfinished specs (unless `report_only`); the seeds whose runs all finished
    (with `report_only` on a benchmark still running: the complete paired seeds so far)."""
    if not report_only:
        failed = run_all(specs, jobs, progress=progress)
        if failed:
            raise BenchRunError(f"{len(failed)} runs failed; rerun the same command to retry them")
    complete = [s for s in seeds if all(sp.done for sp in specs if sp.seed == s)]
    if not complete:
        raise BenchRunError("no seed has all its runs finished yet")
    return complete


def _write_testbed(root: Path, tb: Testbed) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "testbed.json").write_text(json.dumps(tb.to_json(), indent=1) + "\n")


def _start(tb: Testbed, seeds: Sequence[int], root: Path) -> tuple[Path, dict[str, Any], float]:
    """The start model and the seeds' start states (each made once, under `root`), and the
    clock's reading before them."""
    t0 = time.perf_counter()
    model_dir = prepare_start_model(tb, root)
    return model_dir, measure_start_states(tb, model_dir, seeds, root), t0


@dataclass(frozen=True)
class RunOptions:
    """Where a benchmark's runs go and how they run."""

    root: Path
    """The runs directory: the start model, the seeds' start states, one directory per run."""
    jobs: int = 2
    """Runs side by side (worker processes, one torch thread each)."""
    report_only: bool = False
    """Run nothing: report the seeds whose runs have all finished."""
    progress: bool = True
    """A progress bar over the training steps of all runs."""
    log: Callable[[str], None] = _log.info
    """Where the benchmark's lines go (`frontier bench-rl` prints them)."""

    def complete_seeds(self, specs: Sequence[RunSpec], seeds: Sequence[int]) -> list[int]:
        """`run_to_complete_seeds` of `specs` with these options."""
        return run_to_complete_seeds(
            specs, seeds, self.jobs, report_only=self.report_only, progress=self.progress
        )


def run_comparison(
    tb: Testbed, entries: Sequence[BenchEntry], seeds: Sequence[int], options: RunOptions
) -> tuple[Runs, dict[str, Any], float]:
    """Every entry on every seed, run directories under `options.root` (resumed where they
    stopped): the loaded runs of the seeds whose runs all finished, those seeds' start
    states, and the seconds it took."""
    root = options.root
    _write_testbed(root, tb)
    model_dir, start, t0 = _start(tb, seeds, root)
    specs = run_specs(tb, entries, seeds, model_dir, root)
    options.log(
        f"{len(specs)} runs ({len(entries)} entries x {len(seeds)} seeds), "
        f"{sum(s.done for s in specs)} already done; {options.jobs} parallel jobs; runs in {root}"
    )
    complete = options.complete_seeds(specs, seeds)
    runs: Runs = {}
    for spec in specs:
        if spec.seed in complete:
            runs.setdefault(spec.entry.label, {})[spec.seed] = load_run(spec.run_dir)
    return runs, {str(s): start[str(s)] for s in complete}, time.perf_counter() - t0


def calibration_testbeds(
    tb: Testbed, lrs: Sequence[float], root: Path
) -> dict[float, tuple[Testbed, Path]]:
    """The testbed at each learning rate and its runs directory, root/calibration/lr<lr>."""
    return {
        lr: (
            dataclasses.replace(tb, train=dataclasses.replace(tb.train, lr=lr)),
            root / "calibration" / f"lr{lr:g}",
        )
        for lr in lrs
    }


def run_calibration(
    tb: Testbed,
    uniform: BenchEntry,
    beds: Mapping[float, tuple[Testbed, Path]],
    seeds: Sequence[int],
    options: RunOptions,
) -> tuple[dict[float, dict[int, dict[str, Any]]], dict[str, Any], float]:
    """`uniform` alone at each calibration testbed (`calibration_testbeds`) on `seeds`, one
    start model under `options.root`: the loaded runs of the complete seeds by learning rate,
    their start states and the seconds it took."""
    root = options.root
    for bed, path in beds.values():
        _write_testbed(path, bed)
    model_dir, start, t0 = _start(tb, seeds, root)
    specs = [
        sp
        for bed, path in beds.values()
        for sp in run_specs(bed, [uniform], seeds, model_dir, path)
    ]
    specs.sort(key=lambda sp: sp.seed)  # seed-major: an early stop leaves whole seeds done
    options.log(
        f"uniform at lr {', '.join(f'{lr:g}' for lr in beds)} x {len(seeds)} seeds = "
        f"{len(specs)} runs, {sum(sp.done for sp in specs)} already done; {options.jobs} parallel "
        f"jobs; runs in {root / 'calibration'}"
    )
    complete = options.complete_seeds(specs, seeds)
    runs = {
        lr: {s: load_run(path / "runs" / uniform.label / f"seed{s}") for s in complete}
        for lr, (_, path) in beds.items()
    }
    return runs, {str(s): start[str(s)] for s in complete}, time.perf_counter() - t0


def gpu_total_gb(device: str) -> float | None:
    """Memory of the GPU the runs use (None on a CPU)."""
    from frontier_rft.lm.device import resolve_device

    used = resolve_device(device)
    if used.type != "cuda":
        return None
    import torch

    return float(torch.cuda.get_device_properties(used).total_memory) / 2**30


def this_machine(device: str) -> str:
    """CPU count, load and, for a GPU testbed, the GPU's name: where these runs trained."""
    text = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )
    if device != "cpu":
        import torch

        from frontier_rft.lm.device import resolve_device

        used = resolve_device(device)
        if used.type == "cuda":
            text = f"{torch.cuda.get_device_name(used)}, {text}"
    return text


def _main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m frontier_rft.bench.real_rl SPEC_JSON", file=sys.stderr)
        return 2
    from transformers.utils import logging

    hf: Any = logging
    hf.disable_progress_bar()
    hf.set_verbosity_error()
    return run_worker(argv[0])


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
