"""Countdown: reach a target from 3-6 numbers with + - * /, each number used exactly once.

The task of the SEC paper (3-6 numbers, difficulty = number count) and of the RLOO paper
(TinyZero prompt, answer in `<answer>...</answer>`, reward 1.0 correct / 0.1 well-formatted
but wrong / 0.0 otherwise). The verifier never calls `eval`: the answer is tokenised over a
whitelist (digits, + - * /, parentheses, whitespace), parsed by a small recursive-descent
parser with a length and nesting cap, and evaluated with exact rational arithmetic. There
is no exponent operator, so `**` and `^` are format errors; no unary minus either.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

from frontier_rft.core.config import check
from frontier_rft.tasks.base import TaskItem, TasksExhausted

__all__ = [
    "COUNTDOWN_LEVELS",
    "COUNTDOWN_PROMPT",
    "MAX_REPEATED_DRAWS",
    "CountdownAnalysis",
    "CountdownLevel",
    "CountdownVerifier",
    "analyse_countdown",
    "countdown_demonstration",
    "countdown_prompt",
    "countdown_steps",
    "evaluate_expression",
    "generate_countdown",
    "parse_expression",
    "solve_countdown",
]

COUNTDOWN_PROMPT = (
    "Using the numbers {numbers}, create an equation that equals {target}. You can use basic "
    "arithmetic operations (+, -, *, /) and each number can only be used once. Show your work "
    "in <think> </think> tags. And return the final answer in <answer> </answer> tags, for "
    "example <answer> (1 + 2) / 3 </answer>."
)
"""The TinyZero user message the RLOO paper trains on (its dataset is TinyZero's)."""

OPEN, CLOSE = "<answer>", "</answer>"


# ---------------------------------------------------------------------------- levels


@dataclass(frozen=True)
class CountdownLevel:
    """One difficulty level: how many numbers, their range and the target range."""

    num_numbers: int
    """How many numbers the prompt gives (SEC: 3-6; the level is num_numbers - 3)."""
    min_number: int = 1
    """Smallest number drawn."""
    max_number: int = 100
    """Largest number drawn."""
    min_target: int = 10
    """Smallest accepted target (targets are positive integers)."""
    max_target: int = 100
    """Largest accepted target."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.num_numbers, int) and 2 <= self.num_numbers <= 8,
            f"num_numbers must be an int in [2, 8], got {self.num_numbers!r} (SEC uses 3-6)",
        )
        check(
            1 <= self.min_number <= self.max_number,
            f"need 1 <= min_number <= max_number, got {self.min_number}, {self.max_number}",
        )
        check(
            1 <= self.min_target <= self.max_target,
            f"need 1 <= min_target <= max_target, got {self.min_target}, {self.max_target}",
        )

    @property
    def level(self) -> int:
        """TaskItem.level: 0 for 3 numbers, 3 for 6 (absolute, so splits stay comparable)."""
        return max(self.num_numbers - 3, 0)


COUNTDOWN_LEVELS: dict[int, CountdownLevel] = {
    3: CountdownLevel(3, max_target=100),
    4: CountdownLevel(4, max_target=200),
    5: CountdownLevel(5, max_target=500),
    6: CountdownLevel(6, min_target=100, max_target=999),
}
"""Default level per number count: TinyZero-like ranges for 3-4 numbers, wider above."""


def countdown_prompt(numbers: Sequence[int], target: int) -> str:
    """The user message for one instance."""
    return COUNTDOWN_PROMPT.format(numbers=list(numbers), target=target)


# ---------------------------------------------------------------------------- expressions

# An expression as built by the generator and solver: (value, text, precedence).
# Precedence: 3 = atom, 2 = * /, 1 = + -.
_Expr = tuple[Fraction, str, int]
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def _combine(a: _Expr, op: str, b: _Expr) -> _Expr | None:
    """a op b with the fewest parentheses, or None for a division by zero."""
    va, ta, pa = a
    vb, tb, pb = b
    prec = _PREC[op]
    if op == "/" and vb == 0:
        return None
    value = _apply(op, va, vb)
    left = f"({ta})" if pa < prec else ta
    # The right operand of - and / needs parentheses at equal precedence: a - (b + c).
    right = f"({tb})" if pb < prec or (pb == prec and op in "-/") else tb
    return value, f"{left} {op} {right}", prec


def _apply(op: str, a: Fraction, b: Fraction) -> Fraction:
    """a op b exactly; ZeroDivisionError on a division by zero."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b


def _atom(n: int) -> _Expr:
    return Fraction(n), str(n), 3


# ---------------------------------------------------------------------------- generator


def _random_instance(rng: random.Random, spec: CountdownLevel) -> tuple[list[int], int, str]:
    """Draw numbers and fold them with random ops (non-negative integer intermediates)."""
    for _ in range(10_000):
        numbers = [rng.randint(spec.min_number, spec.max_number) for _ in range(spec.num_numbers)]
        pool = [_atom(n) for n in numbers]
        while len(pool) > 1:
            i, j = rng.sample(range(len(pool)), 2)
            a, b = pool[i], pool[j]
            if a[0] < b[0]:
                a, b = b, a  # a >= b: subtraction stays non-negative, division a / b
            ops = ["+", "*"]
            if a[0] != b[0]:
                ops.append("-")  # a - a = 0 makes a degenerate target
            if b[0] > 1 and a[0] % b[0] == 0:
                ops.append("/")
            combined = _combine(a, rng.choice(ops), b)
            assert combined is not None  # b > 0 whenever "/" is offered
            pool = [e for k, e in enumerate(pool) if k not in (i, j)] + [combined]
        value, text, _ = pool[0]
        # A target equal to a given number reads as a trick question; draw again.
        in_range = spec.min_target <= value <= spec.max_target and value not in numbers
        if value.denominator == 1 and in_range:
            return numbers, int(value), text
    raise ValueError(
        f"could not draw a countdown instance for {spec}: widen min_target..max_target "
        "or the number range"
    )


MAX_REPEATED_DRAWS = 20_000
"""generate_countdown gives up after this many repeated draws in a row (a level with fewer
distinct items than asked for): a fixed budget, so asking for more never takes longer."""


def generate_countdown(
    n: int,
    seed: int,
    levels: Sequence[int | CountdownLevel] = (3, 4, 5, 6),
    *,
    start_id: int = 0,
) -> list[TaskItem]:
    """`n` solvable, distinct Countdown items, levels in round-robin order, seeded.

    Each item's reference holds `numbers`, `target` and the generating `solution`.
    `levels` are number counts (looked up in COUNTDOWN_LEVELS) or CountdownLevel specs.
    """
    check(isinstance(n, int) and n >= 0, f"n must be a non-negative int, got {n!r}")
    check(len(levels) > 0, "levels must name at least one level, e.g. (3, 4, 5)")
    specs = [lv if isinstance(lv, CountdownLevel) else COUNTDOWN_LEVELS[lv] for lv in levels]
    rng = random.Random(seed)
    seen: set[tuple[tuple[int, ...], int]] = set()
    items: list[TaskItem] = []
    repeats = 0  # repeated draws since the last new item: a fixed give-up budget, whatever n
    while len(items) < n:
        spec = specs[len(items) % len(specs)]
        numbers, target, solution = _random_instance(rng, spec)
        key = (tuple(sorted(numbers)), target)
        if key in seen:
            repeats += 1
            if repeats >= MAX_REPEATED_DRAWS:
                raise TasksExhausted(
                    f"only {len(items)} distinct items drawn for {spec}: request fewer than "
                    f"{n} or widen the number and target ranges",
                    len(items),
                )
            continue
        repeats = 0
        seen.add(key)
        items.append(
            TaskItem(
                task_id=start_id + len(items),
                domain="countdown",
                prompt=countdown_prompt(numbers, target),
                reference={"numbers": numbers, "target": target, "solution": solution},
                level=spec.level,
                difficulty=float(spec.num_numbers),
            )
        )
    return items


# ---------------------------------------------------------------------------- solver


def solve_countdown(
    numbers: Sequence[int], target: int, *, max_states: int = 100_000
) -> str | None:
    """An expression using each number exactly once that equals `target`, or None.

    Depth-first search over pairwise combinations with a memo of dead states; integer
    non-negative intermediates first (fast, the generator's space), then exact rationals.
    Gives up (None) after `max_states` expanded states in all (a second or two of CPU).
    """
    budget = max_states
    for rational in (False, True):
        search = _Search(Fraction(target), rational, budget)
        found = search.run([_atom(n) for n in numbers])
        if found is not None:
            return found
        budget = search.budget
    return None


class _Search:
    """One depth-first phase of solve_countdown, with its dead-state memo and budget."""

    def __init__(self, goal: Fraction, rational: bool, max_states: int) -> None:
        self.goal, self.rational, self.budget = goal, rational, max_states
        self.dead: set[tuple[Fraction, ...]] = set()

    def run(self, pool: list[_Expr]) -> str | None:
        if len(pool) == 1:
            return pool[0][1] if pool[0][0] == self.goal else None
        key = tuple(sorted(e[0] for e in pool))
        if key in self.dead or self.budget <= 0:
            return None
        self.budget -= 1
        for i in range(len(pool)):
            for j in range(i + 1, len(pool)):
                rest = [e for k, e in enumerate(pool) if k not in (i, j)]
                for cand in _children(pool[i], pool[j], self.rational):
                    found = self.run([*rest, cand])
                    if found is not None:
                        return found
        self.dead.add(key)
        return None


def _children(a: _Expr, b: _Expr, rational: bool) -> list[_Expr]:
    if a[0] < b[0]:
        a, b = b, a
    pairs = [(a, "+", b), (a, "*", b), (a, "-", b), (a, "/", b)]
    if rational:
        pairs += [(b, "-", a), (b, "/", a)]
    out = []
    for x, op, y in pairs:
        c = _combine(x, op, y)
        if c is not None and (rational or c[0].denominator == 1):
            out.append(c)
    return out


def countdown_demonstration(item: TaskItem, *, with_steps: bool = False) -> str:
    """A completion the verifier scores 1.0: `<answer>expr</answer>`, optionally after
    `<think>` with one line per operation. Uses the stored solution, else the solver."""
    ref = item.reference
    solution = ref.get("solution") or solve_countdown(ref["numbers"], ref["target"])
    if solution is None:
        raise ValueError(
            f"task {item.task_id} has no solution: {ref['numbers']} -> {ref['target']}"
        )
    answer = f"{OPEN}{solution}{CLOSE}"
    if not with_steps:
        return answer
    return "<think>\n" + "\n".join(countdown_steps(solution)) + "\n</think>\n" + answer


# ---------------------------------------------------------------------------- parser

# Parsed expression: an int literal or (op, left, right).
Node: TypeAlias = "int | tuple[str, Node, Node]"


MAX_DIGITS = 4000
"""Longest number literal parse_expression accepts (CPython's int() refuses 4,300+)."""


class ParseError(ValueError):
    """The answer is not an arithmetic expression over the whitelist."""


class TooDeep(ParseError):
    """Parentheses nest deeper than the verifier allows."""


def _tokenise(text: str, max_depth: int) -> list[str]:
    tokens: list[str] = []
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "0123456789":
            j = i
            while j < n and text[j] in "0123456789":
                j += 1
            tokens.append(text[i:j])
            i = j
            continue
        if ch in "+-*/()":
            depth += (ch == "(") - (ch == ")")
            if depth > max_depth:
                raise TooDeep(f"parentheses nest deeper than {max_depth}")
            tokens.append(ch)
        elif not ch.isspace() or not ch.isascii():
            raise ParseError(f"character {ch!r} is not allowed")
        i += 1
    return tokens


def parse_expression(text: str, *, max_depth: int = 32) -> Node:
    """Parse `text` (digits, + - * /, parentheses, whitespace) into a tree; no eval."""
    tokens = _tokenise(text, max_depth)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def chain(ops: tuple[str, str], operand: Callable[[], Node]) -> Node:
        """operand (op operand)* for an op of `ops`, left-associative."""
        nonlocal pos
        node = operand()
        while peek() in ops:
            op = tokens[pos]
            pos += 1
            node = (op, node, operand())
        return node

    def expr() -> Node:  # expr := term (('+' | '-') term)*
        return chain(("+", "-"), term)

    def term() -> Node:  # term := factor (('*' | '/') factor)*
        return chain(("*", "/"), factor)

    def factor() -> Node:  # factor := NUMBER | '(' expr ')'
        nonlocal pos
        tok = peek()
        if tok is None:
            raise ParseError("expression ends early")
        if tok.isdigit():
            if len(tok) > MAX_DIGITS:  # int() itself refuses 4,300+ digits (ValueError)
                raise ParseError(f"a number longer than {MAX_DIGITS} digits")
            pos += 1
            return int(tok)
        if tok == "(":
            pos += 1
            node = expr()
            if peek() != ")":
                raise ParseError("unbalanced parentheses")
            pos += 1
            return node
        raise ParseError(f"unexpected {tok!r}")

    if not tokens:
        raise ParseError("empty expression")
    tree = expr()
    if pos != len(tokens):
        raise ParseError(f"unexpected {tokens[pos]!r}")
    return tree


def _literals(node: Node) -> list[int]:
    """The numbers of a tree, left to right. Iterative: a chain `1+1+...+1` is a tree as
    deep as it is long, past the recursion limit when max_answer_chars is raised."""
    out: list[int] = []
    stack = [node]
    while stack:
        top = stack.pop()
        if isinstance(top, int):
            out.append(top)
        else:
            stack += [top[2], top[1]]
    return out


def evaluate_expression(node: Node) -> Fraction:
    """Exact value of a parsed expression (parse_expression); ZeroDivisionError on a
    division by zero. Arithmetic on the tree only: nothing is evaluated as code.
    Iterative (post-order with a stack), so any depth of tree is fine."""
    values: list[Fraction] = []
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        top, children_done = stack.pop()
        if isinstance(top, int):
            values.append(Fraction(top))
        elif children_done:
            right = values.pop()
            values.append(_apply(top[0], values.pop(), right))
        else:
            stack += [(top, True), (top[2], False), (top[1], False)]
    return values[0]


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value}"


def countdown_steps(expression: str) -> list[str]:
    """One line per operation of `expression`, innermost first: '5 + 17 = 22'."""
    steps: list[str] = []

    def walk(node: Node) -> Fraction:
        if isinstance(node, int):
            return Fraction(node)
        a, b = walk(node[1]), walk(node[2])
        value = _apply(node[0], a, b)
        steps.append(f"{_show(a)} {node[0]} {_show(b)} = {_show(value)}")
        return value

    walk(parse_expression(expression))
    return steps


# ---------------------------------------------------------------------------- verifier

STATUSES = (
    "correct",
    "no_answer",
    "empty_answer",
    "too_long",
    "bad_expression",
    "too_deep",
    "invalid_numbers",
    "division_by_zero",
    "wrong_value",
)
"""Outcomes of analyse_countdown; the last three are well-formatted (reward 0.1)."""
WELL_FORMATTED = ("invalid_numbers", "division_by_zero", "wrong_value")


@dataclass(frozen=True)
class CountdownAnalysis:
    """What the verifier saw in one completion (shared with the failure taxonomy)."""

    status: str
    """One of STATUSES."""
    answer: str | None
    """Text inside the last <answer> tag (None when there is none; capped in length)."""
    value: Fraction | None
    """Exact value of the answer when it parsed and evaluated."""
    answer_tags: int
    """How many <answer> tags the completion opens."""
    closed: bool
    """Whether the last <answer> tag is closed by </answer>."""
    after: str
    """Text after the final </answer> (at most 4 KiB kept)."""


def analyse_countdown(
    numbers: Sequence[int],
    target: int,
    completion: str,
    *,
    max_answer_chars: int = 512,
    max_depth: int = 32,
    accept_unclosed: bool = True,
) -> CountdownAnalysis:
    """Extract the last <answer>, parse, check number use and value. Linear in the input:
    megabyte strings cost only str.rfind/count before the length cap rejects them."""
    tags = completion.count(OPEN)
    start = completion.rfind(OPEN)
    if start < 0:
        return CountdownAnalysis("no_answer", None, None, 0, False, "")
    body_start = start + len(OPEN)
    end = completion.find(CLOSE, body_start)
    closed = end >= 0
    if not closed and not accept_unclosed:
        return CountdownAnalysis("no_answer", None, None, tags, False, "")
    body_end = end if closed else len(completion)
    after = completion[end + len(CLOSE) : end + len(CLOSE) + 4096] if closed else ""

    def result(status: str, answer: str | None, value: Fraction | None = None) -> CountdownAnalysis:
        return CountdownAnalysis(status, answer, value, tags, closed, after)

    if body_end - body_start > max_answer_chars:
        return result("too_long", completion[body_start : body_start + max_answer_chars])
    answer = completion[body_start:body_end].strip()
    if not answer:
        return result("empty_answer", answer)
    try:
        tree = parse_expression(answer, max_depth=max_depth)
    except TooDeep:
        return result("too_deep", answer)
    except ParseError:
        return result("bad_expression", answer)
    if Counter(_literals(tree)) != Counter(int(x) for x in numbers):
        return result("invalid_numbers", answer)
    try:
        value = evaluate_expression(tree)
    except ZeroDivisionError:
        return result("division_by_zero", answer)
    return result("correct" if value == target else "wrong_value", answer, value)


@dataclass(frozen=True)
class CountdownVerifier:
    """Reward 1.0 correct, 0.1 well-formatted but wrong, 0.0 otherwise (RLOO/SEC papers)."""

    correct_reward: float = 1.0
    """Reward for an answer that uses each number once and equals the target."""
    format_reward: float = 0.1
    """Reward for a parseable expression that is wrong (numbers, value, division by 0)."""
    max_answer_chars: int = 512
    """Longer answers are rejected (reward 0) before tokenising."""
    max_depth: int = 32
    """Deeper parenthesis nesting is rejected (reward 0)."""
    accept_unclosed: bool = True
    """Accept a final '<answer> expr' without '</answer>' (generation often stops on it)."""

    def __post_init__(self) -> None:
        check(
            0.0 <= self.format_reward <= self.correct_reward <= 1.0,
            "need 0 <= format_reward <= correct_reward <= 1, got "
            f"{self.format_reward}, {self.correct_reward} (papers: 0.1 and 1.0)",
        )
        check(self.max_answer_chars >= 16, f"max_answer_chars too small: {self.max_answer_chars}")
        check(1 <= self.max_depth <= 200, f"max_depth must be in [1, 200], got {self.max_depth}")

    def analyse(self, item: TaskItem, completion: str) -> CountdownAnalysis:
        """The structured outcome behind score()."""
        return analyse_countdown(
            item.reference["numbers"],
            item.reference["target"],
            completion,
            max_answer_chars=self.max_answer_chars,
            max_depth=self.max_depth,
            accept_unclosed=self.accept_unclosed,
        )

    def score(self, item: TaskItem, completion: str) -> float:
        """Reward in {0, format_reward, correct_reward}."""
        status = self.analyse(item, completion).status
        if status == "correct":
            return self.correct_reward
        return self.format_reward if status in WELL_FORMATTED else 0.0
