"""`frontier bench-rl`: the real-RL selector benchmark (docs/results/real_rl.md).

    frontier bench-rl --selectors uniform,greso,skip --no-effects   # the standard testbed
    frontier bench-rl --selectors uniform,greso --no-effects --report-only   # from the ledger
    frontier bench-rl --scale full          # the first CPU testbed: 11 selectors + effects
    frontier bench-rl --scale gpu-smollm2 --calibrate --seeds 100,101 --calibrate-lrs 3e-6,1e-5
    frontier bench-rl --scale gpu-smollm2 --lr 1e-5 --selectors uniform,bots,greso,dapo \
        --no-effects --jobs 10      # SmolLM2-135M-Instruct: docs/results/smollm2_gpu.md

Every finished run is recorded in the run ledger (--ledger, benchmarks/ledger: commit it),
keyed by testbed, device class (cpu or cuda), entry and seed; a run the ledger holds is never
run again, and the report is built from the ledger. Runs go to --runs (resumable: an
interrupted run continues from its checkpoint); results (JSON, markdown, figures) to --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from frontier_rft.bench.scripts import MAX_SEEDS, SEED_LIMIT, seed_list

if TYPE_CHECKING:
    from frontier_rft.bench.real_rl.benchmark import RunOptions
    from frontier_rft.bench.real_rl.report import ResultFiles

__all__ = [
    "MAX_JOBS",
    "MAX_SEEDS",
    "SEED_LIMIT",
    "add_command",
    "run_bench",
    "seed_list",
]

COMMAND = "frontier bench-rl"
LEDGER = "benchmarks/ledger"
"""The run ledger of this repository (--ledger's default)."""
T = TypeVar("T")


SEEDS_CHECKED_QUIETLY = 20
"""Checking each seed's pool takes ~0.1 s; for more seeds than this a progress bar shows."""
MAX_JOBS = 1024
"""Most parallel runs (--jobs)."""


def positive_float(text: str) -> float:
    """A finite float > 0 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def float_list(text: str) -> list[float]:
    """Distinct finite floats > 0 from "3e-6,1e-5" (at most 8), in order; an argparse type."""
    try:
        values = [positive_float(p) for p in text.split(",") if p.strip()]
    except argparse.ArgumentTypeError:
        values = []
    if not values or len(values) > 8 or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(
            f"expected up to 8 distinct numbers > 0 like 3e-6,1e-5, got {text!r}"
        )
    return values


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Check the arguments, run the benchmark (frontier_rft.bench.real_rl.benchmark), write its
    results (frontier_rft.bench.real_rl.report); returns the summary."""
    from frontier_rft.bench.real_rl.benchmark import run_comparison
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
    from frontier_rft.bench.real_rl.report import headline_lines, write_results
    from frontier_rft.bench.real_rl.schedule import check_one_schedule
    from frontier_rft.cli.common import UsageError, quiet_transformers

    quiet_transformers()
    if args.calibrate_lrs and not args.calibrate:
        raise UsageError("--calibrate-lrs applies to --calibrate only: add --calibrate or drop it")
    if args.calibrate and args.selectors:
        raise UsageError("--calibrate runs uniform alone: drop --selectors")
    tb = _testbed_from_args(args)
    if args.calibrate:
        return _calibrate(args, tb)
    known = {e.label: e for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}
    if args.selectors:
        names = [n.strip() for n in args.selectors.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            from frontier_rft.core.config import did_you_mean

            hints = ", ".join(f"{n!r}{did_you_mean(n, known)}" for n in unknown[:20])
            raise UsageError(
                f"--selectors: unknown entr{'ies' if len(unknown) > 1 else 'y'} {hints}; "
                f"entries: {', '.join(sorted(known))}"
            )
        entries = [known[n] for n in names]
    else:
        entries = list(MAIN_ENTRIES) + (list(EFFECT_ENTRIES) if args.effects else [])
    if "uniform" not in [e.label for e in entries]:
        entries.insert(0, known["uniform"])  # every metric is paired against uniform
    entries = _scheduled(entries, tb, args)
    root = Path(args.runs)
    _check_same_testbed(root, tb)
    options = _run_options(args, COMMAND)
    result = _or_exit(lambda: run_comparison(tb, entries, args.seeds, options))
    files = dataclasses.replace(
        _result_files(args, tb, result.machines, result.ledger),
        definitions=result.definitions,
        codes=result.codes,
    )
    try:  # one report reads every arm at the same points
        check_one_schedule(result.runs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    summary = write_results(result.runs, result.start, entries, tb, files, result.seconds)
    for line in headline_lines(summary, [e.label for e in entries]):
        print(line)
    return summary


def _check_pool_size(tb: Any, args: argparse.Namespace) -> None:
    """UsageError unless --pool-size is at least one step's batch and at most what the
    testbed's task levels hold for every seed (each seed trains on its own pool)."""
    from frontier_rft.cli.common import UsageError
    from frontier_rft.progress import progress_bar
    from frontier_rft.tasks.suite import SplitTooLarge, load_task, train_split

    size, batch, levels = args.pool_size, tb.train.batch_size, tb.train.levels
    if size < batch:
        raise UsageError(
            f"--pool-size {size} is smaller than one training step: the --scale {args.scale} "
            f"testbed trains on {batch} distinct prompts per step; pass --pool-size {batch} "
            "or more"
        )
    suite = load_task(tb.train.task, tb.train.format_reward)
    short: dict[int, int | None] = {}  # seed -> the most its pool holds
    enabled = not args.no_progress and len(args.seeds) > SEEDS_CHECKED_QUIETLY
    with progress_bar(len(args.seeds), "pool of each seed", unit="seed", enabled=enabled) as bar:
        for seed in args.seeds:
            try:
                train_split(suite, size, tb.pool_seed_base + seed, levels)
            except SplitTooLarge as exc:
                short[seed] = exc.capacity
            bar.update(1)
    if short:
        seed = min(short, key=lambda s: (short[s] is None, short[s] or 0))
        cap = short[seed]
        most = f"at most {cap}" if cap is not None else "fewer"
        fix = f"pass --pool-size {cap} or less" if cap is not None else "pass a smaller --pool-size"
        raise UsageError(
            f"--pool-size {size} is more than the --scale {args.scale} testbed's task levels "
            f"({levels}) hold: {most} distinct training prompts for seed {seed}; {fix}"
        )


def _testbed_from_args(args: argparse.Namespace) -> Any:
    """The --scale testbed with the command line's overrides, checked before any work."""
    from frontier_rft.bench.real_rl.testbed import resized, testbed
    from frontier_rft.cli.common import UsageError, model_dir
    from frontier_rft.lm.device import resolve_device

    tb = testbed(args.scale)
    if args.pool_size is not None:  # bounded before anything else, in this command's flags
        _check_pool_size(tb, args)
    tb = resized(tb, args.pool_size, args.steps or None)
    train: dict[str, Any] = {}
    if args.lr:
        train["lr"] = args.lr
    if getattr(args, "reward_log", False):
        train["reward_log"] = True
    if getattr(args, "update_rows", 0):
        train["update_rows"] = args.update_rows
    if args.device:
        train["device"] = args.device
        if tb.sft is not None:
            tb = dataclasses.replace(tb, sft=dataclasses.replace(tb.sft, device=args.device))
    if train:
        tb = dataclasses.replace(tb, train=dataclasses.replace(tb.train, **train))
    if args.model:
        if not args.report_only:  # a report reads the ledger only: the model may be elsewhere
            model_dir(args.model, "--model")  # a missing model is a one-line error now
        tb = tb.with_start_model(args.model)
    if args.start_weights:
        if tb.start_model:
            raise UsageError(
                "--start-weights is a warm-started start model of the tiny Llama; "
                f"--scale {args.scale} / --model trains a pretrained one: drop one of them"
            )
        _check_start_weights(args)
        tb = dataclasses.replace(tb, start_weights=args.start_weights)
    if not args.report_only:
        resolve_device(tb.train.device)  # a missing GPU is a one-line error before any work
    return tb


def _check_start_weights(args: argparse.Namespace) -> None:
    """--start-weights names a start model the ledger holds (a one-line error otherwise)."""
    from frontier_rft.bench.real_rl.start_models import START_MODELS
    from frontier_rft.cli.common import UsageError

    if not re.fullmatch(r"[0-9a-f]{12}", args.start_weights):
        raise UsageError(
            f"--start-weights takes the 12 hex digits of a start model in the ledger's "
            f"{START_MODELS}/, got {args.start_weights!r}"
        )
    if not args.ledger:
        raise UsageError("--start-weights reads the start model from the ledger: pass --ledger")
    folder = Path(args.ledger) / START_MODELS
    if not (folder / args.start_weights / "config.json").is_file():
        held = sorted(p.name for p in folder.glob("*") if p.is_dir()) if folder.is_dir() else []
        raise UsageError(
            f"--start-weights {args.start_weights}: not in {folder} (it holds "
            f"{', '.join(held) or 'none'})"
        )


def _calibrate(args: argparse.Namespace, tb: Any) -> dict[str, Any]:
    """Uniform alone at each --calibrate-lrs on --seeds; writes <name>_calibration.{json,md}
    and exits non-zero when the testbed's preconditions are not met."""
    from frontier_rft.bench.real_rl.benchmark import calibration_testbeds, run_calibration
    from frontier_rft.bench.real_rl.calibration import calibration_summary, write_calibration
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES
    from frontier_rft.bench.real_rl.machine import gpu_total_gb

    root = Path(args.runs)
    beds = calibration_testbeds(tb, args.calibrate_lrs or [tb.train.lr], root)
    _check_same_testbed(root, tb, ignore=("lr",))  # a comparison here may run at another lr
    for bed, path in beds.values():
        _check_same_testbed(path, bed)
    uniform = next(e for e in MAIN_ENTRIES if e.label == "uniform")
    options = _run_options(args, f"{COMMAND} --calibrate")
    runs, start, seconds = _or_exit(lambda: run_calibration(tb, uniform, beds, args.seeds, options))
    summary = calibration_summary(
        runs,
        start,
        wall_seconds=None if args.report_only else seconds,
        jobs=args.jobs,
        gpu_total_gb=gpu_total_gb(tb.train.device) if not args.report_only else None,
    )
    page = write_calibration(summary, tb, _result_files(args, tb), seeds=len(start))
    pre, zero = summary["preconditions"], summary["start_zero_variance_share"]["mean"]
    for key, row in summary["learning_rates"].items():
        gain = row["gain"]["mean"]
        print(f"lr {key:8s} uniform held-out gain {gain:+.3f}" if gain is not None else key)
    print(
        f"start zero-variance share {zero:.3f}; chosen lr {summary['chosen_lr']:g}; "
        f"runs that fit side by side: {summary['runs_that_fit']}"
    )
    if not pre["met"]:
        raise SystemExit(
            f"calibration: preconditions not met (zero-variance >= {pre['zero_variance_min']}: "
            f"{pre['zero_variance_met']}, uniform gain >= {pre['gain_min']}: {pre['gain_met']}); "
            f"see {page}"
        )
    return summary


def _run_options(args: argparse.Namespace, prefix: str) -> RunOptions:
    """--runs, --jobs, --report-only, --no-progress, --ledger and --machine; the benchmark's
    lines after `prefix`."""
    from frontier_rft.bench.real_rl.benchmark import RunOptions

    return RunOptions(
        Path(args.runs),
        args.jobs,
        report_only=args.report_only,
        progress=not args.no_progress,
        log=lambda line: print(f"{prefix}: {line}", flush=True),
        ledger=Path(args.ledger) if args.ledger else None,
        machine=args.machine,
    )


def _result_files(
    args: argparse.Namespace, tb: Any, machines: tuple[str, ...] = (), ledger: str = ""
) -> ResultFiles:
    """--out, --name, this command and --machine (default: the machines the ledger's records
    name, else this machine), and the ledger folder the runs were read from."""
    from frontier_rft.bench.real_rl.machine import this_machine
    from frontier_rft.bench.real_rl.report import ResultFiles

    machine = args.machine or "; ".join(machines) or this_machine(tb.train.device)
    return ResultFiles(Path(args.out), args.name, _command(args), machine, ledger)


def _scheduled(entries: list[Any], tb: Any, args: argparse.Namespace) -> list[Any]:
    """The entries on --eval-every / --eval-grid's one schedule (as they are without them)."""
    from frontier_rft.bench.real_rl.schedule import on_schedule
    from frontier_rft.cli.common import UsageError

    try:
        return on_schedule(entries, tb, args.eval_every, args.eval_grid)
    except ValueError as exc:
        raise UsageError(f"--eval-grid: {exc}") from None


def _or_exit(run: Callable[[], T]) -> T:
    """`run()`; a benchmark with nothing to report (runs failed, no seed complete) exits."""
    from frontier_rft.bench.real_rl.runs import BenchRunError

    try:
        return run()
    except BenchRunError as exc:
        raise SystemExit(f"error: {exc}") from None


def _check_same_testbed(root: Path, tb: Any, ignore: tuple[str, ...] = ()) -> None:
    """Refuse a runs directory that holds another testbed's runs (resuming them would mix two
    benchmarks in one report); the device may differ (copied run directories)."""
    from frontier_rft.bench.real_rl.ledger import RECORDED_ONLY, WHERE_IT_RUNS
    from frontier_rft.core.jsonsafe import load_json_file

    path = root / "testbed.json"
    if not path.exists():
        return
    try:
        old = load_json_file(path, "the testbed of a bench-rl runs directory")
    except ValueError as exc:
        raise SystemExit(f"error: {exc}; pass a new --runs directory") from None
    if not isinstance(old, dict):
        raise SystemExit(f"error: {path} is not a bench-rl testbed; pass a new --runs directory")
    differ: list[str] = []
    for part, fields in tb.to_json().items():
        if part not in old:  # newer than the file's runs: not a difference
            continue
        before = old[part]
        if isinstance(fields, dict) and isinstance(before, dict):
            differ += [
                f"{part}.{k}"
                for k, v in fields.items()
                if k not in WHERE_IT_RUNS  # the same runs, computed elsewhere or in pieces
                and k not in ignore
                and k not in RECORDED_ONLY  # --reward-log: the same runs
                and before.get(k, v) != v  # a field the file lacks: newer
            ]
        elif before != fields:
            differ.append(part)
    if differ:
        raise SystemExit(
            f"error: {root} holds runs of another testbed ({', '.join(differ[:4])} differ); "
            "pass a new --runs directory, or the same --scale/--steps/--pool-size as before"
        )


def _command(args: argparse.Namespace) -> str:
    parts = [COMMAND]
    flags = ("seeds", "selectors", "scale", "device", "update_rows", "steps", "pool_size", "lr")
    ledger = getattr(args, "ledger", "")
    for flag in (
        *flags,
        "model",
        "start_weights",
        "calibrate_lrs",
        "runs",
        "ledger",
        "out",
        "name",
    ):
        value = getattr(args, flag, None)  # a Namespace made by hand may lack the newer flags
        if value in (None, "", 0, []) or (flag == "ledger" and value == LEDGER):
            continue
        if flag == "runs" and ledger and not getattr(args, "calibrate", False):
            continue  # reported from the ledger: where runs trained is not part of it
        if flag in ("seeds", "calibrate_lrs"):
            value = ",".join(f"{s:g}" if isinstance(s, float) else str(s) for s in value)
        parts.append(f"--{flag.replace('_', '-')} {value}")
    every, grid = getattr(args, "eval_every", None), getattr(args, "eval_grid", None)
    if every is not None:  # one schedule for every arm (0: start and end only, a schedule too)
        parts.append(f"--eval-every {every}")
    if grid is not None:
        parts.append(f"--eval-grid {','.join(grid)}")
    if getattr(args, "calibrate", False):
        parts.append("--calibrate")
    if not args.effects:
        parts.append("--no-effects")
    return " ".join(parts)


def _cmd(args: argparse.Namespace) -> int:
    run_bench(args)
    return 0


def add_command(sub: Any) -> None:
    """Register `bench-rl` on a subparsers object."""
    from frontier_rft.bench.real_rl.testbed import SCALES, scale_help, testbed
    from frontier_rft.cli.common import int_in, positive_int, str_tuple

    p = sub.add_parser(
        "bench-rl",
        help="real-RL selector benchmark: every selector trains the tiny model, paired seeds",
    )
    p.add_argument("--seeds", type=seed_list, default=seed_list("0-4"), help="e.g. 0-4 or 0,2,5")
    p.add_argument(
        "--jobs",
        type=int_in(1, MAX_JOBS),
        default=min(MAX_JOBS, os.cpu_count() or 1),
        help=f"parallel runs (one torch thread each), 1 to {MAX_JOBS} (default: the CPU count, "
        f"{os.cpu_count()} here; fewer leave cores for other work)",
    )
    p.add_argument(
        "--selectors",
        default="",
        help="comma-separated entry labels "
        "(default: all main entries, plus effect entries unless --no-effects)",
    )
    p.add_argument(
        "--effects",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the effect checks (bots-rho0, metis-lam1, frontier ratios)",
    )
    p.add_argument(
        "--scale",
        default="standard",
        choices=SCALES,
        help=f"testbed ({scale_help()})",
    )
    p.add_argument(
        "--device",
        default="",
        help="torch device of every run, 'cpu', 'cuda', 'cuda:N' or 'auto' (default: the "
        "testbed's: standard auto, a CUDA GPU when there is one, else the CPU). CPU and CUDA "
        "runs are recorded and paired apart",
    )
    p.add_argument(
        "--update-rows",
        type=int_in(0, 1_000_000),
        default=0,
        metavar="N",
        help="run each update in micro-batches of at most N rows (0: the whole step at once): "
        "a step of many rows in about N rows' memory, the same gradient up to float rounding; "
        "where a run computes, not what (the ledger pairs it with runs without)",
    )
    p.add_argument("--steps", type=int, default=0, help="override the steps per run (0 = testbed)")
    p.add_argument(
        "--eval-every",
        type=int_in(0, 1_000_000),
        default=None,
        metavar="N",
        help="evaluate every arm every N steps (0: at start and end only): one schedule for "
        "the whole comparison, which a report needs (default: each entry's own; a report "
        "whose arms differ is refused)",
    )
    p.add_argument(
        "--eval-grid",
        type=str_tuple,
        default=None,
        metavar="AXIS:SPACING,...",
        help="also evaluate every arm on one grid of cost, e.g. h200:3.4,passes:1 (axes: "
        "passes, rollouts, or the seconds a shipped step-cost curve projects: cpu, h200): "
        "arms that spend differently a step are read at the same points (default: none)",
    )
    sizes = ", ".join(f"{s} {testbed(s).train.train_size}" for s in SCALES)
    p.add_argument(
        "--lr",
        type=positive_float,
        default=0.0,
        help="override the learning rate of every run (default: the testbed's; the one "
        "--calibrate chose)",
    )
    p.add_argument(
        "--model",
        default="",
        help="start model instead of the testbed's: a pretrained name, a GGUF file or a model "
        "directory, trained as it is (no tiny model, no warm start) (default: the testbed's)",
    )
    p.add_argument(
        "--start-weights",
        default="",
        metavar="DIGEST",
        help="train from the warm-started start model the ledger holds as start_models/DIGEST "
        "instead of building one (a warm start differs across machines; committed weights do "
        "not): a testbed of its own in the ledger (default: build the warm start)",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="run uniform alone at each --calibrate-lrs on --seeds (use seeds the comparison "
        "will not use), check the testbed's preconditions (start zero-variance share >= 0.40, "
        "uniform held-out gain >= +0.05) and write <name>_calibration.{json,md}; exit 1 when "
        "they are not met",
    )
    p.add_argument(
        "--calibrate-lrs",
        type=float_list,
        default=[],
        help="learning rates tried by --calibrate, e.g. 3e-6,1e-5,3e-5 (default: the testbed's)",
    )
    p.add_argument(
        "--pool-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="training prompts per seed's pool, instead of the testbed's (default: "
        f"{sizes}); a larger pool means fewer epochs per run. From one step's batch up to "
        "what the testbed's task levels hold, checked before any work",
    )
    p.add_argument(
        "--reward-log",
        action="store_true",
        help="uniform's runs also write each step's per-prompt rewards (rewards.jsonl), kept "
        "in the ledger beside their records (seed<s>.rewards.jsonl.gz), to replay any skip "
        "rule offline (`frontier shadow replay`); the testbed's digest is unchanged",
    )
    p.add_argument("--runs", default="runs/bench-rl", help="run directories (resumable)")
    p.add_argument(
        "--ledger",
        default=LEDGER,
        help="the run ledger: a record of every finished run, read before running anything "
        "(runs it holds are not run again) and the source of the report ('' = none: report "
        "from the run directories)",
    )
    p.add_argument("--out", default="benchmarks/results", help="results directory")
    p.add_argument("--name", default="real_rl", help="file stem of the results")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--machine",
        default="",
        help="describe the machine the runs trained on, for a report written elsewhere "
        "(--report-only on copied run directories) (default: this machine)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write the results of the seeds whose runs have all finished "
        "(from the ledger alone: no runs directory, model or device is needed)",
    )
    p.set_defaults(func=_cmd)
