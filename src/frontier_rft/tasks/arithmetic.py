"""Multi-digit addition with carries: a task family with graded difficulty and prerequisites.

Why this family for the real-RL selector benchmark (docs/results/real_rl.md): a 1 M-parameter
transformer can learn it in minutes on a CPU, its difficulty is graded by a knob a generator
controls exactly (operand digits; within a level, the number and length of carry chains),
and the skills are shared across levels: writing a digit of the sum needs the digit pair and
the carry coming in from the right, so what a policy learns on 3-digit sums (carry
propagation) is a prerequisite of 5-digit ones. Written most-significant digit first, as
people (and LLMs) write sums, the carry into a column must be foreseen from the digits to its
right: the long carry chains of the harder levels are exactly what a small model gets wrong.

Prompt: "What is 4721 + 389? Reply with the number only." Answer: "5110". The verifier takes
the answer inside `<answer>...</answer>` or `\\boxed{...}` when present, else the last integer
in the completion (commas and spaces inside a number are accepted: "5,110"). Reward 1.0 for
the exact sum, `format_reward` (default 0) for another integer, 0.0 for no integer. Model
output is only ever matched by regular expressions, never evaluated.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check
from frontier_rft.tasks.base import TaskItem

__all__ = [
    "ARITHMETIC_PROMPT",
    "AdditionLevel",
    "ArithmeticVerifier",
    "addition_features",
    "addition_levels",
    "carry_profile",
    "extract_integer",
    "generate_addition",
]

ARITHMETIC_PROMPT = "What is {a} + {b}? Reply with the number only."
"""The user message of one addition task."""

MAX_DIGITS = 12
"""Largest operand length a level may ask for."""


@dataclass(frozen=True)
class AdditionLevel:
    """One difficulty level: the digit counts of the two operands."""

    digits_a: int
    """Digits of the first operand (leading digit non-zero)."""
    digits_b: int
    """Digits of the second operand (leading digit non-zero)."""

    def __post_init__(self) -> None:
        for name in ("digits_a", "digits_b"):
            value = getattr(self, name)
            check(
                isinstance(value, int) and 1 <= value <= MAX_DIGITS,
                f"{name} must be an int in [1, {MAX_DIGITS}], got {value!r}",
            )

    @property
    def name(self) -> str:
        return f"{self.digits_a}x{self.digits_b}"


def addition_levels(spec: str) -> list[AdditionLevel]:
    """'1,2,3' (both operands of D digits) or '4x2' (4 digits + 2 digits), in order."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        first, sep, second = part.partition("x")
        try:
            a = int(first)
            b = int(second) if sep else a
            out.append(AdditionLevel(a, b))
        except ValueError as exc:
            raise ValueError(
                f"bad addition level {part!r} in {spec!r}: write D (two D-digit operands) or "
                f"DxE (D digits + E digits), D and E in 1..{MAX_DIGITS}, e.g. '1,2,3,4x2'"
            ) from exc
    check(bool(out), f"no addition level in {spec!r}")
    return out


def carry_profile(a: int, b: int) -> tuple[int, int]:
    """(number of carries, longest run of consecutive carries) of the column sum a + b."""
    carries = longest = run = 0
    carry = 0
    while a or b or carry:
        s = a % 10 + b % 10 + carry
        carry = int(s >= 10)
        if carry:
            carries += 1
            run += 1
            longest = max(longest, run)
        else:
            run = 0
        a //= 10
        b //= 10
    return carries, longest


def _operand(rng: random.Random, digits: int) -> int:
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randint(low, 10**digits - 1)


def generate_addition(
    n: int, seed: int, levels: Sequence[AdditionLevel], *, start_id: int = 0
) -> list[TaskItem]:
    """`n` distinct addition tasks, levels in round-robin order (level = position), seeded.

    Each item's reference holds `a`, `b` and `answer`; `difficulty` is the digits of the
    longer operand plus a tenth of the carries (a 4-digit sum with 3 carries: 4.3).
    """
    check(isinstance(n, int) and n >= 0, f"n must be a non-negative int, got {n!r}")
    check(len(levels) > 0, "levels must name at least one level")
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    items: list[TaskItem] = []
    attempts = 0
    while len(items) < n:
        idx = len(items) % len(levels)
        spec = levels[idx]
        a, b = _operand(rng, spec.digits_a), _operand(rng, spec.digits_b)
        attempts += 1
        if (a, b) in seen:
            check(
                attempts < 20 * n + 1000,
                f"only {len(items)} distinct tasks drawn for level {spec.name}: request fewer "
                f"than {n} or use longer operands",
            )
            continue
        seen.add((a, b))
        carries, _ = carry_profile(a, b)
        items.append(
            TaskItem(
                task_id=start_id + len(items),
                domain="arithmetic",
                prompt=ARITHMETIC_PROMPT.format(a=a, b=b),
                reference={"a": a, "b": b, "answer": a + b},
                level=idx,
                difficulty=float(max(spec.digits_a, spec.digits_b)) + 0.1 * carries,
            )
        )
    return items


def addition_demonstration(item: TaskItem) -> str:
    """The completion the verifier scores 1.0: the sum's digits."""
    return str(item.reference["answer"])


_TAGGED = (
    re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL),
    re.compile(r"\\boxed\{([^{}]*)\}"),
)
_INTEGER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?!\d)|-?\d+")


def extract_integer(completion: str, max_chars: int = 4096) -> int | None:
    """The answer of a completion: inside the last <answer>/\\boxed{} if any, else the last
    integer of the text (thousands separators accepted). None when there is no integer."""
    text = completion[-max_chars:]
    for pattern in _TAGGED:
        found = pattern.findall(text)
        if found:
            text = found[-1]
            break
    numbers = _INTEGER.findall(text)
    if not numbers:
        return None
    return int(numbers[-1].replace(",", ""))


@dataclass(frozen=True)
class ArithmeticVerifier:
    """Reward 1.0 for the exact sum, `format_reward` for another integer, else 0.0."""

    correct_reward: float = 1.0
    """Reward of the exact answer."""
    format_reward: float = 0.0
    """Reward of an integer that is not the answer (0: binary success reward)."""

    def __post_init__(self) -> None:
        check(
            0.0 <= self.format_reward <= self.correct_reward <= 1.0,
            f"need 0 <= format_reward <= correct_reward <= 1, got {self.format_reward}, "
            f"{self.correct_reward}",
        )

    def score(self, item: TaskItem, completion: str) -> float:
        value = extract_integer(completion)
        if value is None:
            return 0.0
        return self.correct_reward if value == item.reference["answer"] else self.format_reward


ADDITION_FEATURE_NAMES = (
    "digits_a",
    "digits_b",
    "answer_digits",
    "carries",
    "longest_carry_chain",
    "carry_share",
    "digit_sum_a",
    "digit_sum_b",
)
"""Columns of `addition_features` (before standardisation)."""


def addition_features(items: Sequence[TaskItem], normalize: bool = True) -> NDArray[np.float64]:
    """(N, 8) task-structured features: operand and answer lengths, carries, longest carry
    chain, carries per column, digit sums (standardised per column when `normalize`)."""
    rows = []
    for it in items:
        a, b, ans = it.reference["a"], it.reference["b"], it.reference["answer"]
        carries, longest = carry_profile(a, b)
        cols = max(len(str(a)), len(str(b)))
        rows.append(
            [
                len(str(a)),
                len(str(b)),
                len(str(ans)),
                carries,
                longest,
                carries / cols,
                sum(map(int, str(a))),
                sum(map(int, str(b))),
            ]
        )
    x = np.asarray(rows, dtype=np.float64).reshape(-1, len(ADDITION_FEATURE_NAMES))
    if normalize and x.shape[0] > 1:
        std = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return x
