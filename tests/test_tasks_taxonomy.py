"""Failure taxonomy of the RLOO paper (appendix B.4): one group of cases per category."""

from __future__ import annotations

import time

import pytest

from frontier_rft.tasks import TaskItem
from frontier_rft.tasks.countdown import CountdownVerifier
from frontier_rft.tasks.taxonomy import (
    FAILURE_CATEGORIES,
    classify_countdown_failure,
    failure_counts,
)

ITEM = TaskItem(
    task_id=0, domain="countdown", prompt="p", reference={"numbers": [5, 17, 91], "target": 113}
)
THINK = "<think>\nI add the numbers one by one.\n</think>\n"

CASES = {
    "format_error": [
        THINK,  # missing answer tags
        THINK + "<answer></answer>",  # empty answer field
        THINK + "<answer>  </answer>",
        THINK + "<answer>the sum of all three</answer>",  # non-arithmetic text
        THINK + "<answer>sum([5, 17, 91])</answer>",  # code-like answer
        THINK + "<answer>\nimport math\nmath.fsum([5, 17, 91])</answer>",
        THINK + "<answer>(5 + 17 + 91</answer>",  # unparseable
        THINK + "<answer>5 + 17 + 91 = 113</answer>",
        THINK + "<answer>5 ** 2 + 17 + 91</answer>",
        THINK + "<answr>5 + 17 + 91</answr>",  # malformed tags
    ],
    "wrong_target": [
        THINK + "<answer>91 + 17 - 5</answer>",
        THINK + "<answer>(91 - 17) * 5</answer>",
        THINK + "<answer>91 + 17 - 5",  # unclosed final tag is accepted
    ],
    "invalid_number_use": [
        THINK + "<answer>91 + 17 + 5 + 5</answer>",  # reuse
        THINK + "<answer>91 + 22</answer>",  # omission and extra constant
        THINK + "<answer>91 + 17 + 5 * 1</answer>",  # extra constant
        THINK + "<answer>91 / (17 - 17) + 5</answer>",  # reuse dominates the zero division
    ],
    "repetitive_incoherent": [
        THINK + "<answer>91 + 17</answer>\n<answer>91 + 17 - 5</answer>",  # repeated tags
        THINK + "<answer>91 + 17 - 5</answer>\nWait, let me check again. 91 + 17 is 108...",
        THINK + "Let me verify: 91 + 17 = 108\n" * 6 + "<answer>91 + 17 - 5</answer>",  # loop
        "<think>" + "9 1 + 1 7 " * 120 + "</think>",  # degenerate, no answer
        THINK + "```python\nprint(5 + 17 + 91)\n```\n<answer>91 - 17 + 5</answer>",  # code
        THINK + "def solve():\n    return 113\n<answer>91 - 17 + 5</answer>",
        "<think>\ufffd\ufffd计算\ufffd</think><answer>91 - 17 + 5</answer>",  # corrupted text
        "<think>\x00\x01\x02</think><answer>91 - 17 + 5</answer>",
    ],
    "other": [
        THINK + "<answer>" + "(" * 40 + "91 + 17 + 5" + ")" * 40 + "</answer>",  # depth cap
        THINK + "<answer>" + " + ".join(map(str, range(150))) + "</answer>",  # length cap
    ],
}


@pytest.mark.parametrize(
    ("category", "completion"),
    [(cat, text) for cat, texts in CASES.items() for text in texts],
)
def test_category(category: str, completion: str) -> None:
    assert category in FAILURE_CATEGORIES
    assert CountdownVerifier().score(ITEM, completion) < 1.0
    assert classify_countdown_failure(ITEM, completion) == category


def test_arithmetic_error_is_a_zero_division_with_the_right_numbers() -> None:
    # 5, 17, 91 cannot make 0 without reuse, so this category needs its own instance.
    item = TaskItem(0, "countdown", "p", {"numbers": [4, 2, 2], "target": 1})
    completion = THINK + "<answer>4 / (2 - 2)</answer>"
    assert CountdownVerifier().score(item, completion) == 0.1
    assert classify_countdown_failure(item, completion) == "arithmetic_error"
    assert classify_countdown_failure(item, THINK + "<answer>(2 - 2) / 4</answer>") == (
        "wrong_target"
    )


def test_correct_completion_is_not_a_failure() -> None:
    assert classify_countdown_failure(ITEM, THINK + "<answer>5 + 17 + 91</answer>") == "correct"
    # The paper counts a rollout as failed only below reward 1.0, even when it repeats tags.
    repeated = THINK + "<answer>1</answer><answer>5 + 17 + 91</answer>"
    assert classify_countdown_failure(ITEM, repeated) == "correct"
    # An end-of-turn token after the answer is not continued reasoning.
    assert classify_countdown_failure(ITEM, "<answer>5+17+91</answer><|im_end|>") == "correct"


def test_a_short_legitimate_trace_is_not_flagged_repetitive() -> None:
    trace = (
        "<think>\nTry 91 + 17 = 108, then 108 + 5 = 113. That works.\n</think>\n"
        "<answer>91 + 17 - 5</answer>"
    )
    assert classify_countdown_failure(ITEM, trace) == "wrong_target"


def test_counts_and_bounded_cost() -> None:
    completions = [texts[0] for texts in CASES.values()] + ["<answer>5+17+91</answer>"]
    items = [ITEM] * len(completions)
    zero = TaskItem(0, "countdown", "p", {"numbers": [4, 2, 2], "target": 1})
    counts = failure_counts([*items, zero], [*completions, "<answer>4 / (2 - 2)</answer>"])
    assert counts == dict.fromkeys((*FAILURE_CATEGORIES, "correct"), 1)
    start = time.process_time()
    classify_countdown_failure(ITEM, "blah " * 400_000 + "<answer>1</answer>")
    classify_countdown_failure(ITEM, "x" * 3_000_000)
    assert time.process_time() - start < 4.0


def test_blank_line_floods_cost_linear_time() -> None:
    """The code-line heuristic's `^\\s*` rescanned every later newline from each line start:
    30k newlines took seconds (64k: ~30 s). Code lines after blank lines still count."""
    start = time.process_time()  # CPU time of this process: a busy machine does not inflate it
    flood = classify_countdown_failure(ITEM, "\n" * 30_000)
    blanks = classify_countdown_failure(ITEM, "<think>" + "\n \t\r" * 8_000 + "</think>")
    assert time.process_time() - start < 1.5  # linear: milliseconds; quadratic: ~7 s
    assert flood == blanks == "repetitive_incoherent"  # degenerate, highly compressible
    code = THINK.replace("\n</think>", "\n\n  \n   def f(x):\n</think>") + "<answer>1</answer>"
    assert classify_countdown_failure(ITEM, code) == "repetitive_incoherent"
