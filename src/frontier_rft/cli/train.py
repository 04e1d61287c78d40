"""`frontier build-model`, `frontier sft`, `frontier train`, `frontier evaluate`.

Every flag of build-model, sft and train is a field of its config dataclass
(`frontier_rft.training.config`), with the field's docstring as its help; train's step
sampler flags (--dynamic-sampling, --allocation, --screen, ...) are sugar for its `sampler`
and `sampler_config` (`frontier_rft.sampling.sampler_flags.SamplerFlags`). Needs the `train`
extra (torch, transformers, tokenizers); imported only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import (
    Interrupted,
    UsageError,
    add_config_flags,
    add_sampler_config_flag,
    config_from_args,
    int_tuple,
    model_dir,
    new_model_dir,
    parse_assignments,
    positive_int,
    quiet_transformers,
    run_dir,
    sampler_settings_arg,
)
from frontier_rft.core.advantages import ESTIMATORS
from frontier_rft.core.config import field_docs
from frontier_rft.lm.decoding import Sampling
from frontier_rft.reporting.runs import (
    compare_runs,
    compare_seeds,
    failure_taxonomy_table,
    group_runs,
    plot_compared_runs,
    runs_table,
)
from frontier_rft.sampling.sampler_flags import (
    FLAG_NAMES,
    SAMPLER_NAMES,
    TRAIN_ROUND_RULES,
    SamplerFlags,
    legacy_train_fields,
    sampler_settings,
)
from frontier_rft.selectors import SELECTORS, METISSelector
from frontier_rft.selectors.registry import check_selector_name
from frontier_rft.tasks.suite import TASKS
from frontier_rft.training.config import (
    BACKFILL_MODES,
    DEFAULT_LEVELS,
    LOSS_AGGREGATIONS,
    PAD_ROWS,
    PRECISIONS,
    ModelConfig,
    SFTConfig,
    TrainConfig,
    train_config,
)
from frontier_rft.training.run_info import RESUME_MAY_CHANGE, read_run_info

__all__ = ["add_commands"]

_METIS_FLAGS = {
    "metis_lam": "judge_loss_weight",
    "metis_k": "memory_size",
    "metis_m": "pool_multiplier",
}
"""--metis-* flag -> the field of METIS's config it sets (as --set KEY=VALUE would)."""
CHOICES = {
    "task": TASKS,
    "estimator": ESTIMATORS,
    "loss_aggregation": LOSS_AGGREGATIONS,
    "precision": PRECISIONS,
    "dapo_round_rule": TRAIN_ROUND_RULES,
    "sampler": SAMPLER_NAMES,
    "backfill": BACKFILL_MODES,
    "pad_rows": PAD_ROWS,
}
"""Config fields whose flags take one of a fixed set of values (shown in --help). Not the
selector: _cmd_train checks it, naming the closest one or how to get the former 'dapo'."""


# ---------------------------------------------------------------------------- commands


def _cmd_build_model(args: argparse.Namespace) -> int:
    config = config_from_args(ModelConfig, args)
    new_model_dir(args.out, args.overwrite)
    quiet_transformers()
    from frontier_rft.training.tiny_model import build_tiny_lm

    model, tokenizer = build_tiny_lm(config, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: LlamaForCausalLM, {params:,} parameters, vocab {len(tokenizer)}")
    return 0


def _cmd_sft(args: argparse.Namespace) -> int:
    source = model_dir(args.model, "--model")
    config = config_from_args(SFTConfig, args)
    out = new_model_dir(args.out, args.overwrite)
    quiet_transformers()
    import torch

    from frontier_rft.training.sft import run_sft
    from frontier_rft.training.start_state import format_start_state, measure_start_state

    if args.threads:
        torch.set_num_threads(args.threads)
    (out / "start_state.json").unlink(missing_ok=True)  # an overwritten model's measurement
    stats = run_sft(config, source, args.out)
    print(
        f"wrote {args.out}: loss {stats['first_loss']:.3f} -> {stats['final_loss']:.3f} "
        f"in {stats['seconds']:.0f} s"
    )
    if args.measure_pool:
        report = measure_start_state(
            args.out, TrainConfig(), args.measure_pool, args.samples, progress=True
        )
        (Path(args.out) / "start_state.json").write_text(json.dumps(report, indent=2) + "\n")
        print(format_start_state(report))
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    overrides = parse_assignments(args.set or [], "--set")
    for flag, key in _METIS_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            if (args.selector or TrainConfig.selector) != METISSelector.name:
                raise UsageError(
                    f"--{flag.replace('_', '-')} applies to --selector {METISSelector.name} only"
                )
            overrides[key] = value
    if args.resume:
        config, source = _resumed_config(args)
    else:
        if args.selector is not None and args.selector not in SELECTORS:
            try:  # names the closest selector, or says how to get the former 'dapo'
                check_selector_name(args.selector)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        if args.model is None:
            raise UsageError(
                "frontier train needs --model DIR (a build-model or sft output), or --resume "
                "to continue the run in --out"
            )
        source = model_dir(args.model, "--model")
        config = config_from_args(
            TrainConfig, args, selector_overrides=overrides, **_sampler_args(args)
        )
    quiet_transformers()
    from frontier_rft.training.grpo import Trainer

    try:
        trainer = Trainer(config, source, args.out, resume=args.resume, progress=True)
        summary = trainer.train()
    except KeyboardInterrupt:
        raise Interrupted(_interrupted(args.out)) from None
    print(json.dumps({k: round(v, 4) for k, v in summary.items()}, indent=1))
    return 0


def _interrupted(out: str) -> str:
    """What an interrupted `frontier train` prints: how to continue the run, when it can be."""
    if (Path(out) / "checkpoints" / "latest").is_file():
        return (
            "interrupted; continue the run from its last checkpoint with "
            f"`frontier train --out {shlex.quote(str(out))} --resume`"
        )
    return "interrupted before the first checkpoint; run the same command again to start over"


def _sampler_args(args: argparse.Namespace) -> dict[str, Any]:
    """TrainConfig's sampler and sampler_config from --sampler and --sampler-config, or from
    the flags that spell them (--dynamic-sampling, --allocation, --screen, ...); {} when none
    is given. UsageError when both spellings are given."""
    flags = {n: getattr(args, n) for n in FLAG_NAMES if getattr(args, n, None) is not None}
    settings = sampler_settings_arg(args)
    if not flags:
        named = {} if args.sampler is None else {"sampler": args.sampler}
        return {**named, "sampler_config": settings}
    if args.sampler is not None or settings:
        given = ", ".join(f"--{n.replace('_', '-')}" for n in flags)
        raise UsageError(
            f"{given} set the step sampler as --sampler and --sampler-config do: give one or "
            "the other"
        )
    try:
        sampler, config = SamplerFlags(**flags).sampler()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return {"sampler": sampler, "sampler_config": config}


def _resumed_config(args: argparse.Namespace) -> tuple[Any, Path]:
    """The saved run's TrainConfig, with the flags a resume may change; UsageError when a
    flag (or a --config value) asks for another setting than the saved one."""
    path = run_dir(args.out) / "run.json"
    try:
        run = read_run_info(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:  # a run written before TrainConfig.sampler holds the flat fields: translated
        saved: dict[str, Any] = legacy_train_fields(run["config"])
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: its config is not a valid TrainConfig ({exc})") from None
    changed = [
        f"--{f.name.replace('_', '-')}"
        for f in dataclasses.fields(TrainConfig)
        if f.name not in (*RESUME_MAY_CHANGE, "sampler", "sampler_config")
        and getattr(args, f.name, None) is not None
        and _as_json(getattr(args, f.name)) != saved.get(f.name)
    ]
    asked = _sampler_args(args)
    if "sampler" in asked and _settings(asked) != _settings(saved):
        changed.append("--sampler/--sampler-config (or the flags that set them)")
    overrides = parse_assignments(args.set or [], "--set")
    overrides.update(
        {k: getattr(args, f) for f, k in _METIS_FLAGS.items() if getattr(args, f) is not None}
    )
    saved_overrides = saved.get("selector_overrides") or {}
    if any(_as_json(v) != _as_json(saved_overrides.get(k)) for k, v in overrides.items()):
        changed.append("--set/--metis-*")
    if args.model is not None and Path(args.model).resolve() != Path(run["model_dir"]).resolve():
        changed.append("--model")
    if changed:
        raise UsageError(
            f"--resume continues the saved run: drop {', '.join(changed)} (only --steps, "
            "--device and --threads may change), or start a new --out"
        )
    for name in RESUME_MAY_CHANGE:
        if getattr(args, name, None) is not None:
            saved[name] = getattr(args, name)
    try:
        config = train_config(saved)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: its config is not a valid TrainConfig ({exc})") from None
    return config, model_dir(run["model_dir"], "the run's model_dir")


def _settings(fields: dict[str, Any]) -> tuple[str, Any]:
    """A sampler as its name and its resolved config (None when it does not build)."""
    name = fields.get("sampler", TrainConfig.sampler)
    try:
        return name, sampler_settings(name, fields.get("sampler_config") or {})
    except ValueError:
        return name, None


def _as_json(value: Any) -> Any:
    """A value as run.json holds it (tuples become lists), for comparing with the saved run."""
    return json.loads(json.dumps(value))


def _cmd_measure_references(args: argparse.Namespace) -> int:
    weak, strong = model_dir(args.weak, "--weak"), model_dir(args.strong, "--strong")
    config = config_from_args(TrainConfig, args)
    quiet_transformers()
    from frontier_rft.training.references import measure_references, write_references

    data = measure_references(
        weak, strong, config, args.samples, args.seed_sampling, progress=print
    )
    write_references(args.out, data)
    print(
        f"wrote {args.out}: {len(data['keys'])} tasks; pass `--reference-pass-rates {args.out}` "
        "to frontier train --selector bots"
    )
    return 0


_EVAL_DEFAULTS: dict[str, Any] = {
    "task": "countdown",
    "levels": "",  # "": the task's train levels (DEFAULT_LEVELS), resolved below
    "eval_size": 128,
    "eval_seed": 2,
    "samples": 8,
    "k": (1, 4, 8),
    "max_new_tokens": 40,
    "temperature": 1.0,
    "top_p": 1.0,
}
"""Defaults of the `evaluate --model` flags (None in the parser: a flag given is known)."""
_MODEL_ONLY = (*_EVAL_DEFAULTS, "out")
"""evaluate flags that sample models (--model); --compare reads stored evaluations."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _cmd_evaluate(args: argparse.Namespace) -> int:
    if args.compare:
        _check_compare_flags(args)
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
        raise UsageError("frontier evaluate needs --model DIR... or --compare RUN...")
    if args.plot:
        raise UsageError(
            "--plot draws the runs of evaluate --compare RUN...; evaluate --model writes no "
            "figure: drop --plot"
        )
    opts = {
        k: v if getattr(args, k) is None else getattr(args, k) for k, v in _EVAL_DEFAULTS.items()
    }
    if not opts["levels"]:
        opts["levels"] = DEFAULT_LEVELS[opts["task"]]["train"]
    samples, ks = opts["samples"], opts["k"]
    if not ks or any(not 1 <= k <= samples for k in ks):
        raise UsageError(
            f"--k {','.join(map(str, ks))}: every k must lie in [1, --samples {samples}]; "
            "lower --k or raise --samples"
        )
    try:
        sampling = Sampling(samples, opts["max_new_tokens"], opts["temperature"], opts["top_p"])
    except ValueError as exc:
        raise UsageError(f"{exc} (--samples, --max-new-tokens, --temperature, --top-p)") from None
    dirs = []
    for path in args.model:  # a run directory means its final model
        final = Path(path) / "final"
        dirs.append(model_dir(final if final.is_dir() else path, "--model"))
    quiet_transformers()
    import torch

    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import heldout_split, load_task
    from frontier_rft.training.evaluate import evaluate_items, write_eval

    suite = load_task(opts["task"])
    items = heldout_split(suite, opts["eval_size"], opts["eval_seed"], opts["levels"])
    rows = []
    for path, directory in zip(args.model, dirs, strict=True):
        model, tokenizer = load_lm(directory)
        torch.manual_seed(opts["eval_seed"])
        name = Path(path).resolve().name
        result = evaluate_items(
            model, tokenizer, items, suite.verifier, sampling, ks=ks, progress=True,
            desc=f"eval {name}",
        )  # fmt: skip
        if args.out:
            write_eval(
                result,
                Path(args.out) / name,
                model=str(directory),
                temperature=sampling.temperature,
                top_p=sampling.top_p,
            )
        rows.append((str(path), result.summary()))
    print(runs_table(rows))
    return 0


def _check_compare_flags(args: argparse.Namespace) -> None:
    """--compare tabulates stored evaluations: refuse the flags that would sample models."""
    if args.model:
        raise UsageError(
            "give either --model DIR... (evaluate models) or --compare RUN..., not both"
        )
    given = [_flag(name) for name in _MODEL_ONLY if getattr(args, name) is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)}: not used by evaluate --compare, which tabulates the runs' "
            f"stored evaluations; drop {'them' if len(given) > 1 else 'it'}, or evaluate "
            "models with --model DIR..."
        )
    for run in args.compare:
        path = Path(run)
        if not path.is_dir():
            state = "is not a directory" if path.exists() else "does not exist"
            raise UsageError(
                f"--compare {run} {state} (resolved from {Path.cwd()}); pass frontier train "
                "run directories (the --out of each run)"
            )


# ---------------------------------------------------------------------------- parser


def add_commands(sub: Any) -> None:
    """Register build-model, sft, train, measure-references and evaluate."""
    p = sub.add_parser("build-model", help="train a BPE tokenizer and init a tiny Llama model")
    p.add_argument("--out", required=True, help="output directory (a Hugging Face model dir)")
    p.add_argument("--overwrite", action="store_true", help="replace a model already in --out")
    add_config_flags(p, ModelConfig, choices=CHOICES)
    p.set_defaults(func=_cmd_build_model)

    p = sub.add_parser("sft", help="supervised warm start on solver demonstrations")
    p.add_argument("--model", required=True, help="input model directory (build-model output)")
    p.add_argument("--out", required=True, help="output model directory")
    p.add_argument("--overwrite", action="store_true", help="replace a model already in --out")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's)")
    p.add_argument(
        "--measure-pool",
        type=int,
        default=0,
        help="afterwards, sample this many training-pool tasks (train defaults) and report the "
        "always/never/mixed-solved mix to start_state.json (0 = skip)",
    )
    p.add_argument(
        "--samples", type=positive_int, default=8, help="samples per task for --measure-pool"
    )
    add_config_flags(p, SFTConfig, choices=CHOICES)
    p.set_defaults(func=_cmd_sft)

    p = sub.add_parser("train", help="RL fine-tuning (GRPO/Dr.GRPO/RLOO) with a task selector")
    p.add_argument("--model", help="start model directory, local (sft output) (default: none)")
    p.add_argument("--out", required=True, help="run directory (metrics, checkpoints, eval)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out exactly")
    p.add_argument(
        "--config",
        metavar="FILE.yaml",
        help="flag values from a YAML file, e.g. {selector: bots, steps: 300, set: {lam: 0.2}}; "
        "flags given here win (default: none)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="selector config override, see `frontier selectors NAME` (default: none)",
    )
    p.add_argument("--metis-lam", type=float, help="METIS lam, judge loss weight (default: 0.01)")
    p.add_argument("--metis-k", type=int, help="METIS K exemplars; 0 = no-ICL (default: 3)")
    p.add_argument("--metis-m", type=int, help="METIS m, candidates = m x batch (default: 8)")
    add_config_flags(p, TrainConfig, skip=("selector_overrides", "sampler_config"), choices=CHOICES)
    add_sampler_config_flag(p)
    add_config_flags(p, SamplerFlags, choices=CHOICES)
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
    p.add_argument("--samples", type=positive_int, default=8, help="samples per task and model")
    p.add_argument("--seed-sampling", type=int, default=0, help="torch sampling seed")
    defaults = TrainConfig()
    for name in (
        "task", "levels", "train_size", "train_seed", "max_new_tokens", "temperature", "top_p",
    ):  # fmt: skip
        doc = field_docs(TrainConfig)[name]
        p.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=type(getattr(defaults, name)),
            default=None,
            choices=CHOICES.get(name),
            help=f"{doc} (default: {getattr(defaults, name)}, as in train)",
        )
    p.set_defaults(func=_cmd_measure_references, out_is_file=True)

    p = sub.add_parser("evaluate", help="held-out pass@k of models, or compare finished runs")
    p.add_argument("--model", nargs="+", help="model or run directories (default: none)")
    p.add_argument(
        "--compare", nargs="+", metavar="RUN", help="tabulate finished runs (default: none)"
    )
    d = _EVAL_DEFAULTS
    with_model = "; with --model"
    p.add_argument("--task", choices=TASKS, help=f"task family{with_model} (default: {d['task']})")
    p.add_argument(
        "--levels",
        help=f"held-out levels{with_model} (default: the task's train levels: "
        + ", ".join(f"{task} {levels['train']}" for task, levels in DEFAULT_LEVELS.items())
        + ")",
    )
    for flag, kind, what in (
        ("--eval-size", int, "held-out tasks"),
        ("--eval-seed", int, "held-out split seed"),
        ("--samples", positive_int, "completions per task (n)"),
        ("--max-new-tokens", int, "longest completion"),
        ("--temperature", float, "sampling temperature, as the run sampled"),
        ("--top-p", float, "nucleus of the sampling, as the run sampled"),
    ):
        default = d[flag.removeprefix("--").replace("-", "_")]
        p.add_argument(flag, type=kind, help=f"{what}{with_model} (default: {default})")
    p.add_argument(
        "--k",
        type=int_tuple,
        help=f"pass@k values, each <= --samples, e.g. 1,4,8{with_model} (default: 1,4,8)",
    )
    p.add_argument(
        "--out",
        help="with --model: write eval.json + eval_records.jsonl per model here (default: no "
        "files)",
    )
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="with --compare: a figure of the runs (training ETR and reward, held-out "
        "pass@1; seeds of one selector averaged) and METIS judge figures (default: none)",
    )
    p.set_defaults(func=_cmd_evaluate)
