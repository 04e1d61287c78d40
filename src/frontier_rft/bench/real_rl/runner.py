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
   report (frontier_rft.bench.real_rl.report) or the calibration
   (frontier_rft.bench.real_rl.calibration).

The testbeds and entries are frontier_rft.bench.real_rl.testbed. Nothing here imports torch at
module level; a worker is `python -m frontier_rft.bench.real_rl.runner SPEC_JSON`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.code_id import code_info
from frontier_rft.bench.real_rl.ledger import (
    RunLedger,
    check_same_scores,
    definition_digest,
    device_class,
    directory_digest,
    entry_definition,
    eval_scores,
    record_from_run_dir,
    run_curves,
    run_from_record,
)
from frontier_rft.bench.real_rl.testbed import BenchEntry, Testbed
from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.progress import progress_bar
from frontier_rft.shadow.replay import REWARD_LOG
from frontier_rft.training.config import TrainConfig, train_config
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
        _measure_start_state_once(start, config, Path(spec["model_dir"]), int(spec["seed"]))
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


def _measure_start_state_once(path: Path, config: TrainConfig, model_dir: Path, seed: int) -> None:
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
                cmd = [sys.executable, "-m", "frontier_rft.bench.real_rl.runner", _spec_file(spec)]
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


# ---------------------------------------------------------------------------- results


def load_run(run_dir: Path) -> dict[str, Any]:
    """Curves and summaries of one finished run (from metrics.jsonl and run.json)."""
    rows = read_metrics_jsonl(run_dir / "metrics.jsonl")  # selector keys also unprefixed
    return run_curves(rows, read_run_info(run_dir / "run.json"))


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
    ledger: Path | None = None
    """The run ledger's root (None: no ledger; runs are read from their directories)."""
    machine: str = ""
    """The machine the runs train on, as each new ledger record names it."""

    def complete_seeds(self, specs: Sequence[RunSpec], seeds: Sequence[int]) -> list[int]:
        """`run_to_complete_seeds` of `specs` with these options."""
        return run_to_complete_seeds(
            specs, seeds, self.jobs, report_only=self.report_only, progress=self.progress
        )


@dataclass(frozen=True)
class Comparison:
    """What a benchmark reports: the complete paired seeds' runs and start states."""

    runs: Runs
    """Loaded runs by label, then seed."""
    start: dict[str, Any]
    """Start state by seed (as a string)."""
    seconds: float
    """This call's seconds; from the ledger: the reported runs' training seconds."""
    machines: tuple[str, ...] = ()
    """The machines the reported runs trained on (from the ledger; else empty)."""
    ledger: str = ""
    """The ledger folder (testbed digest, device class) the runs were read from, or ''."""
    definitions: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Per entry, the definition digest its records have and whether it is today's."""
    codes: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Per entry, the code commits its reported runs trained with (from the ledger)."""


def run_comparison(
    tb: Testbed, entries: Sequence[BenchEntry], seeds: Sequence[int], options: RunOptions
) -> Comparison:
    """Every entry on every seed that the ledger does not hold yet, run directories under
    `options.root` (resumed where they stopped), each recorded in the ledger as it finishes;
    then the complete paired seeds, from the ledger (or, without one, the run directories).
    `report_only` runs nothing: it records the finished runs the runs directory holds and
    reports from the ledger."""
    t0 = time.perf_counter()
    root = options.root
    if options.ledger is None:
        if options.report_only:
            model_dir = _start_model_dir(tb, root)
        else:
            _write_testbed(root, tb)
            model_dir = prepare_start_model(tb, root, log=options.log, ledger_root=options.ledger)
        specs = run_specs(tb, entries, seeds, model_dir, root)
        complete = options.complete_seeds(specs, seeds)
        start = measure_start_states(tb, model_dir, complete, root)
        runs: Runs = {}
        for spec in specs:
            if spec.seed in complete:
                runs.setdefault(spec.entry.label, {})[spec.seed] = load_run(spec.run_dir)
        return Comparison(runs, start, time.perf_counter() - t0)
    ledger = RunLedger(options.ledger, tb, device_class(tb.train.device))
    if options.report_only:  # the records name their machine: this one may have no such GPU
        if (root / "testbed.json").is_file() and (
            _start_model_dir(tb, root) / "config.json"
        ).is_file():
            machine = options.machine or machine_name(tb.train.device)
            record = _Recorder(ledger, tb, _start_model_dir(tb, root), root, machine)
            _record_finished(run_specs(tb, entries, seeds, record.model_dir, root), record)
        return _from_ledger(ledger, tb, entries, seeds, options.log)
    machine = options.machine or machine_name(tb.train.device)
    specs = run_specs(tb, entries, seeds, _start_model_dir(tb, root), root)
    if all(ledger.has(sp.entry.label, sp.definition, sp.seed) for sp in specs):
        options.log(f"all {len(specs)} runs are in the ledger {ledger.folder}; nothing to run")
        return _from_ledger(ledger, tb, entries, seeds, options.log)
    _write_testbed(root, tb)
    record = _Recorder(
        ledger,
        tb,
        prepare_start_model(tb, root, log=options.log, ledger_root=options.ledger),
        root,
        machine,
    )
    _record_finished(specs, record)
    todo = [sp for sp in specs if not ledger.has(sp.entry.label, sp.definition, sp.seed)]
    options.log(
        f"{len(specs)} runs ({len(entries)} entries x {len(seeds)} seeds), "
        f"{len(specs) - len(todo)} in the ledger {ledger.folder}; {len(todo)} to run, "
        f"{options.jobs} parallel jobs; runs in {root}"
    )
    failed = run_all(todo, options.jobs, progress=options.progress, on_done=record)
    if failed:
        raise BenchRunError(f"{len(failed)} runs failed; rerun the same command to retry them")
    return _from_ledger(ledger, tb, entries, seeds, options.log)


def _start_model_dir(tb: Testbed, root: Path) -> Path:
    """Where `prepare_start_model` puts the start model under a runs directory."""
    return root / ("model-start" if tb.start_model else "model-sft")


def _record_finished(specs: Sequence[RunSpec], record: _Recorder) -> None:
    """Record the finished runs the ledger does not hold yet (they finished before it knew
    them, or their directories were copied in from another machine)."""
    for spec in specs:
        if spec.done and not record.ledger.has(spec.entry.label, spec.definition, spec.seed):
            record(spec)


class _Recorder:
    """Adds a finished run's record to the ledger: its seed's start state (measured here if
    its worker could not), the start model's digest, the code that ran it, the machine."""

    def __init__(
        self, ledger: RunLedger, tb: Testbed, model_dir: Path, root: Path, machine: str
    ) -> None:
        self.ledger, self.tb, self.model_dir, self.root = ledger, tb, model_dir, root
        self.machine = machine
        self.start_model = directory_digest(model_dir)

    def __call__(self, spec: RunSpec) -> None:
        start = cached_start_state(self.root, spec.seed)
        if start is None:
            start = measure_start_states(self.tb, self.model_dir, [spec.seed], self.root)
            start = start[str(spec.seed)]
        code, definition = _spec_code(spec.run_dir / "spec.json", spec)
        log = spec.run_dir / REWARD_LOG
        if log.is_file():  # bench-rl --reward-log: uniform's rewards, for shadow replay
            self.ledger.add_reward_log(spec.entry.label, spec.definition, spec.seed, log)
        self.ledger.add(
            record_from_run_dir(
                spec.run_dir,
                label=spec.entry.label,
                seed=spec.seed,
                definition=definition,
                start_state=start,
                start_model=self.start_model,
                code=code,
                machine=self.machine,
            )
        )


def _spec_code(path: Path, spec: RunSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The code a run's spec.json says ran it and the entry definition it ran. A spec from
    before these fields: the code is unknown (the code recording it now may not be the code
    that ran it), and the definition is today's, which the record then says."""
    held = load_json_file(path, "a bench-rl run spec") if path.is_file() else {}
    held = held if isinstance(held, dict) else {}
    code = held.get("code")
    if not isinstance(code, dict):
        code = {"commit": None, "note": "the run's spec predates recording the code that ran it"}
    definition = held.get("definition")
    if not isinstance(definition, dict):
        definition = entry_definition(spec.config, spec.entry.own_train())
        code = {**code, "definition": "computed when recorded, not when the run started"}
    return dict(code), dict(definition)


def _from_ledger(
    ledger: RunLedger,
    tb: Testbed,
    entries: Sequence[BenchEntry],
    seeds: Sequence[int],
    log: Callable[[str], None],
) -> Comparison:
    """The complete paired seeds of `entries` in the ledger: every entry recorded, from one
    start model (a seed whose records disagree on it is left out, and said so). Each entry's
    records are those of its definition today (`entry_definition`), or, where the ledger has
    none, of the earlier definition with the most seeds, which `Comparison.definitions` and
    the report then name: one definition per entry, never mixed."""
    runs: Runs = {}
    start: dict[str, Any] = {}
    machines: set[str] = set()
    codes: dict[str, set[str]] = {}
    labels = [e.label for e in entries]
    keys = _chosen_definitions(ledger, tb, entries, seeds)
    scores: dict[tuple[str, ...], Path] = {}  # the scores records hold: one set, to pair
    for seed in seeds:
        if not all(ledger.has(label, keys[label]["digest"], seed) for label in labels):
            continue
        records = {label: ledger.load(label, keys[label]["digest"], seed) for label in labels}
        models = {r["start_model"] for r in records.values()}
        if len(models) > 1:
            log(f"seed {seed} left out: its records come from {len(models)} start models")
            continue
        for label, rec in records.items():
            scores.setdefault(eval_scores(rec), ledger.path(label, keys[label]["digest"], seed))
            check_same_scores(scores)
            runs.setdefault(label, {})[seed] = run_from_record(rec)
            machines.add(str(rec.get("machine", "")))
            code = rec.get("code")
            commit = code.get("commit") if isinstance(code, dict) else None
            codes.setdefault(label, set()).add(str(commit)[:7] if commit else "unknown")
        start[str(seed)] = records[labels[0]]["start_state"]
    if not start:
        raise BenchRunError(
            f"the ledger {ledger.folder} holds no seed with all of {', '.join(labels)} recorded"
        )
    for label, key in keys.items():
        if not key["today"]:
            log(
                f"{label}: records of an earlier definition ({key['digest']}); "
                "rerun to measure today's"
            )
    seconds = sum(r["eval_seconds"][-1] for by_seed in runs.values() for r in by_seed.values())
    return Comparison(
        runs,
        start,
        float(seconds),
        tuple(sorted(machines)),
        str(ledger.folder),
        keys,
        {label: tuple(sorted(c)) for label, c in codes.items()},
    )


def _chosen_definitions(
    ledger: RunLedger, tb: Testbed, entries: Sequence[BenchEntry], seeds: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """Per entry, the definition whose records a report reads: today's when the ledger holds
    any of the seeds for it, else the recorded one holding the most of them."""
    held: dict[str, dict[str, int]] = {}
    for label, digest, seed in ledger.labels():
        if seed in seeds:
            held.setdefault(label, {}).setdefault(digest, 0)
            held[label][digest] += 1
    chosen: dict[str, dict[str, Any]] = {}
    for e in entries:
        today = definition_digest(entry_definition(tb.run_config(e, seeds[0]), e.own_train()))
        counts = held.get(e.label, {})
        if today in counts or not counts:
            chosen[e.label] = {"digest": today, "today": True}
        else:
            best = max(sorted(counts), key=lambda d: counts[d])
            chosen[e.label] = {"digest": best, "today": False}
    return chosen


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
    root, t0 = options.root, time.perf_counter()
    for bed, path in beds.values():
        _write_testbed(path, bed)
    model_dir = prepare_start_model(tb, root, log=options.log, ledger_root=options.ledger)
    specs = [
        sp
        for bed, path in beds.values()
        for sp in run_specs(bed, [uniform], seeds, model_dir, path, start_root=root)
    ]
    specs.sort(key=lambda sp: sp.seed)  # seed-major: an early stop leaves whole seeds done
    options.log(
        f"uniform at lr {', '.join(f'{lr:g}' for lr in beds)} x {len(seeds)} seeds = "
        f"{len(specs)} runs, {sum(sp.done for sp in specs)} already done; {options.jobs} parallel "
        f"jobs; runs in {root / 'calibration'}"
    )
    complete = options.complete_seeds(specs, seeds)
    start = measure_start_states(tb, model_dir, complete, root)
    runs = {
        lr: {s: load_run(path / "runs" / uniform.label / f"seed{s}") for s in complete}
        for lr, (_, path) in beds.items()
    }
    return runs, start, time.perf_counter() - t0


def gpu_total_gb(device: str) -> float | None:
    """Memory of the GPU the runs use (None on a CPU)."""
    from frontier_rft.lm.device import resolve_device

    used = resolve_device(device)
    if used.type != "cuda":
        return None
    import torch

    return float(torch.cuda.get_device_properties(used).total_memory) / 2**30


def machine_name(device: str) -> str:
    """The processor, its CPU count and, on a GPU, the GPU's name: what a run trained on."""
    text = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    if device != "cpu":
        import torch

        from frontier_rft.lm.device import resolve_device

        used = resolve_device(device)
        if used.type == "cuda":
            text = f"{torch.cuda.get_device_name(used)}, {text}"
    return text


def this_machine(device: str) -> str:
    """`machine_name` and the load average now: where these runs trained, and how busy."""
    return f"{machine_name(device)}, load average at the end {os.getloadavg()[0]:.1f}"


def _main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m frontier_rft.bench.real_rl.runner SPEC_JSON", file=sys.stderr)
        return 2
    from transformers.utils import logging

    hf: Any = logging
    hf.disable_progress_bar()
    hf.set_verbosity_error()
    return run_worker(argv[0])


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
