"""The real-RL selector benchmark (`frontier bench-rl`): every selector trains the same start
model with the reference GRPO trainer, for paired seeds, and is scored against uniform.

Stages, each skipped when its output exists (an interrupted benchmark resumes, and a run
killed mid-way continues from its last checkpoint):

1. the start model, one for every run, and each seed's start state (`start_models`);
2. one run per (entry, seed) that the ledger does not hold yet, in parallel worker processes
   (`runs`), each recorded in the ledger as it finishes;
3. the complete paired seeds' curves, from the ledger (or the run directories), for the
   report (frontier_rft.bench.real_rl.report) or the calibration
   (frontier_rft.bench.real_rl.calibration).

The testbeds and entries are frontier_rft.bench.real_rl.testbed. Nothing here imports torch at
module level.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.entries import BenchEntry
from frontier_rft.bench.real_rl.ledger import (
    RunLedger,
    check_same_scores,
    definition_digest,
    device_class,
    directory_digest,
    entry_definition,
    eval_scores,
    record_from_run_dir,
    run_from_record,
)
from frontier_rft.bench.real_rl.machine import machine_name
from frontier_rft.bench.real_rl.runs import (
    BenchRunError,
    RunSpec,
    load_run,
    run_all,
    run_specs,
    run_to_complete_seeds,
)
from frontier_rft.bench.real_rl.start_models import (
    cached_start_state,
    measure_start_states,
    prepare_start_model,
    start_model_dir,
)
from frontier_rft.bench.real_rl.testbed import Testbed
from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.shadow.replay import REWARD_LOG

__all__ = [
    "Comparison",
    "RunOptions",
    "calibration_testbeds",
    "run_calibration",
    "run_comparison",
]

Runs = dict[str, dict[int, dict[str, Any]]]
"""Loaded runs by label, then seed (`load_run`)."""

_log = logging.getLogger(__name__)


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
            model_dir = start_model_dir(tb, root)
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
            start_model_dir(tb, root) / "config.json"
        ).is_file():
            machine = options.machine or machine_name(tb.train.device)
            record = _Recorder(ledger, tb, start_model_dir(tb, root), root, machine)
            _record_finished(run_specs(tb, entries, seeds, record.model_dir, root), record)
        return _from_ledger(ledger, tb, entries, seeds, options.log)
    machine = options.machine or machine_name(tb.train.device)
    specs = run_specs(tb, entries, seeds, start_model_dir(tb, root), root)
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
