r"""Math tasks: the last `\boxed{...}` of a completion, checked against the reference answer
for mathematical equivalence with Hugging Face's `math-verify` (optional extra `math`).

math-verify guards its parser and comparison with `signal.alarm`, which only works in the
main thread; we call it with those timeouts off (`parsing_timeout=None`,
`timeout_seconds=None`) so scoring works from trainer threads. A timeout is still needed:
sympy evaluates `\boxed{10^{10^{10}}}` forever. So by default the check runs in a
persistent worker process that is killed and replaced when one answer takes longer than
`timeout_s` (inside bubblewrap when available, to keep sympy's parsing of model output
out of the trainer's process); `isolate=False` runs it in-process (faster, no hang
protection beyond the input caps).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.sandbox import SANDBOX_MODES, SandboxLimits
from frontier_rft.tasks.sandbox_worker import SandboxedWorker, package_root, serve_json_lines

__all__ = [
    "MATH_PROMPT",
    "MathVerifier",
    "extract_boxed",
    "make_math_items",
    "math_equivalent",
]

MATH_PROMPT = "{problem}\nPut your final answer within \\boxed{{}}."
"""User message of the SEC paper's math prompt (appendix C)."""

_BOXES = ("\\boxed", "\\fbox")
WORKER_LIMITS = SandboxLimits(cpu_s=3600, memory_mb=2048, max_processes=64, open_files=256)
"""Limits of the scoring worker (per-answer time is MathVerifier.timeout_s)."""


def extract_boxed(text: str, *, max_chars: int = 1024) -> str | None:
    r"""Content of the last `\boxed{...}` (nested braces balanced) or `\boxed x`; None if
    absent, unbalanced, empty or longer than `max_chars`. Linear time."""
    start, name = max((text.rfind(b), b) for b in _BOXES)
    if start < 0:
        return None
    i = start + len(name)
    if text[i : i + 1] == " ":  # "\boxed 5": the argument is the next word
        words = text[i + 1 : i + 2 + max_chars].split("$")[0].split()
        return words[0] if words and len(words[0]) <= max_chars else None
    if i >= len(text) or text[i] != "{":
        return None
    depth = 0
    for j in range(i, min(len(text), i + max_chars + 2)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                content = text[i + 1 : j].strip()
                return content or None
    return None  # unbalanced, or longer than max_chars


def math_equivalent(gold: str, answer: str) -> bool:
    r"""math-verify equivalence of two LaTeX answers (each wrapped in \boxed{}), timeouts off."""
    mv = importlib.import_module("math_verify")  # optional extra: frontier-rft[math]
    gold_parsed = mv.parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
    answer_parsed = mv.parse(f"\\boxed{{{answer}}}", parsing_timeout=None)
    if not gold_parsed or not answer_parsed:
        return False
    return bool(mv.verify(gold_parsed, answer_parsed, timeout_seconds=None))


def _worker(mode: str, start_s: float) -> SandboxedWorker:
    return SandboxedWorker(
        "frontier_rft.tasks.math_tasks",
        limits=WORKER_LIMITS,
        mode=mode,
        binds=(package_root(),),
        start_s=start_s,
    )


@dataclass(frozen=True)
class MathVerifier:
    r"""Reward 1.0 when the last \boxed{} is equivalent to the reference answer, else 0.0
    (the SEC paper's binary math reward; set format_reward for partial credit)."""

    correct_reward: float = 1.0
    """Reward for an equivalent answer."""
    format_reward: float = 0.0
    r"""Reward for a \boxed{} answer that is not equivalent (SEC: 0 for math)."""
    max_answer_chars: int = 1024
    r"""Longer \boxed{} contents are rejected (reward 0) before parsing."""
    isolate: bool = True
    """Check in a sandboxed worker process that is killed after timeout_s (hang-proof)."""
    timeout_s: float = 5.0
    """Wall-clock limit for one equivalence check when isolate=True (worker ready)."""
    start_timeout_s: float = 60.0
    """Most time a worker may take to start (import math-verify), counted from its spawn;
    a worker killed for a hang is replaced at once, so its successor starts meanwhile."""
    sandbox: str = "auto"
    """Worker isolation: 'auto' (bubblewrap if it works, else limits alone), 'require',
    'limits_only'."""
    _worker: SandboxedWorker = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_field_types(self)
        check(
            0.0 <= self.format_reward <= self.correct_reward <= 1.0,
            f"need 0 <= format_reward <= correct_reward <= 1, got {self.format_reward}, "
            f"{self.correct_reward}",
        )
        check(self.max_answer_chars >= 1, "max_answer_chars must be positive")
        for name in ("timeout_s", "start_timeout_s"):
            value = getattr(self, name)
            check(value > 0, f"{name} must be a positive number of seconds, got {value}")
        check_choice("sandbox", self.sandbox, SANDBOX_MODES)
        if importlib.util.find_spec("math_verify") is None:
            raise ImportError("MathVerifier needs math-verify: pip install 'frontier-rft[math]'")
        worker = _worker(self.sandbox, self.start_timeout_s)
        object.__setattr__(self, "_worker", worker)  # frozen: set once here

    @property
    def max_call_s(self) -> float:
        """Upper bound on one `score` call with isolate=True, worker (re)start included."""
        return self.start_timeout_s + self.timeout_s

    def score(self, item: TaskItem, completion: str) -> float:
        r"""correct_reward if equivalent, format_reward if boxed but not, else 0."""
        answer = extract_boxed(completion, max_chars=self.max_answer_chars)
        if answer is None:
            return 0.0
        gold = str(item.reference["answer"])
        if self.isolate:
            same = self._worker.ask([gold, answer], self.timeout_s) is True
        else:
            same = math_equivalent(gold, answer)
        return self.correct_reward if same else self.format_reward

    def close(self) -> None:
        """Stop the worker process (a new one starts on the next score)."""
        self._worker.close()


def make_math_items(records: Iterable[Mapping[str, Any]], *, start_id: int = 0) -> list[TaskItem]:
    r"""TaskItems from records with 'problem' and 'answer' (or a 'solution' holding a
    \boxed{} answer) and an optional 'level' (int, or MATH's 'Level 3': stored as 2)."""
    items = []
    for k, rec in enumerate(records):
        answer = rec.get("answer")
        if answer is None and "solution" in rec:
            answer = extract_boxed(str(rec["solution"]), max_chars=10_000)
        if answer is None:
            raise ValueError(f"record {k} has no 'answer' and no \\boxed{{}} in 'solution'")
        level = rec.get("level", 0)
        if isinstance(level, str):  # MATH: "Level 1".."Level 5" -> 0..4
            digits = "".join(ch for ch in level if ch.isdigit())
            level = int(digits) - 1 if digits else 0
        items.append(
            TaskItem(
                task_id=start_id + k,
                domain="math",
                prompt=MATH_PROMPT.format(problem=rec["problem"]),
                reference={"answer": str(answer)},
                level=int(level),
                difficulty=float(level),
            )
        )
    return items


def _check(request: list[str]) -> bool:
    gold, answer = request
    try:
        return math_equivalent(gold, answer)
    except Exception:  # a parse/compare failure means "not shown equivalent"
        return False


if __name__ == "__main__":  # the worker: python -m frontier_rft.tasks.math_tasks
    import logging

    logging.disable(logging.WARNING)  # math-verify warns once that its timeouts are off
    _check(["1", "1"])  # import and warm math-verify up: start-up ends before "ready"
    serve_json_lines(_check)
