"""GRPO (or RLOO) with a frontier-rft selector, run from one YAML file, like TRL's own scripts.

    accelerate launch -m frontier_rft.integrations.trl.grpo --config grpo_frontier.yaml
    python -m frontier_rft.integrations.trl.grpo --config grpo_frontier.yaml --max_steps 10

The YAML holds TRL's `ScriptArguments`, `GRPOConfig` (or `RLOOConfig`) and `ModelConfig`
fields, frontier-rft's `FrontierConfig` fields, and this script's own (`reward_funcs`,
`trainer`, `dataset_files`, `eval_dataset_files`), side by side; flags on the command line
override the file. With `eval_strategy: steps` the held-out set (`eval_dataset_files`, or a
hub dataset's `dataset_test_split`) is scored by the same reward functions every
`eval_steps`, and each evaluation is logged beside the rollouts spent so far. An example is
`examples/trl/grpo_frontier.yaml`; every key is documented in `--help`. A mistake (an
unknown key or selector, a missing column or file) ends in one line that says what to change;
`FRONTIER_DEBUG=1` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frontier_rft.core.config import did_you_mean
from frontier_rft.integrations.pool import prompt_text
from frontier_rft.integrations.trl.config import (
    DATA_BUILDERS,
    REWARDS,
    FrontierScriptArguments,
    answer_match,
    reward_name_problem,
)
from frontier_rft.integrations.trl.preflight import (
    TRL_PROMPT,
    data_problems,
    eval_problems,
    eval_wanted,
    local_model_path,
    pool_problems,
    report_to_problems,
    reward_range_problems,
)
from frontier_rft.logs import env_level, show_messages

__all__ = ["FrontierScriptArguments", "answer_match", "cli", "main", "make_parser"]

DEBUG_ENV = "FRONTIER_DEBUG"
"""Set to 1 to see the traceback of an error instead of its one-line message."""

_log = logging.getLogger(__name__)


def _reward(name: str) -> Callable[..., Any]:
    """The reward function `name` names; a ValueError in one line for a name that is not
    one (`reward_name_problem`) or a module that cannot be imported or lacks it."""
    if name in REWARDS:
        return REWARDS[name]
    problem = reward_name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    module, _, attr = name.rpartition(".")
    sys.path.insert(0, os.getcwd())
    try:
        func = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # the user's module's own error, said in one line
        raise ValueError(
            f"reward function {name!r} cannot be imported ({type(exc).__name__}: {exc}); name "
            "answer_match or a dotted path my.module.function importable from the working "
            "directory"
        ) from exc
    if not callable(func):
        raise ValueError(f"reward function {name!r} is not callable ({type(func).__name__})")
    return func  # type: ignore[no-any-return]


def _trainer_kind(argv: Sequence[str]) -> str:
    """grpo or rloo, from the command line or the --config file (decides the config class)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--trainer" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--trainer="):
            return arg.split("=", 1)[1]
    if "--config" in args and args.index("--config") + 1 < len(args):
        data = _bounded_config(args[args.index("--config") + 1])
        return str(data.get("trainer", "grpo")) if isinstance(data, dict) else "grpo"
    return "grpo"


def _bounded_config(path: str) -> Any:
    """The --config file read with frontier-rft's bounded YAML reader, which TRL's parser
    reads next with plain yaml.safe_load: an alias bomb, deep nesting, a huge integer or
    a file that is not UTF-8 is refused here in one line naming the file."""
    import yaml

    from frontier_rft.core.yamlsafe import MAX_YAML_CHARS, load_yaml

    try:
        with open(os.path.expanduser(path), encoding="utf-8") as fh:
            return load_yaml(fh.read(MAX_YAML_CHARS + 1))
    except UnicodeDecodeError as exc:
        raise ValueError(f"--config {path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        why = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise ValueError(f"--config {path}{at}: {why}") from None


USAGE = (
    "python -m frontier_rft.integrations.trl.grpo --config FILE.yaml [--KEY VALUE ...]\n"
    "       accelerate launch -m frontier_rft.integrations.trl.grpo --config FILE.yaml"
)
DESCRIPTION = (
    "GRPO or RLOO with a frontier-rft selector. Keys go in the YAML file or on the command "
    "line (flags win): frontier-rft's first, then TRL's ScriptArguments, GRPOConfig (or "
    "RLOOConfig) and ModelConfig. `frontier check-config trl FILE.yaml` checks a file "
    "without loading a model."
)


def make_parser(kind: str = "grpo") -> Any:
    """TrlParser over FrontierConfig, this script's arguments and TRL's dataclasses; the
    frontier-rft groups come first in --help, under their own headings."""
    from frontier_rft.integrations.trl.config import FrontierConfig

    trl: Any = importlib.import_module("trl")  # lazy exports: typed as Any
    if kind not in ("grpo", "rloo"):
        raise ValueError(f"trainer must be grpo or rloo, got {kind!r}")
    train_config = trl.GRPOConfig if kind == "grpo" else trl.RLOOConfig
    parser = trl.TrlParser(
        (
            FrontierConfig,
            FrontierScriptArguments,
            trl.ScriptArguments,
            train_config,
            trl.ModelConfig,
        ),
        usage=USAGE,
        description=DESCRIPTION,
    )
    # argparse prints its catch-all "options" group (TRL's fields) before named groups: move
    # ours ahead of it so a user reads the frontier-rft keys first.
    ours = {FrontierConfig._argument_group_name, FrontierScriptArguments._argument_group_name}
    parser._action_groups.sort(key=lambda group: group.title not in ours)
    parser.error = _suggesting(parser.error)
    return parser


def _suggesting(error: Callable[[str], Any]) -> Callable[[str], Any]:
    """argparse's `error`, with a did-you-mean after an invalid choice (`--rollouts Kept`:
    did you mean 'kept'?)."""

    def error_with_hint(message: str) -> Any:
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            message += did_you_mean(found.group(1).lower(), choices)
        return error(message)

    return error_with_hint


def missing_data_files(paths: Sequence[str], option: str) -> list[str]:
    """One line per local data file in `paths` that does not exist, with the closest file
    of its directory; a URL or a glob pattern is left to the datasets library."""
    out = []
    for path in paths:
        if "://" in path or any(c in path for c in "*?["):
            continue
        file = Path(os.path.expanduser(path))
        if file.is_file():
            continue
        where = file.parent if file.parent.is_dir() else None
        names = [p.name for p in itertools.islice(where.iterdir(), 10_000)] if where else []
        hint = did_you_mean(file.name, names)
        what = "is a directory" if file.is_dir() else "no such file"
        out.append(f"{option}: {path}: {what}{hint}")
    return out


def _local_files(paths: list[str], option: str = "dataset_files") -> Any:
    """The DatasetDict of local data files (one `train` split), read by their suffix; a
    file that does not exist is a ValueError naming it, before the datasets library runs."""
    from datasets import load_dataset

    missing = missing_data_files(paths, option)
    if missing:
        raise ValueError("; ".join(missing))
    return load_dataset(DATA_BUILDERS[paths[0].rsplit(".", 1)[-1].lower()], data_files=paths)


def _split(dataset: Any, split: str, source: str, option: str) -> Any:
    if split not in dataset:
        raise ValueError(
            f"{source} has no split {split!r}{did_you_mean(split, dataset)} (splits: "
            f"{', '.join(dataset)}); set {option}"
        )
    return dataset[split]


def _load_splits(extra: FrontierScriptArguments, script: Any, evaluate: bool) -> tuple[Any, ...]:
    """(training split, where it came from, held-out split or None, where that came from):
    from dataset_files or dataset_name, the held-out one from eval_dataset_files or, with
    dataset_name, its dataset_test_split, when the Trainer will evaluate."""
    from datasets import load_dataset

    if extra.dataset_files:
        dataset = _local_files(extra.dataset_files)
        source = f"dataset_files {', '.join(extra.dataset_files)}"
    elif script.dataset_name:
        dataset = load_dataset(script.dataset_name, name=script.dataset_config)
        source = f"dataset_name {script.dataset_name}"
    else:
        raise ValueError("give dataset_name or dataset_files (in the YAML or on the command line)")
    train = _split(dataset, script.dataset_train_split, source, "dataset_train_split")
    if not evaluate:
        return train, source, None, ""
    if extra.eval_dataset_files:
        held_out = _local_files(extra.eval_dataset_files, "eval_dataset_files")["train"]
        return train, source, held_out, f"eval_dataset_files {', '.join(extra.eval_dataset_files)}"
    test = _split(dataset, script.dataset_test_split, source, "dataset_test_split")
    return train, source, test, f"{source} split {script.dataset_test_split}"


def _checked_data(
    data: Any,
    source: str,
    frontier: Any,
    rewards: dict[str, Callable[..., Any]],
    held_out: bool = False,
) -> Any:
    """`data` once its columns hold what the adapter, TRL and the reward functions read
    (ValueError naming every missing one), with the prompt_column copied to TRL's `prompt`
    when the data has no such column. A `held_out` set needs the prompt and the reward
    functions' columns only."""
    names = list(data.column_names)
    first = data[0] if len(data) else None
    problems = data_problems(names, frontier, first, rewards, script=True, held_out=held_out)
    if not len(data):
        problems.append(f"the {'held-out' if held_out else 'training'} split has no rows")
    if problems:
        raise ValueError(f"{source} (columns: {', '.join(names)}): {'; '.join(problems)}")
    if TRL_PROMPT not in names:
        data = data.add_column(TRL_PROMPT, data[frontier.prompt_column])
    return data


def _warn_shared_prompts(train: Any, held_out: Any) -> None:
    """A held-out prompt that is also a training prompt measures recall, not learning: say
    how many there are (an A/B needs none, docs/ab_test.md)."""
    seen = {prompt_text(p) for p in train[TRL_PROMPT]}
    shared = sum(prompt_text(p) in seen for p in held_out[TRL_PROMPT])
    if shared:
        _log.warning(
            f"frontier-rft: {shared} of the {len(held_out)} held-out prompts are also "
            "training prompts; a held-out score then measures recall as well as learning"
        )


def main(argv: Sequence[str] | None = None) -> Any:
    """Parse, check what can be checked without a model, build the trainer and train;
    returns the trainer."""
    args = list(sys.argv[1:] if argv is None else argv)
    kind = _trainer_kind(args)  # reads the --config file with the bounds, before TRL loads
    from frontier_rft.integrations.trl.trainer import FrontierGRPOTrainer, FrontierRLOOTrainer

    parser = make_parser(kind)
    frontier, extra, script, training, model_args = parser.parse_args_and_config(args)
    if not model_args.model_name_or_path:
        raise ValueError("give model_name_or_path (a hub id or a local model directory)")
    # Before anything may reach the hub or load weights: the model path, the logging
    # backends, the reward functions and the data's columns.
    model_args.model_name_or_path = local_model_path(model_args.model_name_or_path)
    evaluate = eval_wanted(training.eval_strategy, training.eval_on_start)
    problems = report_to_problems(training.report_to)
    problems += pool_problems(frontier)
    problems += reward_range_problems(frontier, extra.reward_funcs, training.reward_weights)
    problems += eval_problems(
        training.eval_strategy, training.eval_on_start, extra.dataset_files,
        extra.eval_dataset_files,
    )  # fmt: skip
    problems += missing_data_files(extra.dataset_files or [], "dataset_files")
    problems += missing_data_files(extra.eval_dataset_files or [], "eval_dataset_files")
    if problems:
        raise ValueError("; ".join(problems))
    rewards = {name: _reward(name) for name in extra.reward_funcs}
    train, source, held_out, held_out_source = _load_splits(extra, script, evaluate)
    train = _checked_data(train, source, frontier, rewards)
    if held_out is not None:
        held_out = _checked_data(held_out, held_out_source, frontier, rewards, held_out=True)
        _warn_shared_prompts(train, held_out)
    training.model_init_kwargs = {
        "revision": model_args.model_revision,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        **(training.model_init_kwargs or {}),
    }
    cls = FrontierGRPOTrainer if extra.trainer == "grpo" else FrontierRLOOTrainer
    trainer = cls(
        model=model_args.model_name_or_path,
        reward_funcs=list(rewards.values()),
        args=training,
        train_dataset=train,
        eval_dataset=held_out,
        peft_config=importlib.import_module("trl").get_peft_config(model_args),
        frontier=frontier,
        frontier_checked=True,  # the model path, pool, reward_range and columns, just above
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
    except BrokenPipeError:  # `--help | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0
    except (ValueError, TypeError, OSError, ImportError) as exc:
        # TypeError: TRL's and transformers' configs raise it for a value of the wrong type
        # (`learning_rate: [1, 2]`), which TrlParser hands them as the YAML gave it.
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        text = " ".join(str(exc).split()) or type(exc).__name__
        sys.stderr.write(f"frontier_rft.integrations.trl.grpo: error: {text}\n")
        sys.stderr.write(f"(set {DEBUG_ENV}=1 to see where it came from)\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
