"""`frontier ziprc train` and `frontier ziprc eval`: the ZIP-RC-Lite head of a frozen policy.

train: sample K completions for training-split prompts from the plain policy, score them,
attach the reserved R x L head (untied, cloned output layer) and train only it; writes a
head model directory whose ziprc.json is written last (its presence means the head is
complete). eval: sample held-out rollouts (from the head model with the reserved ids masked,
or from another --policy for a transfer check), read the head along them and print the
calibration and offline-selection tables; writes calibration.json and calibration.png.
Needs the `train` extra (torch, transformers); the plot needs `plot` (matplotlib).
See docs/inference/ziprc.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from frontier_rft.cli.common import (
    UsageError,
    add_config_flags,
    config_from_args,
    int_tuple,
    model_dir,
    positive_int,
    quiet_transformers,
)
from frontier_rft.cli.ziprc_pareto import add_pareto_command
from frontier_rft.core.jsonsafe import dumps_strict, load_json_file
from frontier_rft.inference.spec import STRUCTURED_REWARDS
from frontier_rft.inference.train_head import HeadTrainConfig
from frontier_rft.lm.decoding import Sampling
from frontier_rft.tasks.suite import TASKS
from frontier_rft.training.config import TrainConfig

__all__ = ["add_commands"]

_DEFAULTS = TrainConfig()


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps_strict(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _setup(args: argparse.Namespace) -> None:
    quiet_transformers()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)


_SPLIT_KEYS = ("task", "levels", "split_seed")
"""Flags that define a split; stored with its rollouts (a resumed file must match them)."""


def _sampling(args: argparse.Namespace) -> Sampling:
    """The rollouts' sampling flags, refused before any model loads."""
    try:
        return Sampling(args.samples, args.max_new_tokens, args.temperature)
    except ValueError as exc:
        raise UsageError(f"{exc} (--samples, --max-new-tokens, --temperature)") from None


def _rollouts(
    args: argparse.Namespace,
    sampling: Sampling,
    policy: Any,
    tokenizer: Any,
    items: Any,
    suite: Any,
    split: str,
    source: str,
    suppress: Any,
    path: Path,
) -> Any:
    """Collect (or resume, from `path`) `policy`'s rollouts of a split's items."""
    from frontier_rft.inference.rollouts import collect_rollouts

    meta = {"policy": source, "split": split}
    meta.update({key: getattr(args, key) for key in _SPLIT_KEYS})
    return collect_rollouts(
        policy,
        tokenizer,
        items,
        suite.verifier,
        sampling,
        seed=args.rollout_seed,
        suppress=suppress,
        path=path,
        meta=meta,
    )


def _cmd_train(args: argparse.Namespace) -> int:
    policy_dir = model_dir(args.model, "--model")
    sampling = _sampling(args)
    extra = {"reward_values": STRUCTURED_REWARDS} if args.structured else {}
    config = config_from_args(HeadTrainConfig, args, **extra)
    _setup(args)
    from frontier_rft.inference.head import SPEC_FILE, save_head_model
    from frontier_rft.inference.train_head import train_head
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import load_task, train_split

    out = Path(args.out)
    (out / SPEC_FILE).unlink(missing_ok=True)  # no stale "head is ready" marker while we work
    model, tokenizer = load_lm(policy_dir)
    suite = load_task(args.task)
    items = train_split(suite, args.prompts, args.split_seed, args.levels)
    rollouts_path = Path(args.rollouts) if args.rollouts else out / "train_rollouts.jsonl"
    rollouts = _rollouts(
        args, sampling, model, tokenizer, items, suite, "train", str(args.model), None,
        rollouts_path,
    )  # fmt: skip
    model, spec, stats = train_head(model, tokenizer, rollouts, config)
    _write_json(out / "train_stats.json", stats)
    summary = {k: v for k, v in stats.items() if k not in ("loss", "lr")}
    # save_head_model writes ziprc.json after the weights: pollers may load once it exists.
    save_head_model(
        model, tokenizer, spec, out, policy=str(args.model), rollouts=str(rollouts_path), **summary
    )
    print(
        f"wrote {out}: head {spec.num_rewards} rewards x {spec.num_lengths} length bins at ids "
        f"{spec.start_id}..{spec.end_id - 1}; {stats['sequences']} rollouts "
        f"({stats['prompts']} prompts x {stats['samples']}, success {stats['success_rate']:.3f}); "
        f"CE {stats['initial_loss']:.3f} -> {stats['final_loss']:.3f} in {stats['steps']} steps, "
        f"{stats['seconds']:.1f} s"
    )
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    model_dir(args.head, "--head")
    if args.policy:
        model_dir(args.policy, "--policy")
    sampling = _sampling(args)
    _setup(args)
    from frontier_rft.inference.calibration import (
        calibration_report,
        countdown_answer_value,
        format_calibration_table,
    )
    from frontier_rft.inference.head import SPEC_FILE, load_head_model
    from frontier_rft.inference.train_head import rollout_slice_logits
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.tasks.suite import heldout_split, load_task

    model, tokenizer, spec = load_head_model(args.head)
    out = Path(args.out) if args.out else Path(args.head) / "eval"
    suite = load_task(args.task)
    items = heldout_split(suite, args.prompts, args.split_seed, args.levels)
    if args.policy:  # transfer: another policy's rollouts, read by this head
        policy, suppress, source = load_lm(args.policy)[0], None, str(args.policy)
    else:  # the head model's own real-vocabulary distribution is the policy's
        info = load_json_file(Path(args.head) / SPEC_FILE, "a ZIP-RC head's spec", max_depth=8)
        if not isinstance(info, dict):
            raise ValueError(f"{Path(args.head) / SPEC_FILE} is not a JSON object")
        policy, suppress, source = model, spec, str(info.get("policy", args.head))
    rollouts_path = Path(args.rollouts) if args.rollouts else out / "rollouts.jsonl"
    rollouts = _rollouts(
        args, sampling, policy, tokenizer, items, suite, "heldout", source, suppress,
        rollouts_path,
    )  # fmt: skip
    rollouts.check_tokens(spec)  # the paper's harness invariant: no reserved id was emitted
    logits = rollout_slice_logits(model, spec, rollouts, progress=True)
    answers = None
    if args.task == "countdown":
        answers = [
            [countdown_answer_value(ref, text) for text in row]
            for ref, row in zip(rollouts.references, rollouts.texts, strict=True)
        ]
    ks = [k for k in args.k if k <= rollouts.samples]
    report = calibration_report(spec, logits, rollouts.rewards, answers, ks)
    report.update({key: rollouts.meta[key] for key in ("policy", "split", *_SPLIT_KEYS)})
    report.update(head=str(args.head), reserved_ids_emitted=0, spec=spec.to_dict())
    _write_json(out / "calibration.json", report)
    print(format_calibration_table(report))
    print(f"\nwrote {out / 'calibration.json'}")
    if not args.no_plot:
        from frontier_rft.reporting.ziprc_plots import calibration_figure, write_plot

        path = write_plot(calibration_figure(report), out / "calibration.png")
        print(f"wrote {path}")
    return 0


def _common(p: argparse.ArgumentParser, prompts: int, samples: int, split_seed: int) -> None:
    p.add_argument("--task", default="countdown", choices=TASKS, help="task family")
    p.add_argument("--levels", default=_DEFAULTS.levels, help="task levels")
    p.add_argument("--prompts", type=int, default=prompts, help="prompts")
    p.add_argument("--samples", type=positive_int, default=samples, help="completions per prompt")
    p.add_argument("--split-seed", type=int, default=split_seed, help="split seed")
    p.add_argument(
        "--max-new-tokens", type=int, default=_DEFAULTS.max_new_tokens, help="longest completion"
    )
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    p.add_argument("--rollout-seed", type=int, default=0, help="torch seed of the sampling")
    p.add_argument(
        "--rollouts",
        help="rollout file (JSON lines; resumed when it matches, else an error) (default: "
        "inside the output directory)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's)")


def add_commands(sub: Any) -> None:
    """Register `ziprc` with its `train`, `eval` and `pareto` subcommands."""
    z = sub.add_parser("ziprc", help="ZIP-RC-Lite: train/evaluate a reward+length head")
    zsub = z.add_subparsers(dest="ziprc_command", required=True)

    p = zsub.add_parser("train", help="train a head on the frozen policy's own rollouts")
    p.add_argument("--model", required=True, help="policy model directory (sft/train output)")
    p.add_argument("--out", required=True, help="head model directory to write")
    p.add_argument(
        "--structured",
        action="store_true",
        help="3 reward states (0 incoherent, 0.1 well-formatted wrong, 1 correct)",
    )
    _common(p, prompts=256, samples=4, split_seed=_DEFAULTS.train_seed)
    add_config_flags(p, HeadTrainConfig, skip=("reward_values",))
    p.set_defaults(func=_cmd_train)

    p = zsub.add_parser("eval", help="calibration and offline selection on held-out rollouts")
    p.add_argument("--head", required=True, help="head model directory (ziprc train output)")
    p.add_argument("--out", help="output directory (default: HEAD/eval)")
    p.add_argument(
        "--policy",
        help="sample the rollouts from this policy instead, a cross-policy transfer check "
        "(default: the head model's own policy)",
    )
    p.add_argument("--k", type=int_tuple, default=(4, 8), help="selection K values")
    p.add_argument("--no-plot", action="store_true", help="skip calibration.png")
    _common(p, prompts=50, samples=32, split_seed=_DEFAULTS.eval_seed)
    p.set_defaults(func=_cmd_eval)

    add_pareto_command(zsub)
