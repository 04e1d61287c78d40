"""`frontier build-model`, `frontier sft`, `frontier train`, `frontier evaluate`.

Every flag of build-model, sft and train is a field of its config dataclass
(`frontier_rft.training.config`), with the field's docstring as its help. Needs the `train`
extra (torch, transformers, tokenizers); imported only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.cli.simulate import parse_assignments
from frontier_rft.core.config import field_docs
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig

__all__ = ["add_commands"]

_METIS_FLAGS = {
    "metis_lam": "judge_loss_weight",
    "metis_k": "memory_size",
    "metis_m": "pool_multiplier",
}


def _add_config_flags(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """One --flag per dataclass field, typed from the annotation, help from the docstring."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    defaults = cls()
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        help_text = f"{docs.get(f.name, '')} (default: {default!r})"
        hint = hints[f.name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None -> X
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if hint is bool:
            parser.add_argument(
                flag,
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif typing.get_origin(hint) is tuple:
            parser.add_argument(flag, dest=f.name, type=_int_tuple, default=None, help=help_text)
        else:
            parser.add_argument(flag, dest=f.name, type=hint, default=None, help=help_text)


def _int_tuple(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") from exc


def _config_from_args(cls: type, args: argparse.Namespace, **extra: Any) -> Any:
    values = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name, None) is not None
    }
    try:
        return cls(**values, **extra)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc


def _quiet_transformers() -> None:
    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


# ---------------------------------------------------------------------------- commands


def _cmd_build_model(args: argparse.Namespace) -> int:
    _quiet_transformers()
    from frontier_rft.training.tiny_model import build_tiny_lm

    config = _config_from_args(ModelConfig, args)
    model, tokenizer = build_tiny_lm(config, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: LlamaForCausalLM, {params:,} parameters, vocab {len(tokenizer)}")
    return 0


def _cmd_sft(args: argparse.Namespace) -> int:
    _quiet_transformers()
    import torch

    from frontier_rft.training.sft import run_sft

    if args.threads:
        torch.set_num_threads(args.threads)
    config = _config_from_args(SFTConfig, args)
    stats = run_sft(config, args.model, args.out)
    print(
        f"wrote {args.out}: loss {stats['first_loss']:.3f} -> {stats['final_loss']:.3f} "
        f"in {stats['seconds']:.0f} s"
    )
    if args.measure_pool:
        report = measure_start_state(args.out, TrainConfig(), args.measure_pool, args.samples)
        (Path(args.out) / "start_state.json").write_text(json.dumps(report, indent=2) + "\n")
        print(format_start_state(report))
    return 0


def measure_start_state(
    model_dir: str, config: TrainConfig, tasks: int, samples: int
) -> dict[str, Any]:
    """Outcome mix (always / never / mixed solved, per level) on the training pool's first tasks."""
    import numpy as np
    import torch

    from frontier_rft.training.data import load_task, train_split
    from frontier_rft.training.evaluate import outcome_histogram, rollout_scores
    from frontier_rft.training.tiny_model import load_lm

    model, tokenizer = load_lm(model_dir)
    suite = load_task(config.task)
    items = train_split(suite, config.train_size, config.train_seed, config.levels)[:tasks]
    torch.manual_seed(config.seed)
    scores, _ = rollout_scores(
        model, tokenizer, items, suite.verifier, samples, config.max_new_tokens
    )
    levels = np.array([it.level for it in items])
    report: dict[str, Any] = {"levels": config.levels, "all": outcome_histogram(scores)}
    for level in np.unique(levels).tolist():
        report[f"level{level}"] = outcome_histogram(scores[levels == level])
    return report


def format_start_state(report: dict[str, Any]) -> str:
    lines = [
        f"start state ({report['all']['samples']} samples per task, levels {report['levels']}):"
    ]
    lines.append("| split | tasks | always solved | never solved | mixed | mean score |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for key, h in report.items():
        if isinstance(h, dict):
            lines.append(
                f"| {key} | {h['tasks']} | {h['always_solved']:.2f} | {h['never_solved']:.2f} "
                f"| {h['mixed']:.2f} | {h['mean_score']:.3f} |"
            )
    return "\n".join(lines)


def _cmd_train(args: argparse.Namespace) -> int:
    _quiet_transformers()
    from frontier_rft.training.grpo import Trainer

    overrides = parse_assignments(args.set or [], "--set")
    for flag, key in _METIS_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            if (args.selector or TrainConfig.selector) != "metis":
                raise SystemExit(f"--{flag.replace('_', '-')} applies to --selector metis only")
            overrides[key] = value
    if args.resume:
        saved = json.loads((Path(args.out) / "run.json").read_text())["config"]
        if args.steps is not None:
            saved["steps"] = args.steps
        saved = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
        config = TrainConfig(**saved)
        model_dir = json.loads((Path(args.out) / "run.json").read_text())["model_dir"]
    else:
        if args.model is None:
            raise SystemExit("error: frontier train needs --model DIR (a build-model/sft output)")
        config = _config_from_args(TrainConfig, args, selector_overrides=overrides)
        model_dir = args.model
    try:
        trainer = Trainer(config, model_dir, args.out, resume=args.resume)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc
    summary = trainer.train()
    print(json.dumps({k: round(v, 4) for k, v in summary.items()}, indent=1))
    return 0


def _cmd_measure_references(args: argparse.Namespace) -> int:
    _quiet_transformers()
    from frontier_rft.training.references import measure_references, write_references

    config = _config_from_args(TrainConfig, args)
    data = measure_references(
        args.weak, args.strong, config, args.samples, args.seed_sampling, progress=print
    )
    write_references(args.out, data)
    print(
        f"wrote {args.out}: {len(data['keys'])} tasks; pass `--reference-pass-rates {args.out}` "
        "to frontier train --selector bots"
    )
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    if args.compare:
        print(compare_runs(args.compare))
        if len(group_runs(args.compare)) < len(args.compare):  # some selector has seeds
            print("\nMean ± std over the runs of each selector (seeds):\n")
            print(compare_seeds(args.compare))
        print("\nFailed held-out completions by the RLOO paper's taxonomy (appendix B.4):\n")
        print(failure_taxonomy_table(args.compare))
        if args.plot:
            for path in plot_compared_runs(args.compare, Path(args.plot)):
                print(f"wrote {path}")
        return 0
    if not args.model:
        raise SystemExit("error: frontier evaluate needs --model DIR... or --compare RUN...")
    _quiet_transformers()
    import torch

    from frontier_rft.training.data import heldout_split, load_task
    from frontier_rft.training.evaluate import evaluate_items, write_eval
    from frontier_rft.training.tiny_model import load_lm

    defaults = TrainConfig()
    levels = args.levels or defaults.levels
    suite = load_task(args.task)
    items = heldout_split(suite, args.eval_size, args.eval_seed, levels)
    rows = []
    for path in args.model:
        model_dir = Path(path) / "final" if (Path(path) / "final").is_dir() else Path(path)
        model, tokenizer = load_lm(model_dir)
        torch.manual_seed(args.eval_seed)
        result = evaluate_items(
            model, tokenizer, items, suite.verifier, args.samples, args.k, args.max_new_tokens
        )
        if args.out:
            name = Path(path).resolve().name
            write_eval(result, Path(args.out) / name, model=str(model_dir))
        rows.append((str(path), result.summary()))
    print(_table(rows))
    return 0


def run_label(run: str | Path) -> str:
    """A run's selector, marked "+ refs" when BOTS had reference pass rates."""
    config = json.loads((Path(run) / "run.json").read_text())["config"]
    return str(config["selector"]) + (" + refs" if config.get("reference_pass_rates") else "")


def group_runs(runs: Sequence[str]) -> dict[str, list[str]]:
    """Runs grouped by label, in first-seen order (several runs of one label = seeds)."""
    groups: dict[str, list[str]] = {}
    for run in runs:
        groups.setdefault(run_label(run), []).append(run)
    return groups


_SEED_METRICS = (
    ("start eval/mean_score", "start score"),
    ("eval/mean_score", "held-out score"),
    ("eval/pass@1", "pass@1"),
    ("eval/pass@8", "pass@8"),
    ("mean train/effective_task_ratio", "train ETR"),
    ("mean train/mean_abs_advantage", "train mean abs adv"),
    ("mean perf/step_s", "s/step"),
)


def compare_seeds(runs: Sequence[str]) -> str:
    """Markdown table of mean +- std over the runs (seeds) of each selector."""
    rows = {label: [_run_summary(r) for r in group] for label, group in group_runs(runs).items()}
    lines = [
        "| selector | seeds | " + " | ".join(name for _, name in _SEED_METRICS) + " |",
        "|---|---:|" + "---:|" * len(_SEED_METRICS),
    ]
    for label, summaries in rows.items():
        cells = []
        for key, _ in _SEED_METRICS:
            values = [s[key] for s in summaries if isinstance(s.get(key), float)]
            if not values:
                cells.append("-")
            elif len(values) == 1:
                cells.append(f"{values[0]:.3f}")
            else:
                mean = sum(values) / len(values)
                std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
                cells.append(f"{mean:.3f} ± {std:.3f}")
        lines.append(f"| {label} | {len(summaries)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_compared_runs(runs: Sequence[str], out_png: Path) -> list[Path]:
    """The training-runs figure (runs grouped by selector: several seeds -> mean +- std),
    plus one METIS judge figure per METIS run next to it."""
    from frontier_rft.reporting.training_plots import plot_judge_metrics, plot_training_runs

    groups = group_runs(runs)
    written = [plot_training_runs(groups, out_png)]
    for run in groups.get("metis", []):
        name = f"{out_png.stem}-judge-{Path(run).parent.name}-{Path(run).name}.png"
        written.append(plot_judge_metrics(run, out_png.with_name(name)))
    return written


def compare_runs(runs: Sequence[str]) -> str:
    """Table of stored final evaluations and training summaries of `frontier train` runs."""
    rows = []
    for run in runs:
        summary = _run_summary(run)
        rows.append((summary.get("selector", Path(run).name), summary))
    return _table(rows)


def _run_summary(run: str | Path) -> dict[str, Any]:
    """A finished run's final eval.json plus its training means and start score."""
    path = Path(run)
    if not (path / "eval.json").is_file():
        raise SystemExit(
            f"error: {run} has no eval.json: the run has not finished (continue it with "
            f"`frontier train --out {run} --resume`) or is not a frontier train run"
        )
    summary: dict[str, Any] = json.loads((path / "eval.json").read_text())
    steps = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]
    train = [s for s in steps if "train/reward_mean" in s]
    if train:
        for key in ("train/effective_task_ratio", "train/mean_abs_advantage", "perf/step_s"):
            summary[f"mean {key}"] = sum(s[key] for s in train) / len(train)
    starts = [s for s in steps if "eval/mean_score" in s and s["step"] == 0]
    if starts:
        summary["start eval/mean_score"] = starts[0]["eval/mean_score"]
    return summary


def failure_taxonomy_table(runs: Sequence[str]) -> str:
    """Counts and shares of each failure category among a run's failed eval completions."""
    from frontier_rft.tasks.taxonomy import FAILURE_CATEGORIES

    lines = [
        "| run | failed | " + " | ".join(FAILURE_CATEGORIES) + " |",
        "|---|---:|" + "---:|" * len(FAILURE_CATEGORIES),
    ]
    for run in runs:
        path = Path(run)
        summary = json.loads((path / "eval.json").read_text())
        with open(path / "eval_records.jsonl", encoding="utf-8") as fh:
            failures = [json.loads(line)["failure"] for line in fh if line.strip()]
        counts = {c: 0 for c in FAILURE_CATEGORIES}
        for f in failures:
            if f is not None:
                counts[f] = counts.get(f, 0) + 1
        total = sum(counts.values())
        cells = [f"{counts[c]} ({counts[c] / max(total, 1):.0%})" for c in FAILURE_CATEGORIES]
        name = summary.get("selector", path.name)
        lines.append(f"| {name} | {total} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


_COLUMN_ORDER = ("start eval/mean_score", "eval/mean_score", "eval/pass@", "eval/success", "mean ")


def _column_rank(key: str) -> tuple[int, str]:
    for rank, prefix in enumerate(_COLUMN_ORDER):
        if key.startswith(prefix):
            return rank, key
    return len(_COLUMN_ORDER), key


def _table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Markdown table: scores and pass@k first, then training means, failure shares last."""
    keys = sorted(
        {k for _, s in rows for k, v in s.items() if isinstance(v, float)}, key=_column_rank
    )
    head = "| run | " + " | ".join(keys) + " |"
    lines = [head, "|---|" + "---:|" * len(keys)]
    for name, summary in rows:
        cells = [f"{summary[k]:.3f}" if isinstance(summary.get(k), float) else "-" for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- parser


def add_commands(sub: Any) -> None:
    """Register build-model, sft, train and evaluate on a subparsers object."""
    p = sub.add_parser("build-model", help="train a BPE tokenizer and init a tiny Llama model")
    p.add_argument("--out", required=True, help="output directory (a Hugging Face model dir)")
    _add_config_flags(p, ModelConfig)
    p.set_defaults(func=_cmd_build_model)

    p = sub.add_parser("sft", help="supervised warm start on solver demonstrations")
    p.add_argument("--model", required=True, help="input model directory (build-model output)")
    p.add_argument("--out", required=True, help="output model directory")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    p.add_argument(
        "--measure-pool",
        type=int,
        default=0,
        help="afterwards, sample this many training-pool tasks (train defaults) and report the "
        "always/never/mixed-solved mix to start_state.json (0 = skip)",
    )
    p.add_argument("--samples", type=int, default=8, help="samples per task for --measure-pool")
    _add_config_flags(p, SFTConfig)
    p.set_defaults(func=_cmd_sft)

    p = sub.add_parser("train", help="RL fine-tuning (GRPO/Dr.GRPO/RLOO) with a task selector")
    p.add_argument("--model", help="start model directory (sft output)")
    p.add_argument("--out", required=True, help="run directory (metrics, checkpoints, eval)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="selector config override")
    p.add_argument("--metis-lam", type=float, help="METIS lam (judge loss weight; 0 = ablation)")
    p.add_argument("--metis-k", type=int, help="METIS K exemplars (0 = no-ICL ablation)")
    p.add_argument("--metis-m", type=int, help="METIS m (candidates = m * batch size)")
    _add_config_flags(p, TrainConfig, skip=("selector_overrides",))
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser(
        "measure-references",
        help="weak/strong reference pass rates of the training pool (BOTS interpolation)",
    )
    p.add_argument("--weak", required=True, help="weaker reference model directory")
    p.add_argument("--strong", required=True, help="stronger reference model directory")
    p.add_argument(
        "--out", required=True, help="output JSON (frontier train --reference-pass-rates)"
    )
    p.add_argument("--samples", type=int, default=8, help="samples per task and model")
    p.add_argument("--seed-sampling", type=int, default=0, help="torch sampling seed")
    for name in ("task", "levels", "train_size", "train_seed", "max_new_tokens", "temperature"):
        doc = field_docs(TrainConfig)[name]
        flag = "--" + name.replace("_", "-")
        kind = type(getattr(TrainConfig(), name))
        p.add_argument(flag, dest=name, type=kind, default=None, help=f"{doc} (as in train)")
    p.set_defaults(func=_cmd_measure_references)

    p = sub.add_parser("evaluate", help="held-out pass@k of models, or compare finished runs")
    p.add_argument("--model", nargs="+", help="model or run directories to evaluate")
    p.add_argument("--compare", nargs="+", metavar="RUN", help="tabulate finished runs' eval.json")
    p.add_argument("--task", default="countdown", help="task family")
    p.add_argument("--levels", help="levels of the held-out split (default: train's)")
    p.add_argument("--eval-size", type=int, default=128, help="held-out tasks")
    p.add_argument("--eval-seed", type=int, default=2, help="held-out split seed")
    p.add_argument("--samples", type=int, default=8, help="completions per task (n)")
    p.add_argument("--k", type=_int_tuple, default=(1, 4, 8), help="pass@k values, e.g. 1,4,8")
    p.add_argument("--max-new-tokens", type=int, default=40, help="longest completion")
    p.add_argument("--out", help="write eval.json + eval_records.jsonl per model here")
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="with --compare: write a figure of the runs (training ETR and reward, held-out "
        "pass@1; seeds of one selector averaged) and METIS judge figures beside it",
    )
    p.set_defaults(func=_cmd_evaluate)


if __name__ == "__main__":  # pragma: no cover - for running without the lead's wiring
    parser = argparse.ArgumentParser(prog="frontier")
    add_commands(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args()
    sys.exit(int(ns.func(ns)))
