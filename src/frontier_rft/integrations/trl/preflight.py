"""Checks of a TRL run that need no model, no GPU and (except the list of TRL's own keys)
no TRL: they run before anything slow.

- `local_model_path`: a model name that looks like a local path must be a model directory;
  checked on disk before any hub call (`frontier_rft.model_dirs` says which names do).
- `report_to_problems`: every logging backend in `report_to` must be installed.
- `data_problems`: the columns the adapter, TRL's trainer and the reward functions read,
  and reward functions TRL's call would fail on.
- `pool_problems`: the metadata the selector cannot run without, against the columns the
  config names (bots' interpolation plug-in without pass-rate columns).
- `reward_range_problems`: several reward functions and a selector that needs rewards in
  [0, 1] make `reward_range` required (docs/integrations/trl.md, "Several reward functions").
- `eval_problems`: an evaluation asked for with no held-out set, or a held-out set never read.
- `generation_problems`: fewer than two generations per prompt (no advantage to compute).
- `batch_problems`: batch sizes that are no whole numbers, and a generation batch that is no
  whole number of prompt groups on the run's processes (TRL 1.16's own rule).
- `strategy_problems`: an unquoted `eval_strategy: no`, which YAML reads as false.
- `vllm_problems`: a use_vllm that is no yes/no, a vllm_mode TRL has not, and a colocated
  vllm_tensor_parallel_size that does not divide the processes (TRL refuses both after the
  model loads).
- `length_problems`: a num_train_epochs that is no positive number where it sets the length.

`check_trl_config` (trl/config_check.py) runs all of these on a YAML file's values.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from frontier_rft.core.config import closest, did_you_mean
from frontier_rft.core.jsonsafe import load_json_file
from frontier_rft.core.selector import Selector
from frontier_rft.integrations.pool import column_problems
from frontier_rft.integrations.preflight import (
    shown,
)
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.fewer_config import trl_flag
from frontier_rft.integrations.trl.reward_source import RewardSource
from frontier_rft.model_dirs import looks_local, model_dir_problem

__all__ = [
    "POOL_OPTIONS",
    "REPORT_TO_PACKAGES",
    "TRL_BATCH_DEFAULTS",
    "TRL_REWARD_ARGUMENTS",
    "batch_problems",
    "data_problems",
    "eval_problems",
    "eval_wanted",
    "generation_problems",
    "length_problems",
    "local_model_path",
    "model_config_problems",
    "pool_batch_problems",
    "pool_fields",
    "pool_problems",
    "report_to_problems",
    "reward_columns",
    "reward_range_problems",
    "reward_signature",
    "reward_sum_problems",
    "strategy_problems",
    "vllm_problems",
]

REPORT_TO_PACKAGES = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",),
    "trackio": ("trackio",),
    "swanlab": ("swanlab",),
    "clearml": ("clearml",),
    "dvclive": ("dvclive",),
    "neptune": ("neptune",),
}
"""`report_to` backends and the modules transformers needs for each (any one of them)."""

REPORT_TO_OTHERS = ("all", "none", "azure_ml", "codecarbon", "dagshub", "flyte", "kubeflow")
"""The other `report_to` names transformers 5 accepts (`INTEGRATION_TO_CALLBACK`): a name
close to one of these or the above and none of them is a typo; a name far from all may be
a backend a newer transformers added, and is left to it."""

TRL_REWARD_ARGUMENTS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
     "environments"}
)  # fmt: skip
"""What TRL's GRPOTrainer passes every reward function besides the dataset's columns
(TRL 1.16, `_calculate_rewards`); any other required argument must be a column."""

TRL_ALWAYS_PASSED = TRL_REWARD_ARGUMENTS - {"environments"}
"""What it passes on every call (`environments` only with environments configured)."""

TRL_PROMPT = "prompt"
"""The column TRL's GRPO and RLOO trainers generate from."""


def local_model_path(name: Any, flag: str = "model_name_or_path") -> str:
    """`name` as transformers should load it: a hub id unchanged; a name that looks like a
    local path (with `~` expanded) after checking it holds a model; ValueError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{flag} must be a hub id (Qwen/Qwen2.5-0.5B-Instruct) or a local model "
            f"directory, got {shown(name)}"
        )
    if not looks_local(name):
        return name
    path = os.path.expanduser(name)
    problem = model_dir_problem(path, flag, markers=("config.json", "adapter_config.json"))
    if problem is not None:
        raise ValueError(
            f"{problem}. A name that looks like a path (starting with /, ~ or ., or whose first "
            "folder exists here) is read from disk, never from the hub: fix the path, or give "
            "a hub id such as Qwen/Qwen2.5-0.5B-Instruct"
        )
    return path


MODEL_SIZES = ("hidden_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size")  # fmt: skip
"""The sizes in a model's config.json that the currency line reads (and the model is built
from): each a whole number where present."""
MAX_MODEL_SIZE = 1 << 53
"""The largest size read as a whole number (a float holds every int up to it)."""


def model_config_problems(path: str) -> list[str]:
    """What in local model directory `path`'s config.json the model could not be built from,
    one line each: a file that is no JSON object (read with bounds: 1 MiB, 32 levels deep),
    or a size (MODEL_SIZES) that is not a whole number up to 2**53 (Infinity, 1e400, a
    401-digit integer). Nothing where the directory has no config.json."""
    file = os.path.join(os.path.expanduser(path), "config.json")
    if not os.path.isfile(file):
        return []
    try:
        config = load_json_file(file, "a model's config (a JSON object)", max_chars=1 << 20)
    except ValueError as exc:
        return [" ".join(str(exc).split())[:300]]
    if not isinstance(config, dict):
        return [f"{file} is not a JSON object of the model's settings"]
    return [
        f"{file}: {key} must be a whole number up to 2**53 (the model's size), got "
        f"{shown(config[key])[:40]}: fix the model's config.json"
        for key in MODEL_SIZES
        if config.get(key) is not None
        and not (
            isinstance(config[key], int)
            and not isinstance(config[key], bool)
            and 0 <= config[key] <= MAX_MODEL_SIZE
        )
    ]


def report_to_problems(report_to: Any) -> list[str]:
    """One message per `report_to` backend whose package is not installed, or one saying
    `report_to` is no backend name nor list of names (transformers would refuse it after
    the model loads: null, a number, a bool and a nested list all end in its ValueError)."""
    if isinstance(report_to, list | tuple) and all(isinstance(n, str) for n in report_to):
        names = list(report_to)
    elif isinstance(report_to, str):
        names = [report_to]
    else:
        return [
            "report_to must be a logging backend (wandb, tensorboard), a list of them, all or "
            f"none, got {shown(report_to)}"
        ]
    out = []
    known = [*REPORT_TO_PACKAGES, *REPORT_TO_OTHERS]
    for name in names:
        if name not in known:
            if closest(name, known):
                out.append(f"report_to {name}: not a logging backend{did_you_mean(name, known)}")
            continue
        modules = REPORT_TO_PACKAGES.get(str(name), ())
        if modules and not any(importlib.util.find_spec(m) for m in modules):
            out.append(
                f"report_to {name}: the {modules[0]} package is not installed; pip install "
                f"{modules[0]}, or set report_to: none (selector metrics still go to "
                "frontier_metrics.jsonl)"
            )
    return out


def reward_signature(func: Callable[..., Any] | RewardSource) -> RewardSource:
    """The arguments of reward function `func` (an imported function, or one read from
    source), in the form the source reader gives them."""
    if isinstance(func, RewardSource):
        return func
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read
        return RewardSource()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = [p for p in params if p.kind in kinds]
    return RewardSource(
        required=tuple(p.name for p in named if p.default is p.empty),
        named=tuple(p.name for p in named),
        any_keyword=any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params),
    )


def reward_columns(func: Callable[..., Any] | RewardSource) -> list[str]:
    """Dataset columns reward function `func` needs: its arguments without a default that
    TRL does not pass itself (for `answer_match`, `answer`)."""
    return [n for n in reward_signature(func).required if n not in TRL_REWARD_ARGUMENTS]


def _reward_call_problems(
    name: str, func: Callable[..., Any] | RewardSource, names: list[str], task_id: str
) -> list[str]:
    """The columns reward function `name` reads that the data lacks, and a call TRL would
    make that it cannot take (no **kwargs, and a keyword TRL passes it is not an argument)."""
    sig = reward_signature(func)
    out = []
    for column in reward_columns(sig):
        if column not in names:
            out.append(
                f"reward function {name!r} reads column {column!r}, which the data "
                f"lacks{did_you_mean(column, names)}"
            )
    if not sig.any_keyword and sig.named:
        # TRL passes every column but the prompt (the adapter adds the task id column).
        passed = sorted(TRL_ALWAYS_PASSED | ({*names, task_id} - {TRL_PROMPT}))
        unnamed = [k for k in passed if k not in sig.named]
        if unnamed:
            out.append(
                f"reward function {name!r} takes no **kwargs, but TRL calls it with every "
                f"data column and more by keyword ({', '.join(unnamed[:4])}, ...): add "
                "**kwargs to its arguments"
            )
    return out


def data_problems(
    names: list[str],
    config: FrontierConfig | None,
    first_row: Mapping[str, Any] | None = None,
    rewards: Mapping[str, Callable[..., Any] | RewardSource] | None = None,
    *,
    script: bool = False,
    held_out: bool = False,
) -> list[str]:
    """What is missing from training data with columns `names`: TRL's prompt column, the
    columns `config` names (None: a ready selector, which reads none) and those the
    `rewards` functions need, each with the closest existing column; and a reward function
    TRL's call would fail on. With `script`, the fix for the prompt is the `grpo` script's
    --prompt_column (it hands that column to TRL as its prompt); otherwise a rename. With
    `held_out` (an evaluation set), only the prompt and the reward functions' columns."""
    out = []
    wanted = config.named_columns() if config is not None else []
    if held_out:
        wanted = wanted[:1]
    prompt = config.prompt_column if config is not None else TRL_PROMPT
    if script and prompt not in names:
        near = closest(prompt, names)
        column = near or "COLUMN"
        out.append(
            f"no prompt column {prompt!r}{did_you_mean(prompt, names)}: set prompt_column: "
            f"{column} in the config file (--prompt_column {column} on the command line) to "
            "the column that holds the prompts"
        )
    elif not script and TRL_PROMPT not in names:
        near = closest(TRL_PROMPT, names) or "question"
        out.append(
            f"no {TRL_PROMPT!r} column, which TRL's trainer generates from"
            f"{did_you_mean(TRL_PROMPT, names)}: rename the column that holds the prompts, "
            f"e.g. ds = ds.rename_column({near!r}, {TRL_PROMPT!r})"
        )
    if script or prompt == TRL_PROMPT:
        wanted = wanted[1:]  # the prompt column is reported above
    # Named as the config key (category_columns), as a YAML file, FrontierConfig and the
    # command line (with --) all spell it: a YAML user read CLI flags here (issue 47).
    out += column_problems(names, wanted, first_row)
    task_id = config.task_id_column if config is not None else "task_id"
    for name, func in (rewards or {}).items():
        out += _reward_call_problems(name, func, names, task_id)
    return out


POOL_OPTIONS = {
    "prompts": "prompt_column: COLUMN",
    "categories": "category_columns: [COLUMN]",
    "difficulty": "difficulty_column: COLUMN",
    "reference_pass_rates": "pass_rate_columns: [WEAK, STRONG]",
    "features": "features_column: COLUMN",
}
"""The FrontierConfig setting that gives the adapter's TaskPool each metadata field."""


def pool_fields(config: FrontierConfig) -> set[str]:
    """The TaskPool fields the adapter builds from the columns `config` names (the prompt
    text always; features also from self-embeddings, which need the prompt text only)."""
    columns = config.columns()
    given = {"prompts"}
    given |= {"categories"} if columns.categories else set()
    given |= {"difficulty"} if columns.difficulty else set()
    given |= {"reference_pass_rates"} if columns.pass_rates else set()
    given |= {"features"} if columns.features else set()
    return given


def pool_problems(config: FrontierConfig) -> list[str]:
    """The metadata `config`'s selector cannot run without that its columns do not give
    (the selector would refuse the pool once built, after the model loads)."""
    return config.selector_spec.requirement_problems(pool_fields(config), POOL_OPTIONS)


def reward_range_problems(
    config: FrontierConfig,
    reward_names: list[str],
    weights: Any = None,
    selector: Selector | None = None,
) -> list[str]:
    """The rule for several reward functions: TRL adds them up, weighted, and when the
    weights let that sum leave the rewards the selector reads (two functions of 0..1 at the
    default weight 1 reach 2; a selector such as greso or bots reads [0, 1]), `reward_range`
    is required. The range the weights give, for functions that each return 0..1, is the
    suggested line. No rule could map the sum back without knowing each function's range,
    which only its author does. `selector`: a ready one (default: the one `config` names)."""
    if len(reward_names) < 2 or config.reward_range is not None:
        return []
    if selector is not None:
        name, bounds = selector.name, selector.reward_bounds
    else:
        spec = config.selector_spec
        name, bounds = spec.name, spec.reward_bounds(pool_fields(config))
    return reward_sum_problems(reward_names, weights, name, bounds)


def reward_sum_problems(
    reward_names: list[str], weights: Any, selector: Any, bounds: tuple[float, float] | None
) -> list[str]:
    """`reward_range_problems` for a missing reward_range, given the selector's name and the
    rewards it reads (`bounds`; None: any scale, so no range is needed)."""
    if len(reward_names) < 2 or bounds is None:  # a selector that reads any scale (sec)
        return []
    given = weights if isinstance(weights, list | tuple) else []
    w = [float(x) for x in given if isinstance(x, int | float) and not isinstance(x, bool)]
    w = w if len(w) == len(reward_names) else [1.0] * len(reward_names)
    lo, hi = sum(min(x, 0.0) for x in w), sum(max(x, 0.0) for x in w)
    if bounds[0] <= lo and hi <= bounds[1]:
        return []  # weights that keep functions of 0..1 inside (0.75 and 0.25, say)
    return [
        f"{len(reward_names)} reward functions ({', '.join(reward_names)}): TRL sums them, "
        f"weighted, so the reward reaches {hi:g} where each gives 1, and selector "
        f"{shown(selector)} reads rewards in [{bounds[0]:g}, {bounds[1]:g}]: add the YAML line "
        f"`reward_range: [{lo:g}, {hi:g}]` (in Python FrontierConfig(reward_range=({lo:g}, "
        f"{hi:g}))), the sum's range if each function returns 0..1 (give yours otherwise); it "
        "maps the sum onto [0, 1]"
    ]


def generation_problems(values: Mapping[str, Any]) -> list[str]:
    """`num_generations` (TRL's default 8 when absent) below 2: GRPO's and RLOO's advantage
    compares the completions of one prompt, so one completion gets none (and dynamic
    sampling would find no mixed group, ever). TRL refuses it after the model loads."""
    if values.get("num_generations") is None:
        return []
    n = values["num_generations"]
    if isinstance(n, str) and n.strip().isdigit():
        n = int(n)  # TRL's parser converts a string as it converts a command-line value
    if isinstance(n, int) and not isinstance(n, bool) and n >= 2:
        return []
    return [
        f"num_generations must be an int >= 2, got {shown(values['num_generations'])}: GRPO "
        "compares each prompt's completions with each other (with one there is nothing to "
        "compare, every advantage is 0); TRL's default is 8"
    ]


TRL_BATCH_DEFAULTS = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "per_device_eval_batch_size": 8,
    "steps_per_generation": None,
    "generation_batch_size": None,
    "num_iterations": 1,
    "max_steps": -1,
}
"""The TRL settings that size a step or a run (TRL 1.16 GRPOConfig / RLOOConfig, transformers'
TrainingArguments defaults when absent; None: derived by TRL). Each is a whole number."""


def _whole(value: Any) -> Any:
    """`value` as TRL's parser reads an int setting (a string of digits converted)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def batch_problems(values: Mapping[str, Any], processes: int, counted: str) -> list[str]:
    """What TRL 1.16's GRPOConfig / RLOOConfig `__post_init__` refuses after the model loads,
    found now: a batch setting that is no whole number (8.5, a word), both
    generation_batch_size and steps_per_generation, a generation_batch_size that is no
    multiple of the global batch, and a generation batch (per_device_train_batch_size x
    `processes` x steps_per_generation, which defaults to gradient_accumulation_steps) or an
    evaluation batch that is no whole number of prompt groups (num_generations each).
    `counted`: where the process count came from, said in the message."""
    got = {k: _whole(values.get(k, d)) for k, d in TRL_BATCH_DEFAULTS.items()}
    out = []
    for key, value in got.items():
        if value is None and TRL_BATCH_DEFAULTS[key] is None:
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or (value < 1 and key != "max_steps"):
            least = "an int (-1: num_train_epochs decides)" if key == "max_steps" else "an int >= 1"
            out.append(f"{key} must be {least}, got {shown(values.get(key))}: TRL counts it whole")
    n = _whole(values.get("num_generations", 8))
    if out or isinstance(n, bool) or not isinstance(n, int) or n < 2:
        return out  # generation_problems names a bad num_generations
    per, gen, spg = (
        got["per_device_train_batch_size"],
        got["generation_batch_size"],
        got["steps_per_generation"],
    )
    procs = f"{processes} process{'es' * (processes != 1)} ({counted})"
    if gen is not None and spg is not None:
        return [
            "generation_batch_size and steps_per_generation are both set; TRL refuses that: "
            "keep one of them"
        ]
    if gen is not None and gen % (per * processes):
        step = math.lcm(per * processes, n)
        return [
            f"generation_batch_size {gen} must be a multiple of per_device_train_batch_size "
            f"{per} x {procs}, as TRL requires: set generation_batch_size: "
            f"{max(step, gen // step * step)}"
        ]
    if gen is None:
        name = "steps_per_generation" if spg is not None else "gradient_accumulation_steps"
        spg = got["gradient_accumulation_steps"] if spg is None else spg
        gen = per * processes * spg
        if gen % n:
            unit = n // math.gcd(n, processes * spg)
            fix = -(-per // unit) * unit
            sizes = [d for d in range(min(gen, n), 1, -1) if gen % d == 0][:3]
            other = f" (or num_generations: {' / '.join(map(str, sizes))})" * bool(sizes)
            out.append(
                f"per_device_train_batch_size {per} x {procs} x {name} {spg} makes "
                f"a generation batch of {gen} completions, not a whole number of groups of "
                f"num_generations {n} (TRL refuses it after the model loads): set "
                f"per_device_train_batch_size: {fix}{other}"
            )
    elif gen % n:
        out.append(
            f"generation_batch_size {gen} is not a whole number of groups of num_generations "
            f"{n}, as TRL requires: set generation_batch_size: {math.lcm(per * processes, n)}"
        )
    n_eval = _whole(values.get("num_generations_eval")) or n
    per_eval = got["per_device_eval_batch_size"]
    wanted = eval_wanted(values.get("eval_strategy", "no"), values.get("eval_on_start"))
    if wanted and isinstance(n_eval, int) and n_eval > 0 and (per_eval * processes) % n_eval:
        unit = n_eval // math.gcd(n_eval, processes)
        out.append(
            f"per_device_eval_batch_size {per_eval} x {procs} is not a whole number of groups "
            f"of {n_eval} generations (TRL refuses it): set per_device_eval_batch_size: "
            f"{-(-per_eval // unit) * unit}"
        )
    return out


def pool_batch_problems(
    values: Mapping[str, Any], processes: int, counted: str, rows: int | None
) -> list[str]:
    """A generation step of more prompts than the training data's `rows` (None: not counted):
    each generation batch is that many distinct prompts (`FrontierRepeatSampler`), which the
    trainer refuses after the model loads. Named with the keys that size it; nothing where
    `batch_problems` refuses a batch setting."""
    got = {k: _whole(values.get(k, d)) for k, d in TRL_BATCH_DEFAULTS.items()}
    n = _whole(values.get("num_generations", 8))
    if rows is None or batch_problems(values, processes, counted) or generation_problems(values):
        return []  # those name a batch setting or num_generations TRL refuses
    per, gen, spg = (
        got["per_device_train_batch_size"],
        got["generation_batch_size"],
        got["steps_per_generation"],
    )
    procs = f"{processes} process{'es' * (processes != 1)} ({counted})"
    most = rows * n  # completions of a step of every prompt
    if gen is not None:
        how = f"generation_batch_size {gen}"
        unit = math.lcm(per * processes, n)  # what TRL asks a generation batch to divide by
        fix = (
            f"set generation_batch_size: {most // unit * unit}"
            if most >= unit
            else f"lower per_device_train_batch_size, then generation_batch_size to {most} or less"
        )
    else:
        name = "steps_per_generation" if spg is not None else "gradient_accumulation_steps"
        spg = got["gradient_accumulation_steps"] if spg is None else spg
        gen = per * processes * spg
        how = f"per_device_train_batch_size {per} x {procs} x {name} {spg}"
        fits = [d for d in range(min(per, most // (processes * spg)), 0, -1)
                if d * processes * spg % n == 0]  # fmt: skip
        bound = f"their product x the processes at most {most}"
        fix = f"lower per_device_train_batch_size or {name} ({bound})"
        if fits:
            other = f", or a lower {name}" if spg > 1 else ""
            fix = f"set per_device_train_batch_size: {fits[0]}{other} ({bound})"
    prompts = gen // n
    if prompts <= rows:
        return []
    held = f"{rows} prompt{'s' * (rows != 1)}"
    return [
        f"a generation step of {prompts} prompts ({how} = {gen} completions / num_generations "
        f"{n}) is more than the training data's {held}: a step draws distinct prompts, so the "
        f"trainer refuses it after the model loads; {fix}"
    ]


STRATEGY_KEYS = ("eval_strategy", "save_strategy", "logging_strategy")
"""TRL's interval strategies, whose value `no` YAML reads as false when unquoted."""


def strategy_problems(values: Mapping[str, Any]) -> list[str]:
    """A strategy YAML read as a bool (an unquoted no, yes, off or on): transformers refuses
    it after the model loads ("False is not a valid IntervalStrategy")."""
    return [
        f"{key} is {str(values[key]).lower()}: YAML reads an unquoted no (or yes, on, off) as "
        f'a bool; quote it: {key}: "no" (or steps, epoch)'
        for key in STRATEGY_KEYS
        if isinstance(values.get(key), bool)
    ]


EVAL_FILES_HELP = (
    "eval_dataset_files: [data/heldout.jsonl] (rows with the training data's columns, no "
    "prompt in common with it)"
)


def _strategy(value: Any) -> str:
    """An eval_strategy as text ('no', 'steps', 'epoch'), from the YAML or TRL's enum; an
    unquoted no (YAML's false) as 'no' (`strategy_problems` asks for the quotes)."""
    if value is False:
        return "no"
    return str(getattr(value, "value", value)).strip().lower()


def eval_wanted(eval_strategy: Any, eval_on_start: Any) -> bool:
    """Whether the Trainer will evaluate: an eval_strategy other than no, or eval_on_start."""
    return _strategy(eval_strategy) not in ("no", "none") or eval_on_start is True


def eval_problems(
    eval_strategy: Any, eval_on_start: Any, dataset_files: Any, eval_dataset_files: Any
) -> list[str]:
    """An evaluation asked for (eval_strategy other than no, or eval_on_start) with local
    training files and no held-out files; or held-out files that would never be scored.
    A hub dataset's held-out split (dataset_test_split) is checked when it is loaded."""
    wanted = eval_wanted(eval_strategy, eval_on_start)
    if wanted and dataset_files and not eval_dataset_files:
        return [
            f"eval_strategy {_strategy(eval_strategy)} needs a held-out set, and "
            f"dataset_files has only a training split: set {EVAL_FILES_HELP}, or "
            "eval_strategy: no"
        ]
    if eval_dataset_files and not wanted:
        return [
            "eval_dataset_files is never scored with eval_strategy no: set eval_strategy: "
            "steps and eval_steps: N (also eval_on_start: true for a score before training)"
        ]
    return []


VLLM_MODES = ("server", "colocate")
"""TRL 1.16's vllm_mode values (`VLLMGeneration._init_vllm`)."""


def vllm_problems(values: Mapping[str, Any], processes: int, counted: str) -> list[str]:
    """What TRL 1.16 refuses about vLLM only once the model has loaded: a use_vllm that is
    no yes/no, a vllm_mode other than server or colocate, and in colocate mode a
    vllm_tensor_parallel_size that does not divide the run's `processes` (counted from
    `counted`, said in the message)."""
    if "use_vllm" in values and trl_flag(values["use_vllm"]) is None:
        return [f"use_vllm must be true or false, got {shown(values['use_vllm'])}"]
    if trl_flag(values.get("use_vllm", False)) is not True:
        return []
    out = []
    mode = values.get("vllm_mode", "colocate")
    if mode not in VLLM_MODES:
        out.append(
            f"vllm_mode must be server or colocate (TRL refuses anything else after the model "
            f"loads), got {shown(mode)}{did_you_mean(str(mode), list(VLLM_MODES))}"
        )
        mode = "colocate"  # a refused value is read at its default: it hides no other check
    tp = _whole(values.get("vllm_tensor_parallel_size", 1))
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        return [*out, f"vllm_tensor_parallel_size must be an int >= 1, got {shown(tp)}"]
    if mode == "colocate" and processes % tp:
        fits = next(d for d in range(tp, 0, -1) if processes % d == 0)
        many = f"{processes} process{'es' * (processes != 1)} ({counted})"
        out.append(
            f"vllm_tensor_parallel_size {tp} does not divide {many}: colocated vLLM splits "
            f"the processes into groups of that size, and TRL refuses it after the model "
            f"loads; set vllm_tensor_parallel_size: {fits}"
        )
    return out


def length_problems(values: Mapping[str, Any]) -> list[str]:
    """A num_train_epochs that is no positive number (two, -1) where it sets the run's length
    (max_steps not > 0): the trainer fails on it, or trains nothing, after the model loads,
    and `rollouts: auto` cannot read the run's length from it."""
    steps = _whole(values.get("max_steps", -1))
    if "num_train_epochs" not in values or (isinstance(steps, int) and steps > 0):
        return []
    epochs = values["num_train_epochs"]
    number = epochs
    if isinstance(epochs, str):
        try:
            number = float(epochs)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not number > 0:
        return [
            f"num_train_epochs must be a number > 0 (e.g. 2), got {shown(epochs)}; or set "
            "max_steps: N"
        ]
    if not math.isfinite(number):
        return [f"num_train_epochs must be finite, got {shown(epochs)}; or set max_steps: N"]
    return []
