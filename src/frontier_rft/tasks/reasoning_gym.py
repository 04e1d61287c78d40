"""Any reasoning-gym task by name, with its own scorer (optional extra `reasoning-gym`).

reasoning-gym (procedural generators; no downloads: its word lists and ARC boards ship in
the wheel) builds entries `{question, answer, metadata}` and scores an answer with
`dataset.score_answer(answer, entry)`. A TaskItem keeps the entry JSON-encoded in
`reference` (tuples and sets tagged so they come back as they were) together with the
dataset name and config, so mixed tasks share one dataset file and the verifier rebuilds
the scorer by name.

Several of its scorers `eval` the model's answer (string_insertion, spiral_matrix,
n_queens, binary_matrix; sympy's `parse_expr` in countdown, puzzle24, the integration
and polynomial tasks). So the verifier scores in a worker process inside bubblewrap (it refuses
to run without one unless you opt in to limits alone), killed and replaced when one
answer exceeds `timeout_s`. `isolate=False` scores in-process: trusted answers only.

Code that runs in the worker could also print a reply of its own and so forge its score.
So those routes are closed where they are known (reasoning-gym 0.1.25): in the worker the
four scorers that `eval` a list answer read literals only (`ast.literal_eval`), and an
answer to a task whose scorer parses it with sympy must be plain math (`is_plain_math`),
else it is scored as an empty answer. Replies carry a request id and the host accepts only
a number in [0, 1].
"""

from __future__ import annotations

import ast
import builtins
import difflib
import importlib
import importlib.util
import io
import json
import keyword
import math
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from frontier_rft.core.config import check, check_choice
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.sandbox import SANDBOX_MODES, SandboxLimits
from frontier_rft.tasks.sandbox_worker import SandboxedWorker, package_root, serve_json_lines

__all__ = [
    "RG_ANSWER_INSTRUCTION",
    "RGTask",
    "ReasoningGymTasks",
    "ReasoningGymVerifier",
    "decode_json",
    "encode_json",
    "extract_answer_tag",
    "is_plain_math",
]

RG_ANSWER_INSTRUCTION = "\n\nGive only your final answer between <answer> and </answer> tags."
"""Appended to each question: reasoning-gym's own prompts ask for <answer> tags."""

WORKER_LIMITS = SandboxLimits(cpu_s=3600, memory_mb=3072, max_processes=64, open_files=256)
"""Limits of the scoring worker (per-answer time is ReasoningGymVerifier.timeout_s)."""


def encode_json(value: Any) -> Any:
    """JSON-ready copy of an entry: tuples and sets become tagged dicts (decode_json)."""
    if isinstance(value, tuple):
        return {"__tuple__": [encode_json(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [encode_json(v) for v in sorted(value, key=repr)]}
    if isinstance(value, list):
        return [encode_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_json(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a TaskItem reference: {value!r}")


def decode_json(value: Any) -> Any:
    """Inverse of encode_json."""
    if isinstance(value, list):
        return [decode_json(v) for v in value]
    if isinstance(value, dict):
        if value.keys() == {"__tuple__"}:
            return tuple(decode_json(v) for v in value["__tuple__"])
        if value.keys() == {"__set__"}:
            return {decode_json(v) for v in value["__set__"]}
        return {k: decode_json(v) for k, v in value.items()}
    return value


def extract_answer_tag(text: str, *, max_chars: int = 8192) -> str | None:
    """Stripped text of the last <answer>...</answer> (linear time), None if absent/too long."""
    start = text.rfind("<answer>")
    if start < 0:
        return None
    end = text.find("</answer>", start)
    if end < 0 or end - start - 8 > max_chars:
        return None
    return text[start + 8 : end].strip()


def _rg() -> Any:
    if importlib.util.find_spec("reasoning_gym") is None:
        raise ImportError("reasoning-gym tasks need it: pip install 'frontier-rft[reasoning-gym]'")
    return importlib.import_module("reasoning_gym")


@lru_cache(maxsize=64)
def _dataset(name: str, config_json: str) -> Any:
    """A dataset instance per (name, config): the scorer may read its config."""
    return _rg().create_dataset(name, **json.loads(config_json))


@dataclass(frozen=True)
class RGTask:
    """One reasoning-gym dataset at one difficulty setting."""

    name: str
    """Dataset name, e.g. 'arc_1d', 'zebra_puzzles', 'countdown'."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """Overrides of the dataset's config (difficulty knobs), e.g. {'num_people': 4}."""
    level: int = 0
    """TaskItem.level of its items (0 = easiest)."""


@dataclass(frozen=True)
class ReasoningGymTasks:
    """Items from reasoning-gym datasets: `size` per task, seeded, in task order."""

    tasks: Sequence[str | RGTask]
    """Dataset names (default config, level 0) or RGTask specs."""
    size: int = 100
    """Items per task."""
    seed: int = 0
    """Base seed; task k uses seed + k."""
    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Config overrides by dataset name for tasks given as plain names."""
    instruction: str = RG_ANSWER_INSTRUCTION
    """Appended to each question."""

    def __post_init__(self) -> None:
        check(self.size >= 1, f"size must be >= 1, got {self.size}")
        check(len(self.tasks) > 0, "tasks must name at least one dataset, e.g. ('arc_1d',)")
        known = sorted(_rg().factory.DATASETS)
        for spec in self.specs():
            if spec.name not in known:
                close = difflib.get_close_matches(spec.name, known, n=3)
                raise ValueError(f"unknown reasoning-gym dataset {spec.name!r}; close: {close}")

    def specs(self) -> list[RGTask]:
        """The tasks as RGTask specs."""
        return [
            t if isinstance(t, RGTask) else RGTask(t, dict(self.config.get(t, {})))
            for t in self.tasks
        ]

    def items(self, *, start_id: int = 0) -> list[TaskItem]:
        """Generate the TaskItems (reference: name, config, encoded entry)."""
        items: list[TaskItem] = []
        for k, spec in enumerate(self.specs()):
            config = {**spec.config, "size": self.size, "seed": self.seed + k}
            dataset = _rg().create_dataset(spec.name, **config)
            for i in range(self.size):
                entry = dataset[i]
                items.append(
                    TaskItem(
                        task_id=start_id + len(items),
                        domain=f"rg:{spec.name}",
                        prompt=str(entry["question"]) + self.instruction,
                        reference={
                            "rg_name": spec.name,
                            "rg_config": encode_json(config),
                            "question": entry["question"],
                            "answer": encode_json(entry["answer"]),
                            "metadata": encode_json(entry.get("metadata", {})),
                        },
                        level=spec.level,
                        difficulty=float(spec.level),
                    )
                )
        return items


LITERAL_EVAL_SCORERS = (
    "reasoning_gym.algorithmic.binary_matrix",
    "reasoning_gym.algorithmic.spiral_matrix",
    "reasoning_gym.algorithmic.string_insertion",
    "reasoning_gym.games.n_queens",
)
"""Modules whose scorer runs `eval(answer)` to read a list literal: in the worker their
`eval` is `ast.literal_eval` (data, never code)."""
SYMPY_PARSED = frozenset(
    {
        "countdown",
        "intermediate_integration",
        "polynomial_multiplication",
        "puzzle24",
        "simple_integration",
    }
)
"""Datasets whose scorer parses the answer with sympy's `parse_expr`, which evals it: their
answers must pass `is_plain_math`, else they are scored as an empty answer."""
_MATH_OPS = frozenset({"+", "-", "*", "/", "**", "//", "%", "^", "(", ")", ",", "!"})
_MATH_CONSTANTS = frozenset(
    {"pi", "E", "I", "oo", "zoo", "nan", "Integer", "Rational", "Float"}
    | {"Derivative", "Integral", "Product", "Sum"}  # unevaluated forms in gold answers
)
_HARMLESS_BUILTINS = frozenset({"abs", "max", "min", "pow", "round"})
_TOKENS_OK = frozenset(
    {
        tokenize.NUMBER,
        tokenize.NEWLINE,
        tokenize.NL,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)


@lru_cache(maxsize=1)
def _reserved_names() -> frozenset[str]:
    """Names parse_expr resolves to a sympy object or a builtin, but for sympy's math
    functions and constants: plain math may not call them (other names become symbols)."""
    sympy = importlib.import_module("sympy")
    functions = importlib.import_module("sympy.functions")
    allowed = frozenset(functions.__all__) | _MATH_CONSTANTS | _HARMLESS_BUILTINS
    return (frozenset(dir(sympy)) | frozenset(dir(builtins))) - allowed


def is_plain_math(text: str, symbols: Sequence[str] = ()) -> bool:
    """True when `text` is arithmetic over numbers, symbol names and sympy's math functions.

    No strings, attribute access, subscripts, keywords, names with underscores in front,
    builtins (but abs, min, max, pow, round) or other sympy callables: what sympy's
    `parse_expr` then evals can only build an expression. `symbols` are extra allowed names.
    ASCII only; linear in the length.
    """
    if not text.isascii():
        return False
    reserved = _reserved_names()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _TOKENS_OK or (tok.type == tokenize.OP and tok.string in _MATH_OPS):
                continue
            if tok.type == tokenize.ERRORTOKEN and (tok.string.isspace() or tok.string == "!"):
                continue  # '!' is sympy's factorial (an OP from Python 3.12)
            name = tok.string
            if tok.type != tokenize.NAME or keyword.iskeyword(name) or name.startswith("_"):
                return False
            if name in reserved and name not in symbols:
                return False
    except (tokenize.TokenError, SyntaxError):  # unbalanced brackets, bad indentation
        return False
    return True


def _literal_only(source: Any, *_: Any) -> Any:
    """`eval` for a scorer that reads a list answer: a Python literal, never code."""
    return ast.literal_eval(source)


def _close_eval_routes() -> None:
    """In the worker: the LITERAL_EVAL_SCORERS' `eval` reads literals only."""
    for name in LITERAL_EVAL_SCORERS:
        try:
            module = importlib.import_module(name)
        except ImportError:  # another reasoning-gym version: that scorer moved or went
            continue
        module.eval = _literal_only  # type: ignore[attr-defined]  # shadows the builtin


def score_entry(reference: Mapping[str, Any], answer: str) -> float:
    """reasoning-gym's own score for `answer` (in-process: the scorer may eval it).

    For SYMPY_PARSED datasets an answer that is not `is_plain_math` is scored as the empty
    answer (their scorers' value for an unparseable one). A non-finite score is 0."""
    config = json.dumps(decode_json(reference["rg_config"]), sort_keys=True)
    dataset = _dataset(reference["rg_name"], config)
    metadata = decode_json(reference["metadata"])
    entry = {
        "question": reference["question"],
        "answer": decode_json(reference["answer"]),
        "metadata": metadata,
    }
    source = metadata.get("source_dataset") if isinstance(metadata, dict) else None
    if {reference["rg_name"], source} & SYMPY_PARSED:
        symbols = ("C", str(metadata.get("variable", "C")))
        if not is_plain_math(answer, symbols):
            answer = ""
    value = float(dataset.score_answer(answer, entry))
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0


def _reward(reply: Any) -> float:
    """A worker's reply as a reward: a number in [0, 1] (the worker clamps), else 0."""
    if isinstance(reply, bool) or not isinstance(reply, (int, float)):
        return 0.0
    try:
        value = float(reply)
    except OverflowError:  # an integer beyond float range
        return 0.0
    return value if 0.0 <= value <= 1.0 else 0.0  # NaN fails both comparisons


@dataclass(frozen=True)
class ReasoningGymVerifier:
    """The dataset's own score_answer on the last <answer> tag, in a sandboxed worker."""

    max_answer_chars: int = 8192
    """Longer answers score 0 without reaching the scorer."""
    isolate: bool = True
    """Score in a sandboxed worker process killed after timeout_s (the scorers eval)."""
    timeout_s: float = 10.0
    """Wall-clock limit for one answer when isolate=True."""
    sandbox: str = "require"
    """Worker isolation: 'require' (bubblewrap, else SandboxUnavailable: the scorers eval
    answers), or the explicit opt-ins 'auto' (limits alone without bubblewrap), 'limits_only'."""
    _worker: SandboxedWorker = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_choice("sandbox", self.sandbox, SANDBOX_MODES)
        check(self.max_answer_chars >= 1, "max_answer_chars must be positive")
        check(self.timeout_s > 0, f"timeout_s must be positive, got {self.timeout_s}")
        worker = SandboxedWorker(
            "frontier_rft.tasks.reasoning_gym",
            limits=WORKER_LIMITS,
            mode=self.sandbox,
            binds=(package_root(),),
        )
        object.__setattr__(self, "_worker", worker)  # frozen: set once here

    def score(self, item: TaskItem, completion: str) -> float:
        """The scorer's value in [0, 1]; 0 without an answer tag, on timeout or on error."""
        answer = extract_answer_tag(completion, max_chars=self.max_answer_chars)
        if answer is None:
            return 0.0
        if not self.isolate:
            return score_entry(item.reference, answer)
        return _reward(self._worker.ask([item.reference, answer], self.timeout_s))

    def close(self) -> None:
        """Stop the worker process (a new one starts on the next score)."""
        self._worker.close()


def _score_request(request: list[Any]) -> float:
    reference, answer = request
    try:
        return score_entry(reference, answer)
    except Exception:  # the scorer choked on this answer: it scores 0
        return 0.0


if __name__ == "__main__":  # the worker: python -m frontier_rft.tasks.reasoning_gym
    _rg()  # import reasoning-gym as start-up, before "ready": answers then get timeout_s
    _close_eval_routes()
    _reserved_names()
    serve_json_lines(_score_request)
