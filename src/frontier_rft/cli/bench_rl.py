"""`frontier bench-rl`: the real-RL selector benchmark (docs/results/real_rl.md).

    frontier bench-rl                       # 11 selectors + effect runs, seeds 0-4, 2 jobs
    frontier bench-rl --selectors uniform --no-effects --seeds 0,1   # calibration runs
    frontier bench-rl --scale gpu --jobs 16  # one CUDA GPU: 4x the rollouts per run
    frontier bench-rl --scale gpu-smollm2 --calibrate --seeds 100,101 --calibrate-lrs 3e-6,1e-5
    frontier bench-rl --scale gpu-smollm2 --lr 1e-5 --selectors uniform,bots,greso,dapo \
        --no-effects --jobs 10      # SmolLM2-135M-Instruct: docs/results/smollm2_gpu.md

Runs go to --runs (resumable: finished runs are skipped, interrupted ones continue from
their checkpoint); results (JSON, markdown, figures) to --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_JOBS",
    "MAX_SEEDS",
    "SEED_LIMIT",
    "add_command",
    "run_bench",
    "seed_list",
]

COMMAND = "frontier bench-rl"


MAX_SEEDS = 1000
"""Most seeds one bench-rl call runs."""
SEED_LIMIT = 2**32
"""Seeds are in [0, SEED_LIMIT): torch and the pool generator take them as they are."""
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


def seed_list(text: str) -> list[int]:
    """Sorted distinct ints from "0-4" or "0,2,5" (at most 1000, each in [0, 2**32)); an
    argparse type. Bounds are checked on the numbers before any range is built."""
    out: set[int] = set()
    try:
        for part in (p.strip() for p in text.split(",") if p.strip()):
            lo_text, sep, hi_text = part.partition("-")
            lo = int(lo_text)
            hi = int(hi_text) if sep else lo
            if not 0 <= lo <= hi < SEED_LIMIT or len(out) + hi - lo + 1 > MAX_SEEDS:
                raise ValueError(part)
            out.update(range(lo, hi + 1))
    except ValueError:
        out = set()
    if not out:
        raise argparse.ArgumentTypeError(
            f"expected seeds like 0-4 or 0,2,5 (at most {MAX_SEEDS} seeds in [0, 2**32)), "
            f"got {text!r}"
        )
    return sorted(out)


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Prepare, run, collect and write; returns the summary."""
    from frontier_rft.bench.real_rl import (
        EFFECT_ENTRIES,
        MAIN_ENTRIES,
        load_run,
        measure_start_states,
        prepare_start_model,
        run_specs,
    )
    from frontier_rft.cli.common import UsageError
    from frontier_rft.cli.train import _quiet_transformers

    _quiet_transformers()
    if args.calibrate_lrs and not args.calibrate:
        raise UsageError("--calibrate-lrs applies to --calibrate only: add --calibrate or drop it")
    if args.calibrate and args.selectors:
        raise UsageError("--calibrate runs uniform alone: drop --selectors")
    tb = _testbed_from_args(args)
    if args.calibrate:
        return run_calibration(args, tb)
    known = {e.label: e for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}
    if args.selectors:
        names = [n.strip() for n in args.selectors.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"error: unknown entries {unknown}; choose from {sorted(known)}")
        entries = [known[n] for n in names]
    else:
        entries = list(MAIN_ENTRIES) + (list(EFFECT_ENTRIES) if args.effects else [])
    if "uniform" not in [e.label for e in entries]:
        entries.insert(0, known["uniform"])  # every metric is paired against uniform
    root = Path(args.runs)
    _check_same_testbed(root, tb)
    root.mkdir(parents=True, exist_ok=True)
    (root / "testbed.json").write_text(json.dumps(tb.to_json(), indent=1) + "\n")
    t0 = time.perf_counter()
    model_dir = prepare_start_model(tb, root)
    start = measure_start_states(tb, model_dir, args.seeds, root)
    specs = run_specs(tb, entries, args.seeds, model_dir, root)
    print(
        f"{COMMAND}: {len(specs)} runs ({len(entries)} entries x {len(args.seeds)} seeds), "
        f"{sum(s.done for s in specs)} already done; {args.jobs} parallel jobs; runs in {root}",
        flush=True,
    )
    complete = _run_to_complete_seeds(specs, args)
    runs: dict[str, dict[int, Any]] = {}
    for spec in specs:
        if spec.seed in complete:
            runs.setdefault(spec.entry.label, {})[spec.seed] = load_run(spec.run_dir)
    start = {str(s): start[str(s)] for s in complete}
    labels = [e.label for e in entries]
    seconds = time.perf_counter() - t0
    summary = write_results(runs, start, entries, tb, Path(args.out), args, seconds)
    for line in _headline(summary, labels):
        print(line)
    return summary


def _check_pool_size(tb: Any, args: argparse.Namespace) -> None:
    """UsageError unless --pool-size is at least one step's batch and at most what the
    testbed's task levels hold for every seed (each seed trains on its own pool)."""
    from frontier_rft.cli.common import UsageError
    from frontier_rft.progress import progress_bar
    from frontier_rft.training.data import SplitTooLarge, load_task, train_split

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
    from frontier_rft.bench.real_rl import testbed
    from frontier_rft.cli.common import model_dir
    from frontier_rft.training.device import resolve_device

    tb = testbed(args.scale)
    train: dict[str, Any] = {}
    if args.pool_size is not None:  # bounded before anything else, in this command's flags
        _check_pool_size(tb, args)
        train["train_size"] = args.pool_size
    if args.steps:
        train.update(steps=args.steps, eval_every=max(1, args.steps // 12))
    if args.lr:
        train["lr"] = args.lr
    if args.device:
        train["device"] = args.device
        if tb.sft is not None:
            tb = dataclasses.replace(tb, sft=dataclasses.replace(tb.sft, device=args.device))
    if train:
        tb = dataclasses.replace(tb, train=dataclasses.replace(tb.train, **train))
    if args.model:
        model_dir(args.model, "--model")  # a missing model is a one-line error now
        tb = tb.with_start_model(args.model)
    if not args.report_only:
        resolve_device(tb.train.device)  # a missing GPU is a one-line error before any work
    return tb


def run_calibration(args: argparse.Namespace, tb: Any) -> dict[str, Any]:
    """Uniform alone at each --calibrate-lrs on --seeds; writes <name>_calibration.{json,md}
    and exits non-zero when the testbed's preconditions are not met."""
    from frontier_rft.bench.real_rl import (
        MAIN_ENTRIES,
        load_run,
        measure_start_states,
        prepare_start_model,
        run_specs,
    )
    from frontier_rft.bench.real_rl_calibration import calibration_markdown, calibration_summary
    from frontier_rft.bench.real_rl_report import write_json

    lrs = args.calibrate_lrs or [tb.train.lr]
    uniform = next(e for e in MAIN_ENTRIES if e.label == "uniform")
    root = Path(args.runs)
    _check_same_testbed(root, tb, ignore=("lr",))  # a comparison here may run at another lr
    beds = {lr: dataclasses.replace(tb, train=dataclasses.replace(tb.train, lr=lr)) for lr in lrs}
    roots = {lr: root / "calibration" / f"lr{lr:g}" for lr in lrs}
    for lr in lrs:
        _check_same_testbed(roots[lr], beds[lr])
        roots[lr].mkdir(parents=True, exist_ok=True)
        (roots[lr] / "testbed.json").write_text(json.dumps(beds[lr].to_json(), indent=1) + "\n")
    t0 = time.perf_counter()
    model_dir = prepare_start_model(tb, root)
    start = measure_start_states(tb, model_dir, args.seeds, root)
    specs = [
        sp for lr in lrs for sp in run_specs(beds[lr], [uniform], args.seeds, model_dir, roots[lr])
    ]
    specs.sort(key=lambda sp: sp.seed)  # seed-major: an early stop leaves whole seeds done
    print(
        f"{COMMAND} --calibrate: uniform at lr {', '.join(f'{lr:g}' for lr in lrs)} x "
        f"{len(args.seeds)} seeds = {len(specs)} runs, {sum(sp.done for sp in specs)} already "
        f"done; {args.jobs} parallel jobs; runs in {root / 'calibration'}",
        flush=True,
    )
    complete = _run_to_complete_seeds(specs, args)
    runs = {
        lr: {s: load_run(roots[lr] / "runs" / "uniform" / f"seed{s}") for s in complete}
        for lr in lrs
    }
    summary = calibration_summary(
        runs,
        {str(s): start[str(s)] for s in complete},
        wall_seconds=None if args.report_only else time.perf_counter() - t0,
        jobs=args.jobs,
        gpu_total_gb=_gpu_total_gb(tb.train.device) if not args.report_only else None,
    )
    command = _command(args)
    machine = args.machine or _this_machine(tb.train.device)
    out = Path(args.out)
    write_json(
        out / f"{args.name}_calibration.json",
        {"command": command, "machine": machine, "testbed": tb.to_json(), **summary},
    )
    header = "\n".join(
        [
            f"# Testbed calibration: uniform alone ({len(complete)} seeds)",
            "",
            f"Command: `{command}`  ",
            f"Machine: {machine}  ",
            _learner_line(tb),
        ]
    )
    (out / f"{args.name}_calibration.md").write_text(calibration_markdown(summary, header))
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
            f"see {out / (args.name + '_calibration.md')}"
        )
    return summary


def _run_to_complete_seeds(specs: list[Any], args: argparse.Namespace) -> list[int]:
    """Run the unfinished specs (unless --report-only); the seeds whose runs all finished
    (--report-only on a benchmark still running: the complete paired seeds so far)."""
    from frontier_rft.bench.real_rl import run_all

    if not args.report_only:
        failed = run_all(specs, args.jobs, progress=not args.no_progress)
        if failed:
            raise SystemExit(
                f"error: {len(failed)} runs failed; rerun the same command to retry them"
            )
    complete = [s for s in args.seeds if all(sp.done for sp in specs if sp.seed == s)]
    if not complete:
        raise SystemExit("error: no seed has all its runs finished yet")
    return complete


def _gpu_total_gb(device: str) -> float | None:
    """Memory of the GPU the runs use (None on a CPU)."""
    from frontier_rft.training.device import resolve_device

    used = resolve_device(device)
    if used.type != "cuda":
        return None
    import torch

    return float(torch.cuda.get_device_properties(used).total_memory) / 2**30


def _learner_line(tb: Any) -> str:
    """Who learns: the pretrained start model, or the tiny Llama and its warm start."""
    t = tb.train
    sampling = f"temperature {t.temperature:g}" + (f", top-p {t.top_p:g}" if t.top_p < 1 else "")
    if tb.start_model:
        who = f"{Path(tb.start_model).name} (pretrained, no warm start, {t.precision})"
    else:
        who = (
            f"tiny Llama ({tb.model.hidden_size} wide, {tb.model.num_layers} layers) "
            f"warm-started on {t.task} demonstrations ({tb.sft.steps} steps)"
        )
    return (
        f"Learner: {who}, GRPO ({t.estimator}, {t.loss_aggregation}), {t.steps} steps x "
        f"{t.batch_size} prompts x {t.group_size} rollouts ({sampling}, <= {t.max_new_tokens} "
        f"new tokens), lr {t.lr:g}, reward {t.format_reward or 0:g} for a well-formatted wrong "
        f"answer, pool {t.train_size} {t.task} tasks (levels {t.levels}), held-out "
        f"{t.eval_size} tasks x {t.eval_samples} samples every {t.eval_every} steps.  "
    )


def _check_same_testbed(root: Path, tb: Any, ignore: tuple[str, ...] = ()) -> None:
    """Refuse a runs directory that holds another testbed's runs (resuming them would mix two
    benchmarks in one report); the device may differ (copied run directories)."""
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
                if k != "device"
                and k not in ignore
                and before.get(k, v) != v  # a field the file lacks: newer
            ]
        elif before != fields:
            differ.append(part)
    if differ:
        raise SystemExit(
            f"error: {root} holds runs of another testbed ({', '.join(differ[:4])} differ); "
            "pass a new --runs directory, or the same --scale/--steps/--pool-size as before"
        )


def write_results(
    runs: dict[str, dict[int, Any]],
    start: dict[str, Any],
    entries: list[Any],
    tb: Any,
    out: Path,
    args: argparse.Namespace,
    seconds: float,
) -> dict[str, Any]:
    """JSON + markdown + figures under `out`; real_rl.json (fixed schema) beside them."""
    from frontier_rft.bench.real_rl_report import (
        effect_checks,
        headline_json,
        markdown_report,
        summarize_runs,
        write_json,
    )
    from frontier_rft.reporting.real_rl_plots import (
        plot_effects,
        plot_learning_curves,
        plot_training,
        plot_ttb,
    )

    labels = [e.label for e in entries]
    main = [e.label for e in entries if e.role == "main"]
    summary = summarize_runs(runs, start, {e.label: e.note for e in entries})
    checks = effect_checks(runs, summary)
    stem = args.name
    command = _command(args)
    machine = args.machine or _this_machine(tb.train.device)
    full = {
        "command": command,
        "machine": machine,
        "seconds": seconds,
        "testbed": tb.to_json(),
        "entries": [
            {
                "label": e.label,
                "selector": e.selector,
                "overrides": e.overrides,
                "given": e.given,
                "role": e.role,
                "note": e.note,
                "dynamic_sampling": e.dynamic_sampling,
            }
            for e in entries
        ],
        "start_state": start,
        "summary": summary,
        "effects": checks,
    }
    write_json(out / f"{stem}_full.json", full)
    write_json(out / f"{stem}.json", headline_json(summary, main))
    header = _header(summary, command, machine, tb, len(summary["seeds"]))
    (out / f"{stem}.md").write_text(markdown_report(summary, checks, labels, header))
    plot_learning_curves(runs, main, out / f"{stem}_curves.png")
    plot_ttb(summary, labels, out / f"{stem}_ttb.png")
    plot_training(runs, main, out / f"{stem}_training.png")
    plot_effects(runs, out / f"{stem}_effects.png")
    return summary


def _this_machine(device: str) -> str:
    """CPU count, load and, for a GPU testbed, the GPU's name: where these runs trained."""
    text = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )
    if device != "cpu":
        import torch

        from frontier_rft.training.device import resolve_device

        used = resolve_device(device)
        if used.type == "cuda":
            text = f"{torch.cuda.get_device_name(used)}, {text}"
    return text


def _command(args: argparse.Namespace) -> str:
    parts = [COMMAND]
    flags = ("seeds", "jobs", "selectors", "scale", "device", "steps", "pool_size", "lr")
    for flag in (*flags, "model", "calibrate_lrs", "runs", "out", "name"):
        value = getattr(args, flag, None)  # a Namespace made by hand may lack the newer flags
        if value in (None, "", 0, []):
            continue
        if flag in ("seeds", "calibrate_lrs"):
            value = ",".join(f"{s:g}" if isinstance(s, float) else str(s) for s in value)
        parts.append(f"--{flag.replace('_', '-')} {value}")
    if getattr(args, "calibrate", False):
        parts.append("--calibrate")
    if not args.effects:
        parts.append("--no-effects")
    return " ".join(parts)


def _header(summary: dict[str, Any], command: str, machine: str, tb: Any, seeds: int) -> str:
    t = tb.train
    gain, zero = summary["uniform_gain"], summary["start_zero_variance_share"]
    return "\n".join(
        [
            f"# Real-RL selector benchmark ({seeds} paired seeds)",
            "",
            f"Command: `{command}`  ",
            f"Machine: {machine}  ",
            _learner_line(tb),
            "Given: prompts + the policy's self-embeddings (what every trainer user has), paper "
            "defaults, unless the row says otherwise.  ",
            f"Uniform's held-out gain (final − start): {gain['mean']:+.3f} "
            f"[{gain['ci'][0]:+.3f}, {gain['ci'][1]:+.3f}]; start zero-variance share of the pool "
            f"under {t.group_size} rollouts: {zero['mean']:.3f} "
            f"[{zero['ci'][0]:.3f}, {zero['ci'][1]:.3f}].",
            "",
            "## TTB and BSF (BOTS paper's definitions, paired against uniform)",
        ]
    )


def _headline(summary: dict[str, Any], labels: list[str]) -> list[str]:
    out = []
    for label in labels:
        cell = summary["labels"][label]["ttb100"]
        if cell["mean"] is not None:
            out.append(
                f"{label:16s} TTB100 {cell['mean']:.2f} [{cell['ci'][0]:.2f}, {cell['ci'][1]:.2f}]"
            )
        else:
            out.append(f"{label:16s} TTB100 reached on {cell['reached']}/{len(cell['values'])}")
    return out


def _cmd(args: argparse.Namespace) -> int:
    run_bench(args)
    return 0


def add_command(sub: Any) -> None:
    """Register `bench-rl` on a subparsers object."""
    from frontier_rft.bench.real_rl import SCALES, testbed
    from frontier_rft.cli.common import int_in, positive_int

    p = sub.add_parser(
        "bench-rl",
        help="real-RL selector benchmark: every selector trains the tiny model, paired seeds",
    )
    p.add_argument("--seeds", type=seed_list, default=seed_list("0-4"), help="e.g. 0-4 or 0,2,5")
    p.add_argument(
        "--jobs",
        type=int_in(1, MAX_JOBS),
        default=2,
        help=f"parallel runs (one torch thread each), 1 to {MAX_JOBS}",
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
        default="full",
        choices=SCALES,
        help="testbed size ('full': 2 CPU cores; 'gpu': one CUDA GPU, 4x the rollouts per run; "
        "'toy': seconds, for tests of the machinery; 'gpu-smollm2': the pretrained "
        "SmolLM2-135M-Instruct on arithmetic, one CUDA GPU; 'toy-smollm2': its CPU-sized "
        "version)",
    )
    p.add_argument(
        "--device",
        default="",
        help="torch device of every run, 'cpu', 'cuda', 'cuda:N' or 'auto' "
        "(default: the testbed's: cpu, gpu scale cuda)",
    )
    p.add_argument("--steps", type=int, default=0, help="override the steps per run (0 = testbed)")
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
    p.add_argument("--runs", default="runs/bench-rl", help="run directories (resumable)")
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
        help="run nothing: write the results of the seeds whose runs have all finished",
    )
    p.set_defaults(func=_cmd)
