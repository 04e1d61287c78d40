"""One run of a benchmark: its spec, the worker process that trains it, the pool of workers
that runs many side by side, and its curves once it finished.

Run (entry, seed) trains in its own worker process at one torch thread, resuming from its
checkpoint when it has one: `python -m frontier_rft.bench.real_rl.runs SPEC_JSON`. Seed s
gives every entry the same start model, the same training pool (train_seed = pool_seed_base
+ s), the same held-out split and the same torch/selector seed. Nothing here imports torch
at module level.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.code_id import code_info
from frontier_rft.bench.real_rl.entries import BenchEntry
from frontier_rft.bench.real_rl.ledger import definition_digest, entry_definition, run_curves
from frontier_rft.bench.real_rl.start_models import measure_start_state_once, start_state_file
from frontier_rft.bench.real_rl.testbed import Testbed
from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.progress import progress_bar
from frontier_rft.training.config import TrainConfig, train_config
from frontier_rft.training.run_info import read_run_info

__all__ = [
    "BenchRunError",
    "RunSpec",
    "load_run",
    "run_all",
    "run_specs",
    "run_to_complete_seeds",
    "run_worker",
]


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
    start_state: Path | None = None
    """Where the seed's start state is cached: the first run of a seed to start measures it
    there, in its own worker at one thread, before it trains (no serial stage)."""

    @property
    def done(self) -> bool:
        return (self.run_dir / "eval.json").exists()

    @property
    def definition(self) -> str:
        """The digest of what this run's entry runs (the ledger's key beside label and seed)."""
        return definition_digest(entry_definition(self.config, self.entry.own_train()))

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
    tb: Testbed,
    entries: Sequence[BenchEntry],
    seeds: Sequence[int],
    model_dir: Path,
    root: Path,
    start_root: Path | None = None,
) -> list[RunSpec]:
    """One spec per (entry, seed), run directory root/runs/<label>/seed<s>, seed-major: a
    benchmark stopped early has whole paired seeds done. Start states are cached under
    `start_root` (default `root`)."""
    return [
        RunSpec(
            e,
            s,
            tb.run_config(e, s),
            model_dir,
            root / "runs" / e.label / f"seed{s}",
            drop_weights=bool(tb.start_model),
            start_state=start_state_file(start_root or root, s),
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
        "seed": spec.seed,
        "drop_weights": spec.drop_weights,
        "start_state": None if spec.start_state is None else str(spec.start_state),
        "code": code_info(),
        "definition": entry_definition(spec.config, spec.entry.own_train()),
    }
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return path


def run_worker(spec_path: str) -> int:
    """Train one run from its spec.json (resuming from its checkpoint when one exists)."""
    from frontier_rft.training.grpo import Trainer

    spec = json.loads(Path(spec_path).read_text())
    config = train_config(spec["config"])  # a spec written before TrainConfig.sampler too
    run_dir = Path(spec["run_dir"])
    if spec.get("start_state"):
        start = Path(spec["start_state"])
        measure_start_state_once(start, config, Path(spec["model_dir"]), int(spec["seed"]))
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
    specs: Sequence[RunSpec],
    jobs: int,
    progress: bool = True,
    poll_s: float = 2.0,
    on_done: Callable[[RunSpec], None] | None = None,
) -> list[RunSpec]:
    """Run every unfinished spec in `jobs` parallel worker processes; returns failed specs.
    `on_done` is called with each run as it finishes (the run ledger records it).

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
    # `kill PID` (SIGTERM) of the benchmark ends it as Ctrl-C does: the workers are stopped
    # below, not left training on their own (they resume next time).
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        while queue or running:
            while queue and len(running) < jobs:
                spec = queue.pop(0)
                cmd = [sys.executable, "-m", "frontier_rft.bench.real_rl.runs", _spec_file(spec)]
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
                elif on_done is not None:
                    on_done(spec)
                bar.set_postfix_str(f"{spec.entry.label} seed {spec.seed} done", refresh=False)
    finally:
        for proc in running:  # interrupted: stop our workers (they resume next time)
            proc.terminate()
        for proc in running:
            proc.wait()
        bar.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return failed


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def load_run(run_dir: Path) -> dict[str, Any]:
    """Curves and summaries of one finished run (from metrics.jsonl and run.json)."""
    rows = read_metrics_jsonl(run_dir / "metrics.jsonl")  # selector keys also unprefixed
    return run_curves(rows, read_run_info(run_dir / "run.json"))


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


def _main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m frontier_rft.bench.real_rl.runs SPEC_JSON", file=sys.stderr)
        return 2
    from transformers.utils import logging

    hf: Any = logging
    hf.disable_progress_bar()
    hf.set_verbosity_error()
    return run_worker(argv[0])


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
