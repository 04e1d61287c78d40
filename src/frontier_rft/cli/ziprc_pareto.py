"""`frontier ziprc pareto`: arguments for `frontier_rft.inference.pareto.pareto_experiment`.

Runs none (best-of-K), prune (each threshold), early_stop (each tau) and utility (each beta)
on the same held-out prompts for several seeds; see docs/inference/decoder.md.
"""

from __future__ import annotations

import argparse
import typing
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import UsageError, floats, int_tuple, model_dir, quiet_transformers
from frontier_rft.core.config import field_docs
from frontier_rft.inference.decoder_config import TINY_COUNTDOWN, DecoderConfig
from frontier_rft.inference.pareto import BASE_FIELDS, PRESETS
from frontier_rft.tasks.suite import TASKS
from frontier_rft.training.config import TrainConfig

__all__ = ["add_pareto_command"]

_DEFAULTS = TrainConfig()


def _base_config(args: argparse.Namespace) -> DecoderConfig:
    changes = {n: getattr(args, n) for n in BASE_FIELDS if getattr(args, n, None) is not None}
    try:
        return PRESETS[args.preset].replace(k=args.k, **changes)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _cmd_pareto(args: argparse.Namespace) -> int:
    from frontier_rft.inference.pareto import operating_points, pareto_experiment

    head = model_dir(args.head, "--head")
    base = _base_config(args)
    try:
        points = operating_points(base, args.prune_threshold, args.tau, args.beta)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    bad = [kb for kb in args.k_bar if not args.k_alloc_min <= kb <= base.k]
    if bad:
        raise UsageError(f"--k-bar values {bad} must lie in [--k-alloc-min, --k]")
    quiet_transformers()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    rows, text = pareto_experiment(
        head, out, points, task=args.task, levels=args.levels, prompts=args.prompts,
        split_seed=args.split_seed, seeds=args.seeds, k_bars=args.k_bar,
        k_alloc_min=args.k_alloc_min, settings={"preset": args.preset},
    )  # fmt: skip
    print(text)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    if not args.no_plot:
        from frontier_rft.reporting.ziprc_plots import pareto_figure, write_plot

        for axis in ("compute", "latency"):
            path = write_plot(pareto_figure(rows, axis), out / f"pareto_{axis}.png")
            print(f"wrote {path}")
    return 0


def add_pareto_command(sub: Any) -> None:
    """Register `pareto` on the `ziprc` subparsers object."""
    p = sub.add_parser(
        "pareto", help="live decoder operating points (none/prune/early_stop/utility) over seeds"
    )
    p.add_argument("--head", required=True, help="head model directory (ziprc train output)")
    p.add_argument("--out", required=True, help="output directory (results.json/.md, PNGs)")
    p.add_argument("--seeds", type=int_tuple, default=(0, 1, 2), help="sampling seeds")
    p.add_argument("--prompts", type=int, default=50, help="held-out prompts")
    p.add_argument("--k", type=int, default=8, help="parallel samples K")
    p.add_argument(
        "--prune-threshold",
        type=floats,
        default=(0.5,),
        help="prune thresholds, one operating point each (0.5 is the paper's)",
    )
    p.add_argument(
        "--tau", type=floats, default=(0.7, 0.8, 0.9, 0.95), help="early_stop taus (paper's)"
    )
    p.add_argument(
        "--beta",
        type=floats,
        default=(0.005, 0.01, 0.02, 0.05),
        help="utility betas (the paper's matched-cost points)",
    )
    p.add_argument(
        "--k-bar",
        type=floats,
        default=(2.0, 4.0),
        help="offline adaptive-K average budgets (empty string = none)",
    )
    p.add_argument(
        "--k-alloc-min", type=int, default=1, help="adaptive-K: fewest samples a prompt gets"
    )
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="tiny",
        help="base decoder settings: tiny (scaled to the tiny Countdown policy: max 40 tokens, "
        "warmup 4, interval 2, end window 4) or paper (1024, 128, 32, 16); the flags below "
        "override it",
    )
    docs = field_docs(DecoderConfig)
    hints = typing.get_type_hints(DecoderConfig)
    for name in BASE_FIELDS:
        kind: Any = int_tuple if name == "stop_ids" else hints[name]
        p.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=kind,
            default=None,
            help=f"{docs[name]} (default: the preset's; tiny: {getattr(TINY_COUNTDOWN, name)!r}, "
            f"paper: {getattr(PRESETS['paper'], name)!r})",
        )
    p.add_argument("--task", default="countdown", choices=TASKS, help="task family")
    p.add_argument("--levels", default=_DEFAULTS.levels, help="task levels")
    p.add_argument(
        "--split-seed", type=int, default=_DEFAULTS.eval_seed, help="held-out split seed"
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNGs")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's)")
    p.set_defaults(func=_cmd_pareto)
