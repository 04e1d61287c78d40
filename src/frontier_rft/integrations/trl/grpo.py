"""GRPO (or RLOO) with a frontier-rft selector, run from one YAML file, like TRL's own scripts.

    accelerate launch -m frontier_rft.integrations.trl.grpo --config grpo_frontier.yaml
    python -m frontier_rft.integrations.trl.grpo --config grpo_frontier.yaml --max_steps 10

The YAML holds TRL's `ScriptArguments`, `GRPOConfig` (or `RLOOConfig`) and `ModelConfig`
fields, frontier-rft's `FrontierConfig` fields, and this script's own (`reward_funcs`,
`trainer`), side by side; flags on the command line override the file. An example is
`examples/trl/grpo_frontier.yaml`; every key is documented in `--help`. A mistake (an
unknown key or selector, a missing column or file) ends in one line that says what to change;
`FRONTIER_DEBUG=1` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from frontier_rft.logs import env_level, show_messages

__all__ = ["FrontierScriptArguments", "answer_match", "cli", "main", "make_parser"]

DEBUG_ENV = "FRONTIER_DEBUG"
"""Set to 1 to see the traceback of an error instead of its one-line message."""


def answer_match(completions: list[Any], answer: list[Any], **kwargs: Any) -> list[float]:
    """1.0 when the row's `answer` appears in the completion's text, else 0.0."""
    out = []
    for completion, expected in zip(completions, answer, strict=True):
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        out.append(float(str(expected).strip() in text))
    return out


REWARDS: dict[str, Callable[..., list[float]]] = {"answer_match": answer_match}
"""Reward functions by name; any other entry is a dotted import path."""


@dataclass
class FrontierScriptArguments:
    """What this script adds to TRL's ScriptArguments."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["answer_match"],
        metadata={"help": "Reward functions: answer_match, or dotted import paths (my.mod.fn)."},
    )
    trainer: Literal["grpo", "rloo"] = field(
        default="grpo", metadata={"help": "TRL trainer: grpo (GRPOConfig) or rloo (RLOOConfig)."}
    )
    dataset_files: list[str] | None = field(
        default=None,
        metadata={"help": "Local data files (json/jsonl/csv/parquet) instead of dataset_name."},
    )


def _reward(name: str) -> Callable[..., Any]:
    if name in REWARDS:
        return REWARDS[name]
    module, _, attr = name.rpartition(".")
    if not module:
        raise ValueError(f"unknown reward function {name!r}: {sorted(REWARDS)} or a dotted path")
    sys.path.insert(0, os.getcwd())
    try:
        func: Callable[..., Any] = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"reward function {name!r} cannot be imported ({exc}); name answer_match or a "
            "dotted path my.module.function importable from the working directory"
        ) from exc
    return func


def _trainer_kind(argv: Sequence[str]) -> str:
    """grpo or rloo, from the command line or the --config file (decides the config class)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--trainer" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--trainer="):
            return arg.split("=", 1)[1]
    if "--config" in args and args.index("--config") + 1 < len(args):
        import yaml

        # TRL's own parser reads this file next (yaml.safe_load, aliases allowed): so here.
        with open(args[args.index("--config") + 1], encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        return str(data.get("trainer", "grpo")) if isinstance(data, dict) else "grpo"
    return "grpo"


def make_parser(kind: str = "grpo") -> Any:
    """TrlParser over TRL's dataclasses, FrontierConfig and this script's arguments."""
    from frontier_rft.integrations.trl.config import FrontierConfig

    trl: Any = importlib.import_module("trl")  # lazy exports: typed as Any
    if kind not in ("grpo", "rloo"):
        raise ValueError(f"trainer must be grpo or rloo, got {kind!r}")
    train_config = trl.GRPOConfig if kind == "grpo" else trl.RLOOConfig
    return trl.TrlParser(
        (
            trl.ScriptArguments,
            FrontierScriptArguments,
            train_config,
            trl.ModelConfig,
            FrontierConfig,
        )
    )


def main(argv: Sequence[str] | None = None) -> Any:
    """Parse, build the trainer and train; returns the trainer."""
    from datasets import load_dataset

    from frontier_rft.integrations.trl.trainer import FrontierGRPOTrainer, FrontierRLOOTrainer

    args = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(_trainer_kind(args))
    script, extra, training, model_args, frontier = parser.parse_args_and_config(args)
    model_init_kwargs = {
        "revision": model_args.model_revision,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        **(training.model_init_kwargs or {}),
    }
    training.model_init_kwargs = model_init_kwargs
    if extra.dataset_files:
        suffix = extra.dataset_files[0].rsplit(".", 1)[-1]
        builders = {"jsonl": "json", "json": "json", "csv": "csv", "parquet": "parquet"}
        if suffix not in builders:
            raise ValueError(
                f"dataset_files: {extra.dataset_files[0]!r} is not a .jsonl, .json, .csv or "
                ".parquet file"
            )
        builder = builders[suffix]
        dataset = load_dataset(builder, data_files=extra.dataset_files)
    elif script.dataset_name:
        dataset = load_dataset(script.dataset_name, name=script.dataset_config)
    else:
        raise ValueError("give dataset_name or dataset_files (in the YAML or on the command line)")
    cls = FrontierGRPOTrainer if extra.trainer == "grpo" else FrontierRLOOTrainer
    trainer = cls(
        model=model_args.model_name_or_path,
        reward_funcs=[_reward(name) for name in extra.reward_funcs],
        args=training,
        train_dataset=dataset[script.dataset_train_split],
        peft_config=importlib.import_module("trl").get_peft_config(model_args),
        frontier=frontier,
    )
    trainer.train(resume_from_checkpoint=training.resume_from_checkpoint)
    trainer.save_model(training.output_dir)
    trainer.accelerator.print(f"frontier-rft: model saved to {training.output_dir}")
    return trainer


def cli(argv: Sequence[str] | None = None) -> int:
    """`python -m frontier_rft.integrations.trl.grpo`: `main`, with a user's mistake (a
    ValueError, a missing file or module) as one line on stderr and exit status 2."""
    try:
        with show_messages(env_level()):  # the selector it built, and from what evidence
            main(argv)
    except (ValueError, OSError, ImportError) as exc:
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        text = " ".join(str(exc).split()) or type(exc).__name__
        sys.stderr.write(f"frontier_rft.integrations.trl.grpo: error: {text}\n")
        sys.stderr.write(f"(set {DEBUG_ENV}=1 to see where it came from)\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
