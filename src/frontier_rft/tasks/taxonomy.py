"""Failure taxonomy for Countdown completions (RLOO paper, appendix B.4).

A rollout failed when its verifier score is below 1.0. Global generation failures
(repetition, corrupted text, missing answer) are assigned before local arithmetic labels,
as the paper does. Order of the checks:

1. repetitive_incoherent: several <answer> tags, reasoning continued after the final
   answer, a line repeated in a loop, highly compressible text, corrupted text
   (U+FFFD, control characters), irrelevant code (fences, `def`/`import` lines);
2. format_error: no usable answer (missing/empty tags, non-arithmetic text, code-like
   answer, anything the verifier cannot parse);
3. invalid_number_use: parseable, but the numbers are not exactly the given multiset;
4. arithmetic_error: parseable with the right numbers, but not computable (division by 0);
5. wrong_target: parseable, right numbers, evaluates to another value;
6. other: parser edge cases (answer over the length cap, nesting over the depth cap).

The taxonomy is descriptive (analysis only), never a reward. Inputs are bounded: the
heuristics read at most the last 64 KiB of a completion.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable

from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.countdown import OPEN, CountdownAnalysis, CountdownVerifier

__all__ = [
    "FAILURE_CATEGORIES",
    "classify_countdown_failure",
    "failure_counts",
    "is_repetitive_or_incoherent",
]

FAILURE_CATEGORIES = (
    "format_error",
    "wrong_target",
    "invalid_number_use",
    "arithmetic_error",
    "repetitive_incoherent",
    "other",
)
"""The six categories of appendix B.4; classify_countdown_failure returns 'correct' otherwise."""

_WINDOW = 65536  # heuristics read the tail only: cost is bounded for megabyte completions
_MAX_AFTER = 20  # characters allowed after </answer> (an end-of-turn token, say)
_LOOP_REPEATS = 4  # a non-trivial line this many times = a verification loop
_MIN_COMPRESS_LEN = 400
_COMPRESS_RATIO = 0.12  # zlib ratio below this on long text = degenerate repetition
_END_TOKENS = re.compile(r"<\|[a-z_]+\|>|</s>|<eos>|<\|endoftext\|>")
# Blanks within the line only: `^\s*` would scan on over every following newline from
# each line start (quadratic: 64k newlines took ~30 s).
_CODE_LINE = re.compile(r"^[^\S\n]*(def |import |from \w+ import |class \w+[:(])", re.MULTILINE)
_STATUS_CATEGORY = {
    "no_answer": "format_error",
    "empty_answer": "format_error",
    "bad_expression": "format_error",
    "invalid_numbers": "invalid_number_use",
    "division_by_zero": "arithmetic_error",
    "wrong_value": "wrong_target",
    "too_long": "other",
    "too_deep": "other",
}


def is_repetitive_or_incoherent(completion: str, analysis: CountdownAnalysis) -> bool:
    """The global-instability checks of the taxonomy (bounded cost)."""
    if analysis.answer_tags > 1:
        return True  # repeated answer tags / multiple final answers
    if analysis.closed and len(_END_TOKENS.sub("", analysis.after).strip()) > _MAX_AFTER:
        return True  # reasoning continued after the final answer
    text = completion[-_WINDOW:]
    if "\ufffd" in text or any(ord(c) < 32 and c not in "\n\r\t" for c in text):
        return True  # corrupted bytes
    cut = text.rfind(OPEN)
    reasoning = text[:cut] if cut >= 0 else text  # code inside the answer is a format error
    if "```" in reasoning or _CODE_LINE.search(reasoning) is not None:
        return True  # irrelevant code or markup
    lines = Counter(line.strip() for line in text.splitlines() if len(line.strip()) >= 8)
    if lines and max(lines.values()) >= _LOOP_REPEATS:
        return True  # a repeated verification loop
    raw = text.encode("utf-8", "replace")
    return len(raw) >= _MIN_COMPRESS_LEN and len(zlib.compress(raw)) / len(raw) < _COMPRESS_RATIO


def classify_countdown_failure(
    item: TaskItem, completion: str, verifier: CountdownVerifier | None = None
) -> str:
    """One of FAILURE_CATEGORIES for a failed completion, 'correct' when it scores 1.0."""
    verifier = verifier or CountdownVerifier()
    analysis = verifier.analyse(item, completion)
    if analysis.status == "correct":
        return "correct"
    if is_repetitive_or_incoherent(completion, analysis):
        return "repetitive_incoherent"
    return _STATUS_CATEGORY.get(analysis.status, "other")


def failure_counts(
    items: Iterable[TaskItem], completions: Iterable[str], verifier: CountdownVerifier | None = None
) -> dict[str, int]:
    """Count of each category (and 'correct') over paired items and completions."""
    counts = dict.fromkeys((*FAILURE_CATEGORIES, "correct"), 0)
    for item, completion in zip(items, completions, strict=True):
        counts[classify_countdown_failure(item, completion, verifier)] += 1
    return counts
