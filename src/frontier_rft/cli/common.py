"""What every `frontier` command shares: the parser class, user errors, --config files, checks.

A mistake a user can fix (a bad flag value, a missing directory, a missing extra) ends in one
`frontier CMD: error: ...` line that says what to do; `--debug` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from frontier_rft.bench.scripts import int_tuple
from frontier_rft.core.config import field_docs
from frontier_rft.core.jsonsafe import json_depth
from frontier_rft.model_dirs import model_dir_problem

MAX_VALUE_DEPTH = 32
"""Deepest nesting of a --set value or a --config file (configs are a level or two deep)."""

__all__ = [
    "EXTRA_OF_MODULE",
    "HelpFormatter",
    "Interrupted",
    "Parser",
    "UsageError",
    "add_config_flags",
    "add_sampler_config_flag",
    "apply_config_file",
    "config_from_args",
    "floats",
    "int_tuple",
    "load_yaml_file",
    "model_dir",
    "new_model_dir",
    "parse_assignments",
    "parse_value",
    "quiet_transformers",
    "run_dir",
    "sampler_settings_arg",
]


class UsageError(Exception):
    """A mistake in how a command was called; its message says how to fix it."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a command; its message says how to go on (`main` prints it)."""


EXTRA_OF_MODULE = {
    "torch": "train",
    "transformers": "train",
    "tokenizers": "train",
    "trl": "trl",
    "datasets": "trl",
    "accelerate": "trl",
    "matplotlib": "plot",
    "ray": "ray",
    "math_verify": "math",
    "reasoning_gym": "reasoning-gym",
    "verl": "verl",
}
"""Top-level module -> the extra that installs it, for 'not installed' messages."""


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already states it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.required or action.default is argparse.SUPPRESS or "(default" in text:
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return f"{text} (default: off)"
        if action.default is None or not action.option_strings:
            return text
        value = action.default
        if isinstance(value, tuple | list):
            value = ",".join(str(v) for v in value)
        return f"{text} (default: {str(value).replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """argparse with the shared help formatter and two-line errors (no usage dump)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if len(message) > 400:  # argparse quotes the whole value: `--steps 999...` (5,000 9s)
            message = f"{message[:300]}...{message[-60:]}"
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


# ---------------------------------------------------------------------------- values


def parse_value(text: str) -> Any:
    """'0.1' -> 0.1, 'true' -> True, 'grpo' -> 'grpo', '[1, 2]' -> [1, 2]."""
    if json_depth(text) > MAX_VALUE_DEPTH:
        raise UsageError(f"value nested deeper than {MAX_VALUE_DEPTH} levels: {text[:40]}...")
    if text in ("True", "False"):  # Python's spelling, as `frontier selectors` shows defaults
        return text == "True"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(items: Sequence[str], flag: str) -> dict[str, Any]:
    """KEY=VALUE pairs from repeated --set style flags, with a clear error for bad ones."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} expects KEY=VALUE, got {item!r} (e.g. {flag} lam=0.2)")
        out[key.strip()] = parse_value(value.strip())
    return out


def add_sampler_config_flag(p: argparse.ArgumentParser) -> None:
    """--sampler-config KEY=VALUE (repeatable): a field of --sampler's config, as `frontier
    train` and `frontier simulate` both take it (`sampler_settings_arg` reads it)."""
    p.add_argument(
        "--sampler-config",
        action="append",
        metavar="KEY=VALUE",
        help="a field of --sampler's config, e.g. budget=0.5 for allocation (default: none)",
    )


def sampler_settings_arg(args: argparse.Namespace) -> dict[str, Any]:
    """The fields --sampler-config sets ({} when none); UsageError when they are given
    without --sampler."""
    settings = parse_assignments(getattr(args, "sampler_config", None) or [], "--sampler-config")
    if getattr(args, "sampler", None) is None and settings:
        raise UsageError("--sampler-config needs --sampler NAME: the sampler it configures")
    return settings


def positive_int(text: str) -> int:
    """An argparse type: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an int in [lo, hi], refused at parse time with the range named."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in [{lo}, {hi}], got {text!r}")
        return value

    parse.__name__ = f"int in [{lo}, {hi}]"
    return parse


def floats(text: str) -> tuple[float, ...]:
    """'0.5,0.7' -> (0.5, 0.7)."""
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc


# ---------------------------------------------------------------------------- config dataclasses


def add_config_flags(
    parser: argparse.ArgumentParser,
    cls: type,
    skip: Sequence[str] = (),
    choices: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """One --flag per dataclass field, typed from the annotation, help from the docstring.

    The default (None: "not given") is resolved by the dataclass; the help shows it."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    defaults = cls()
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        options = (choices or {}).get(f.name)
        one_of = f" (one of: {', '.join(map(str, options))})" if options else ""
        help_text = f"{docs.get(f.name, '')}{one_of} (default: {shown})".replace("%", "%%")
        hint = hints[f.name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None -> X
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": help_text}
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _tuple_type(hint) if typing.get_origin(hint) is tuple else hint
            kwargs["metavar"] = f.name.upper()
            if options:
                kwargs["choices"] = list(options)
        parser.add_argument(flag, **kwargs)


def _tuple_type(hint: Any) -> Any:
    """The argparse type of a tuple field: comma-separated ints, or strings for tuple[str, ...]."""
    if typing.get_args(hint)[:1] == (str,):
        return str_tuple
    return int_tuple


def str_tuple(text: str) -> tuple[str, ...]:
    """'greso,screen4' -> ('greso', 'screen4'); an argparse type."""
    return tuple(v.strip() for v in text.split(",") if v.strip())


def config_from_args(cls: type, args: argparse.Namespace, **extra: Any) -> Any:
    """The dataclass from the flags given (others keep its defaults); bad values: UsageError."""
    values = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if getattr(args, f.name, None) is not None
    }
    try:
        return cls(**{**values, **extra})  # `extra` wins: a field its flag only spells
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from exc


# ---------------------------------------------------------------------------- --config FILE.yaml


def load_yaml_file(path: str, label: str = "--config") -> dict[str, Any]:
    """The mapping in YAML file `path` (bounded, safe loader); UsageError naming `label`."""
    try:
        import yaml
    except ImportError as exc:
        raise UsageError(f"{label} needs PyYAML: pip install pyyaml") from exc
    from frontier_rft.core.yamlsafe import MAX_YAML_CHARS, RefusedYAML, load_yaml

    # A path of 5,000 characters is shown cut, so the reason after it still shows.
    shown = path if len(path) <= 300 else f"{path[:150]}...{path[-50:]}"
    try:
        file = Path(path).expanduser()  # RuntimeError for ~nosuchuser
        if not file.is_file():
            state = "is not a file" if file.exists() else "no such file"
            raise UsageError(f"{label} {shown}: {state} (cwd {Path.cwd()})")
        with open(file, encoding="utf-8") as fh:
            data = load_yaml(fh.read(MAX_YAML_CHARS + 1))
    except RuntimeError as exc:  # from expanduser
        user = str(shown).split("/", 1)[0]
        raise UsageError(f"{label} {shown}: no such file ({user}: no such user)") from exc
    except OSError as exc:
        raise UsageError(f"{label} {shown}: cannot be read ({' '.join(str(exc).split())})") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{label} {shown}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        why = getattr(exc, "problem", None) or (str(exc) if type(exc) is yaml.YAMLError else "")
        what = "refused" if isinstance(exc, RefusedYAML) else "not valid YAML"
        raise UsageError(f"{label} {shown}: {what}{at}{': ' + why if why else ''}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{label} {shown}: expected a mapping of keys to values")
    return data


def _as_flag_value(action: argparse.Action, key: str, value: Any, path: str) -> Any:
    """A YAML value as the flag would have parsed it from the command line."""
    if isinstance(action, argparse._AppendAction):  # --set / --scenario-set
        if isinstance(value, Mapping):
            return [f"{k}={json.dumps(v)}" for k, v in value.items()]
        if isinstance(value, list):
            return [str(v) for v in value]
        raise UsageError(f"--config {path}: {key} must be a mapping of KEY: VALUE")
    if isinstance(action, argparse._StoreTrueAction | argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise UsageError(f"--config {path}: {key} must be true or false, got {value!r}")
        return value
    if value is None:
        return None
    text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if isinstance(value, bool):
        text = text.lower()
    try:
        parsed = action.type(text) if callable(action.type) else text
    except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
        raise UsageError(f"--config {path}: {key}: {exc}") from exc
    if action.choices is not None and parsed not in action.choices:
        options = ", ".join(map(str, action.choices))
        raise UsageError(f"--config {path}: {key} is {parsed!r}; choose from {options}")
    return parsed


def apply_config_file(parser: argparse.ArgumentParser, path: str) -> None:
    """Make the values of a YAML file (keys = flag names) the parser's defaults, so flags
    given on the command line still win."""
    data = load_yaml_file(path)
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    defaults: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).lstrip("-").replace("-", "_")
        action = actions.get(key)
        if action is None or key in ("config", "help"):
            known = ", ".join(sorted(k for k in actions if k not in ("config", "help")))
            raise UsageError(f"--config {path}: unknown key {raw_key!r}; known keys: {known}")
        defaults[key] = _as_flag_value(action, str(raw_key), value, path)
    parser.set_defaults(**defaults)
    for action in parser._actions:  # a required flag set by the file is no longer required
        if action.dest in defaults and defaults[action.dest] is not None:
            action.required = False


# ---------------------------------------------------------------------------- paths


def model_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """A local model directory (config.json inside), a GGUF file or a named pretrained model
    (`frontier_rft.lm.pretrained.PRETRAINED`); never a hub id. UsageError otherwise."""
    from frontier_rft.lm.pretrained import (
        INSTALL_HINT,
        PRETRAINED,
        is_gguf_file,
        is_pretrained_name,
        smollm2_gguf,
    )

    if is_pretrained_name(path):
        if smollm2_gguf() is None:
            raise UsageError(f"{flag} {path}: {INSTALL_HINT}")
        return Path(path)
    if is_gguf_file(Path(path)):
        return Path(path)
    problem = model_dir_problem(path, flag)
    if problem is None:
        return Path(path)
    named = f", a .gguf file or a model name ({', '.join(PRETRAINED)})"
    if problem.endswith("no such directory"):
        raise UsageError(
            f"{problem}. frontier reads local model directories (a build-model, sft or train "
            f"output){named}, and never downloads from the hub"
        )
    raise UsageError(f"{problem}; pass a build-model, sft or train output directory{named}")


def new_model_dir(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """An output model directory that holds no model yet, or `overwrite`; UsageError otherwise."""
    p = Path(path)
    if not overwrite and (p / "config.json").is_file():
        raise UsageError(
            f"--out {p} already holds a model; choose another --out, remove that directory, "
            "or pass --overwrite to replace the model in it"
        )
    return p


def run_dir(path: str | os.PathLike[str], flag: str = "--out") -> Path:
    """A `frontier train` run directory with its run.json; UsageError otherwise."""
    p = Path(path)
    if not (p / "run.json").is_file():
        state = "does not exist" if not p.exists() else "has no run.json"
        raise UsageError(
            f"nothing to resume: {flag} {p} {state}. Start the run without --resume "
            "(frontier train --model DIR --out DIR), or point --out at an existing run"
        )
    return p


def quiet_transformers() -> None:
    """transformers' own progress bars and info logs off: the CLI prints its own."""
    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def print_error(prog: str, message: str, hint: str = "") -> None:
    """At most two lines on stderr: the error with its fix, then an optional hint."""
    text = " ".join(str(message).split()) or "failed"
    if len(text) > 600:  # a message quoting a 5,000-character path or name
        text = f"{text[:400]}...{text[-150:]}"
    sys.stderr.write(f"{prog}: error: {text}\n")
    if hint:
        sys.stderr.write(f"{hint}\n")
