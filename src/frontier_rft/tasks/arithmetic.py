"""Multi-digit addition with carries (and differences, products): graded difficulty, shared skills.

Why this family for the real-RL selector benchmark (docs/results/real_rl.md): a 1 M-parameter
transformer can learn it in minutes on a CPU, its difficulty is graded by a knob a generator
controls exactly (operand digits; within a level, the number and length of carry chains),
and the skills are shared across levels: writing a digit of the sum needs the digit pair and
the carry coming in from the right, so what a policy learns on 3-digit sums (carry
propagation) is a prerequisite of 5-digit ones. Written most-significant digit first, as
people (and LLMs) write sums, the carry into a column must be foreseen from the digits to its
right: the long carry chains of the harder levels are exactly what a small model gets wrong.

Prompt: "What is 4721 + 389? Reply with the number only." Answer: "5110". A level may also
ask for a difference ("2-2": the larger operand first, so the answer is >= 0) or a product
("1*2"), for a mix of skills a pretrained model holds to different degrees (the SmolLM2
testbed of `frontier bench-rl --scale gpu-smollm2`). The verifier takes
the answer inside `<answer>...</answer>` or `\\boxed{...}` when present, else the last integer
in the completion (commas and spaces inside a number are accepted: "5,110"). Reward 1.0 for
the exact sum, `format_reward` (default 0) for another integer, 0.0 for no integer. Model
output is only ever matched by regular expressions, never evaluated.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.config import check
from frontier_rft.tasks.base import TaskItem

__all__ = [
    "ARITHMETIC_PROMPT",
    "OPERATIONS",
    "OPERATION_FEATURE_NAMES",
    "OPERATION_PROMPT",
    "AdditionLevel",
    "ArithmeticVerifier",
    "addition_features",
    "addition_levels",
    "arithmetic_key",
    "borrow_profile",
    "carry_profile",
    "extract_integer",
    "generate_addition",
]

ARITHMETIC_PROMPT = "What is {a} + {b}? Reply with the number only."
"""The user message of one addition task."""
OPERATION_PROMPT = "What is {a} {op} {b}? Reply with the number only."
"""The user message of any task (op "+" gives ARITHMETIC_PROMPT's text)."""
OPERATIONS = ("+", "-", "*")
"""Operations a level may name: sum, difference (larger operand first), product."""
_KEY_PREFIX = {"+": "add", "-": "sub", "*": "mul"}

MAX_DIGITS = 12
"""Largest operand length a level may ask for."""


@dataclass(frozen=True)
class AdditionLevel:
    """One difficulty level: the digit counts of the two operands and the operation."""

    digits_a: int
    """Digits of the first operand (leading digit non-zero)."""
    digits_b: int
    """Digits of the second operand (leading digit non-zero)."""
    op: str = "+"
    """Operation: '+' (sum), '-' (difference, larger operand first) or '*' (product)."""

    def __post_init__(self) -> None:
        for name in ("digits_a", "digits_b"):
            value = getattr(self, name)
            check(
                isinstance(value, int) and 1 <= value <= MAX_DIGITS,
                f"{name} must be an int in [1, {MAX_DIGITS}], got {value!r}",
            )
        check(self.op in OPERATIONS, f"op must be one of {OPERATIONS}, got {self.op!r}")

    @property
    def name(self) -> str:
        sep = "x" if self.op == "+" else self.op
        return f"{self.digits_a}{sep}{self.digits_b}"


def addition_levels(spec: str) -> list[AdditionLevel]:
    """'1,2,3' (sums of two D-digit operands), '4x2' or '4+2' (4 digits + 2 digits), '2-2' (a
    difference), '1*2' (a product), in order."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        op = next((o for o in OPERATIONS if o in part), "+")
        first, sep, second = part.partition("x" if op == "+" and "+" not in part else op)
        try:
            a = int(first)
            b = int(second) if sep else a
            out.append(AdditionLevel(a, b, op))
        except ValueError as exc:
            raise ValueError(
                f"bad arithmetic level {part!r} in {spec!r}: write D (two D-digit operands "
                "summed), DxE or D+E (D digits + E digits), D-E (difference) or D*E (product), "
                f"D and E in 1..{MAX_DIGITS}, e.g. '1,2,3,4x2,2-2,1*2'"
            ) from exc
    check(bool(out), f"no arithmetic level in {spec!r}")
    return out


def carry_profile(a: int, b: int) -> tuple[int, int]:
    """(number of carries, longest run of consecutive carries) of the column sum a + b."""
    return _column_profile(a, b, subtract=False)


def borrow_profile(a: int, b: int) -> tuple[int, int]:
    """(number of borrows, longest run of consecutive borrows) of the column difference a - b,
    a >= b >= 0."""
    return _column_profile(a, b, subtract=True)


def _column_profile(a: int, b: int, subtract: bool) -> tuple[int, int]:
    count = longest = run = 0
    flag = 0  # the carry (sum) or borrow (difference) into the next column
    while a or b:
        low_a, low_b = a % 10, b % 10
        flag = int(low_a - flag < low_b) if subtract else int(low_a + low_b + flag >= 10)
        if flag:
            count += 1
            run += 1
            longest = max(longest, run)
        else:
            run = 0
        a //= 10
        b //= 10
    return count, longest


def _operand(rng: random.Random, digits: int) -> int:
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randint(low, 10**digits - 1)


def generate_addition(
    n: int, seed: int, levels: Sequence[AdditionLevel], *, start_id: int = 0
) -> list[TaskItem]:
    """`n` distinct arithmetic tasks, levels in round-robin order (level = position), seeded.

    Each item's reference holds `a`, `b` and `answer` (and `op` when the level is not a sum);
    `difficulty` is the digits of the longer operand plus a tenth of the carries (a 4-digit
    sum with 3 carries: 4.3), of the borrows for a difference, and the digits of both
    operands for a product.
    """
    check(isinstance(n, int) and n >= 0, f"n must be a non-negative int, got {n!r}")
    check(len(levels) > 0, "levels must name at least one level")
    rng = random.Random(seed)
    seen: set[tuple[str, int, int]] = set()
    items: list[TaskItem] = []
    attempts = 0
    while len(items) < n:
        idx = len(items) % len(levels)
        spec = levels[idx]
        a, b = _operand(rng, spec.digits_a), _operand(rng, spec.digits_b)
        if spec.op == "-" and a < b:
            a, b = b, a  # the larger operand first: answers are >= 0
        attempts += 1
        if (spec.op, a, b) in seen:
            check(
                attempts < 20 * n + 1000,
                f"only {len(items)} distinct tasks drawn for level {spec.name}: request fewer "
                f"than {n} or use longer operands",
            )
            continue
        seen.add((spec.op, a, b))
        items.append(_task(start_id + len(items), idx, spec, a, b))
    return items


def _task(task_id: int, level: int, spec: AdditionLevel, a: int, b: int) -> TaskItem:
    digits = float(max(spec.digits_a, spec.digits_b))
    if spec.op == "+":
        reference: dict[str, object] = {"a": a, "b": b, "answer": a + b}
        difficulty = digits + 0.1 * carry_profile(a, b)[0]
    elif spec.op == "-":
        reference = {"a": a, "b": b, "answer": a - b, "op": "-"}
        difficulty = digits + 0.1 * borrow_profile(a, b)[0]
    else:
        reference = {"a": a, "b": b, "answer": a * b, "op": "*"}
        difficulty = float(spec.digits_a + spec.digits_b)
    return TaskItem(
        task_id=task_id,
        domain="arithmetic",
        prompt=OPERATION_PROMPT.format(a=a, op=spec.op, b=b),
        reference=reference,
        level=level,
        difficulty=difficulty,
    )


def arithmetic_key(reference: Mapping[str, Any]) -> str | None:
    """Canonical identity of a task from its reference: the operation and its operands
    (sorted for the commutative + and *, so 3 + 5 and 5 + 3 are one task); None when the
    reference is not an arithmetic task's."""
    if "a" not in reference or "b" not in reference:
        return None
    op = reference.get("op", "+")
    if op not in _KEY_PREFIX:
        return None
    a, b = int(reference["a"]), int(reference["b"])
    if op != "-":
        a, b = sorted((a, b))
    return f"{_KEY_PREFIX[op]}|{a}|{b}"


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


OPERATION_FEATURE_NAMES = ("is_difference", "is_product")
"""Columns `addition_features` appends when the items include differences or products."""


def addition_features(items: Sequence[TaskItem], normalize: bool = True) -> NDArray[np.float64]:
    """(N, 8) task-structured features: operand and answer lengths, carries, longest carry
    chain, carries per column, digit sums (standardised per column when `normalize`).

    For a difference the carry columns count borrows; for a product they are 0. Items that
    include a difference or a product get the two OPERATION_FEATURE_NAMES columns too
    (N, 10); a pool of sums alone keeps its 8 columns."""
    rows = []
    mixed = any(it.reference.get("op", "+") != "+" for it in items)
    for it in items:
        a, b, ans = it.reference["a"], it.reference["b"], it.reference["answer"]
        op = it.reference.get("op", "+")
        carries, longest = {"+": carry_profile, "-": borrow_profile}.get(op, _no_carries)(a, b)
        cols = max(len(str(a)), len(str(b)))
        row = [
            len(str(a)),
            len(str(b)),
            len(str(ans)),
            carries,
            longest,
            carries / cols,
            sum(map(int, str(a))),
            sum(map(int, str(b))),
        ]
        if mixed:
            row += [float(op == "-"), float(op == "*")]
        rows.append(row)
    width = len(ADDITION_FEATURE_NAMES) + (len(OPERATION_FEATURE_NAMES) if mixed else 0)
    x = np.asarray(rows, dtype=np.float64).reshape(-1, width)
    if normalize and x.shape[0] > 1:
        std = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    return x


def _no_carries(a: int, b: int) -> tuple[int, int]:
    return 0, 0
