"""Code tasks: write a Python function; reward = fraction of unit tests passed.

Unit tests are MBPP-style `assert <call> == <literal>` lines. The host splits each into the
call and the expected value and sends only the calls into the sandbox (sandbox.py); a
runner there defines the candidate, evaluates every call with a per-test alarm and prints
the `repr` of each result. The host compares them with the expected values, so code
inside the sandbox cannot forge a pass: it never sees the expected answers. Any violation
(time, memory, output, crash) scores 0.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.sandbox import (
    SANDBOX_MODES,
    SandboxLimits,
    base_interpreter,
    run_sandboxed,
)

__all__ = [
    "CODE_EXAMPLES",
    "CODE_PROMPT",
    "CodeVerifier",
    "extract_code",
    "make_code_items",
    "split_test",
]

CODE_PROMPT = (
    "{description}\n\nWrite a Python function `{entry_point}`. Your code should pass tests "
    "like:\n{example}\nReturn the complete function in a ```python code block."
)
"""User message of a code task (MBPP style: the first test is shown as an example)."""

_MAX_REPR = 10_000  # a result's repr beyond this cannot be compared: the test fails

_RUNNER = """
import json, os, signal, sys
job = json.loads(sys.stdin.read())
report = os.fdopen(os.dup(1), "w")
quiet = os.open(os.devnull, os.O_WRONLY)
os.dup2(quiet, 1); os.dup2(quiet, 2)  # the candidate's own output is discarded
class Timeout(BaseException): pass
def alarm(signum, frame): raise Timeout()
signal.signal(signal.SIGALRM, alarm)
def run(fn):
    signal.setitimer(signal.ITIMER_REAL, job["test_s"])
    try: return fn()
    finally: signal.setitimer(signal.ITIMER_REAL, 0)
ns = {"__name__": "candidate"}
results = []
try:
    run(lambda: exec(compile(job["code"], "<candidate>", "exec"), ns))
    for call in job["calls"]:
        try: results.append(repr(run(lambda: eval(call, ns)))[:MAX_REPR])
        except Timeout: raise
        except BaseException: results.append(None)
except Timeout:
    results = "timeout"  # a violation: the host scores 0
except BaseException:
    results = [None] * len(job["calls"])  # the definition itself failed
report.write(json.dumps(results)); report.flush()
""".replace("MAX_REPR", str(_MAX_REPR + 1))

# One run of blanks before the optional language tag: two adjacent `[ \t]*` around an
# optional group backtrack quadratically on a fence followed by a long run of spaces.
_FENCE = re.compile(r"```[ \t]*(?:(?:python|py|python3)[ \t]*)?\n(.*?)```", re.DOTALL)


def split_test(test: str) -> tuple[str, Any]:
    """'assert f(1) == 2' -> ('f(1)', 2); ValueError for any other shape."""
    try:
        tree = ast.parse(test.strip())
    except SyntaxError as exc:
        raise ValueError(f"test is not Python: {test!r}") from exc
    node = tree.body[0] if len(tree.body) == 1 else None
    if not (
        isinstance(node, ast.Assert)
        and isinstance(node.test, ast.Compare)
        and len(node.test.ops) == 1
        and isinstance(node.test.ops[0], ast.Eq)
    ):
        raise ValueError(f"tests must read 'assert <call> == <literal>', got {test!r}")
    try:
        expected = ast.literal_eval(node.test.comparators[0])
    except ValueError as exc:
        raise ValueError(f"the right side of {test!r} must be a Python literal") from exc
    return ast.unparse(node.test.left), expected


def extract_code(completion: str) -> str:
    """The last fenced code block, or the whole completion when it has none."""
    blocks = _FENCE.findall(completion)
    return blocks[-1] if blocks else completion


def _same(got: Any, expected: Any) -> bool:
    """The test's `==` (so 3.0 passes for 3, as in Python), with float tolerance inside
    lists, tuples and dicts."""
    if isinstance(expected, float) or isinstance(got, float):
        if not (isinstance(got, (int, float)) and isinstance(expected, (int, float))):
            return False
        try:
            return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
        except OverflowError:  # an int beyond float range: never within 1e-9 of a float
            return False
    if isinstance(expected, (list, tuple)) and type(got) is type(expected):
        return len(got) == len(expected) and all(map(_same, got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(_same(got[k], expected[k]) for k in got)
    return bool(got == expected)


def _parse_result(text: str | None) -> tuple[bool, Any]:
    if text is None or len(text) > _MAX_REPR:
        return False, None
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False, None


@dataclass(frozen=True)
class CodeVerifier:
    """Reward = passed / total unit tests, run in the OS sandbox; violations score 0."""

    limits: SandboxLimits = field(default_factory=lambda: SandboxLimits(wall_s=10.0))
    """Limits of the process that runs one completion against all its tests."""
    test_timeout_s: float = 2.0
    """Alarm per definition and per test inside the runner (the wall clock still rules)."""
    mode: str = "require"
    """'require': refuse without bubblewrap; 'limits_only': explicit opt-in to limits alone."""
    max_code_chars: int = 65536
    """Longer code scores 0 without running."""

    def __post_init__(self) -> None:
        check_field_types(self)
        check_choice("mode", self.mode, SANDBOX_MODES)
        check(self.test_timeout_s > 0, f"test_timeout_s must be positive: {self.test_timeout_s}")
        check(self.max_code_chars > 0, f"max_code_chars must be positive: {self.max_code_chars}")

    def score(self, item: TaskItem, completion: str) -> float:
        """Fraction of the item's tests the completion's code passes."""
        code = extract_code(completion)
        tests = [split_test(t) for t in item.reference["tests"]]
        if not tests or len(code) > self.max_code_chars:
            return 0.0
        job = {"code": code, "calls": [c for c, _ in tests], "test_s": self.test_timeout_s}
        result = run_sandboxed(
            [base_interpreter(), "-I", "-S", "-c", _RUNNER],
            json.dumps(job).encode(),
            limits=self.limits,
            mode=self.mode,
        )
        if not result.ok:
            return 0.0
        try:  # the report comes from the sandbox: bounded size and depth, never a RecursionError
            text = result.stdout.decode("utf-8", "replace").strip() or "null"
            reported = loads_bounded(text, max_chars=self.limits.output_bytes, max_depth=2)
        except ValueError:
            return 0.0
        if not isinstance(reported, list) or len(reported) != len(tests):
            return 0.0
        passed = 0
        for text, (_, expected) in zip(reported, tests, strict=True):
            ok, value = _parse_result(text if isinstance(text, str) else None)
            passed += ok and _same(value, expected)
        return passed / len(tests)


def make_code_items(records: Iterable[Mapping[str, Any]], *, start_id: int = 0) -> list[TaskItem]:
    """TaskItems from records with 'description', 'entry_point', 'tests' (assert lines) and
    an optional 'level'; every test is checked to have the supported shape."""
    items = []
    for k, rec in enumerate(records):
        tests = list(rec["tests"])
        check(len(tests) > 0, f"record {k} ({rec.get('entry_point')!r}) has no tests")
        for test in tests:
            split_test(test)
        level = int(rec.get("level", 0))
        prompt = CODE_PROMPT.format(
            description=rec["description"], entry_point=rec["entry_point"], example=tests[0]
        )
        items.append(
            TaskItem(
                task_id=start_id + k,
                domain="code",
                prompt=prompt,
                reference={"entry_point": rec["entry_point"], "tests": tests},
                level=level,
                difficulty=float(level),
            )
        )
    return items


CODE_EXAMPLES: tuple[dict[str, Any], ...] = (
    {
        "description": "Return the sum of two integers.",
        "entry_point": "add",
        "tests": ["assert add(1, 2) == 3", "assert add(-4, 4) == 0", "assert add(10, 5) == 15"],
        "level": 0,
    },
    {
        "description": "Return the string reversed.",
        "entry_point": "reverse",
        "tests": [
            "assert reverse('abc') == 'cba'",
            "assert reverse('') == ''",
            "assert reverse('racecar') == 'racecar'",
        ],
        "level": 0,
    },
    {
        "description": "Return the number of vowels (a, e, i, o, u; any case) in a string.",
        "entry_point": "count_vowels",
        "tests": [
            "assert count_vowels('hello') == 2",
            "assert count_vowels('AEIOU xyz') == 5",
            "assert count_vowels('') == 0",
            "assert count_vowels('rhythm') == 0",
        ],
        "level": 1,
    },
    {
        "description": "Return the n-th Fibonacci number, with fib(0) = 0 and fib(1) = 1.",
        "entry_point": "fib",
        "tests": [
            "assert fib(0) == 0",
            "assert fib(1) == 1",
            "assert fib(10) == 55",
            "assert fib(50) == 12586269025",
        ],
        "level": 1,
    },
    {
        "description": "Return the sorted list of distinct prime factors of n (n >= 2).",
        "entry_point": "prime_factors",
        "tests": [
            "assert prime_factors(12) == [2, 3]",
            "assert prime_factors(97) == [97]",
            "assert prime_factors(360) == [2, 3, 5]",
            "assert prime_factors(1001) == [7, 11, 13]",
        ],
        "level": 2,
    },
)
"""A few small tasks for demos and tests (no dataset download needed)."""
