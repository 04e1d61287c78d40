"""METIS self-judgment: the judge prompt of the paper's appendix A.1, its strict answer parser,
and `HeuristicJudge`, a deterministic NON-LLM stand-in judge for tests and simulation.

A judge prompt is a chat of two messages (system, user). Trainers that own a tokenizer apply
their chat template to the messages; judges that take plain text receive the flat rendering
of `render_judge_prompt`:

    <|system|>
    {system message}
    <|user|>
    {user message}
    <|assistant|>

followed by nothing (the judge writes the assistant turn). Nothing here ever evaluates the
judge's text: the parser only recognises a plain decimal number inside the last `\\boxed{}`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from frontier_rft.core.config import check_field_types

__all__ = [
    "ALLOWED_VALUES",
    "MAX_VARIANCE",
    "HeuristicJudge",
    "judge_messages",
    "parse_judgment",
    "render_judge_prompt",
    "system_message",
    "user_message",
]

ALLOWED_VALUES: tuple[float, ...] = (
    0.00,
    0.02,
    0.04,
    0.06,
    0.08,
    0.10,
    0.12,
    0.15,
    0.18,
    0.20,
    0.25,
)
"""The answer list the judge is asked to choose from (paper appendix A.1)."""
MAX_VARIANCE = 0.25
"""Largest within-prompt variance of rewards in [0, 1]; answers above it are failures."""
MAX_BOXED_CHARS = 32
"""A boxed answer longer than this is a failure (a plain number is short); bounds parsing work."""

# Appendix A.1, verbatim (the "---" dashes are kept as printed there). The middle paragraph and
# the user message's calibration sentences are dropped when there is no calibration memory
# (K = 0), as in the paper's appendix B.4 listing.
_SYS_TASK = (
    "You are a predictor that estimates the reward variance for a candidate problem. "
    "Reward variance is the variance of the rewards across multiple solution attempts by the "
    "current model on the same problem. High variance means rollouts disagree --- some attempts "
    "score well and others poorly --- which is exactly the regime where GRPO has the strongest "
    "learning signal. Low variance means rollouts agree (the model consistently passes or "
    "consistently fails), so there is little gradient to extract."
)
_SYS_CALIBRATION = (
    "The labeled examples show actual reward variances from recent model performance; "
    "use them to calibrate your prediction."
)
_SYS_OUTPUT = (
    "Output your final prediction inside \\boxed{{}}, choosing one number from this list: "
    "[{values}]. Example final line: \\boxed{{0.10}}."
)
_USER_ASK = "Predict the reward variance for the next problem."
_USER_CALIBRATION = (
    "The examples below show actual reward variances from recent model performance. "
    "Use them to calibrate your prediction."
)
_USER_FORMAT = "Put your final variance prediction inside \\boxed{}."
_Q = '"""'


def format_values(values: Sequence[float]) -> str:
    """The answer list as printed in the template: `0.00, 0.02, ..., 0.25`."""
    return ", ".join(f"{v:.2f}" for v in values)


def system_message(values: Sequence[float] = ALLOWED_VALUES, calibration: bool = True) -> str:
    """The fixed system message; `calibration=False` is the paper's K = 0 variant."""
    parts = [_SYS_TASK]
    if calibration:
        parts.append(_SYS_CALIBRATION)
    parts.append(_SYS_OUTPUT.format(values=format_values(values)))
    return "\n".join(parts)


def exemplar_block(exemplars: Sequence[tuple[str, float]]) -> str:
    """`[Example k]` blocks for (prompt, realised variance) pairs, variance printed as 0.000."""
    return "".join(
        f"[Example {k}]\nPROMPT:\n{_Q}\n{prompt}\n{_Q}\nREWARD_VARIANCE: {variance:.3f}\n"
        for k, (prompt, variance) in enumerate(exemplars, start=1)
    )


def user_header(calibration: bool = True) -> str:
    """The instruction paragraph that opens every user message."""
    if calibration:
        return f"{_USER_ASK} {_USER_CALIBRATION} {_USER_FORMAT}\n"
    return f"{_USER_ASK} {_USER_FORMAT}\n"


def candidate_block(candidate: str) -> str:
    """The `[Candidate]` block that closes the user message."""
    return f"[Candidate]\nPROMPT:\n{_Q}\n{candidate}\n{_Q}"


def user_message(
    exemplars: Sequence[tuple[str, float]], candidate: str, calibration: bool = True
) -> str:
    """Instruction, then the calibration exemplars (oldest first), then the candidate."""
    return user_header(calibration) + exemplar_block(exemplars) + candidate_block(candidate)


def judge_messages(system: str, user: str) -> list[dict[str, str]]:
    """Chat messages in the usual `{"role", "content"}` form (for `apply_chat_template`)."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_judge_prompt(system: str, user: str) -> str:
    """Flat text rendering handed to a text-in/text-out judge (format in the module docstring)."""
    return f"<|system|>\n{system}\n<|user|>\n{user}\n<|assistant|>\n"


_BOXED = "\\boxed{"
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)")


def parse_judgment(response: object, allowed: Sequence[float] | None = None) -> float | None:
    """The number inside the LAST `\\boxed{...}` of `response`, or None for a judgment failure.

    Failures (paper section 4.1): no `\\boxed{`, an unclosed or over-long last box, content
    that is not a plain non-negative decimal (`0.12`, `.12`, `12`; no signs, exponents,
    fractions or expressions; nothing is evaluated), or a value outside [0, 1/4]. With
    `allowed` given, a value not in that list (to 1e-9) is a failure too; the paper itself
    accepts any value in [0, 1/4]. Nested boxes resolve to the innermost last one.
    """
    if not isinstance(response, str):
        return None
    start = response.rfind(_BOXED)
    if start < 0:
        return None
    begin = start + len(_BOXED)
    end = response.find("}", begin, begin + MAX_BOXED_CHARS + 1)
    if end < 0:
        return None
    content = response[begin:end].strip()
    if "{" in content or not _NUMBER.fullmatch(content):
        return None
    value = float(content)
    if not 0.0 <= value <= MAX_VARIANCE:
        return None
    if allowed is not None and not any(abs(value - a) <= 1e-9 for a in allowed):
        return None
    return value


def nearest_allowed(value: float, values: Sequence[float] = ALLOWED_VALUES) -> float:
    """The listed value closest to `value` (the lower one on a tie)."""
    return min(values, key=lambda a: (abs(a - value), a))


_EXEMPLAR = re.compile(
    r'\[Example \d+\]\nPROMPT:\n"""\n(.*?)\n"""\nREWARD_VARIANCE: ([0-9.]+)\n', re.DOTALL
)
_CANDIDATE = '[Candidate]\nPROMPT:\n"""\n'
_WORD = re.compile(r"\w+")
_MALFORMED = (
    "I am not sure how variable this one will be.",  # no box at all
    "\\boxed{0.75}",  # out of [0, 1/4]
    "\\boxed{high}",  # not a number
)


@dataclass(frozen=True)
class HeuristicJudge:
    """NON-LLM judge for tests and simulation: deterministic, stateless, no model inside.

    It reads the calibration exemplars and the candidate back out of a rendered judge prompt
    and answers `\\boxed{v}` with the listed value nearest to a similarity-weighted average of
    the exemplars' realised variances. Similarity is the Jaccard overlap of lower-cased word
    sets; exemplars below `min_similarity` are ignored, and when none is similar enough the
    answer is `prior`. With `malformed_rate > 0` a deterministic share of prompts (chosen by a
    hash of `seed` and the prompt text) gets a malformed answer, to exercise failure handling.
    METIS reports `non_llm_judge = 1` whenever it is used (attribute `is_llm = False`).
    """

    min_similarity: float = 0.5
    """Exemplars with a smaller word-set Jaccard overlap with the candidate are ignored."""
    prior: float = 0.12
    """Prediction when no exemplar is similar enough (mid-range: unknown prompts get a look)."""
    malformed_rate: float = 0.0
    """Share of prompts answered with a malformed response (by prompt hash, deterministic)."""
    seed: int = 0
    """Salt of the hash that picks the malformed answers."""

    is_llm: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_field_types(self)
        if not 0.0 <= self.min_similarity <= 1.0:
            raise ValueError(f"min_similarity must lie in [0, 1], got {self.min_similarity}")
        if not 0.0 <= self.prior <= MAX_VARIANCE:
            raise ValueError(f"prior must lie in [0, {MAX_VARIANCE}], got {self.prior}")
        if not 0.0 <= self.malformed_rate <= 1.0:
            raise ValueError(f"malformed_rate must lie in [0, 1], got {self.malformed_rate}")

    def __repr__(self) -> str:
        return (
            f"HeuristicJudge(non-LLM heuristic; min_similarity={self.min_similarity}, "
            f"prior={self.prior}, malformed_rate={self.malformed_rate}, seed={self.seed})"
        )

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        """One answer per rendered judge prompt."""
        words = _word_cache()  # exemplars repeat across one call's prompts
        out = []
        for prompt in prompts:
            if self.malformed_rate > 0.0:
                digest = hashlib.sha256(f"{self.seed}\0{prompt}".encode()).digest()
                if int.from_bytes(digest[:8], "little") / 2.0**64 < self.malformed_rate:
                    out.append(_MALFORMED[digest[8] % len(_MALFORMED)])
                    continue
            out.append(f"\\boxed{{{self._predict(prompt, words):.2f}}}")
        return out

    def predict(self, prompt: str) -> float:
        """The listed value this judge answers for one rendered prompt (ignoring malformation)."""
        return self._predict(prompt, _word_cache())

    def _predict(self, prompt: str, words: Callable[[str], frozenset[str]]) -> float:
        at = prompt.rfind(_CANDIDATE)
        if at < 0:
            return nearest_allowed(self.prior)
        body = prompt[at + len(_CANDIDATE) :]
        candidate = words(body[: body.rfind('\n"""')])
        weight = total = 0.0
        for text, variance in _EXEMPLAR.findall(prompt[:at]):
            ex = words(text)
            union = len(ex | candidate)
            sim = len(ex & candidate) / union if union else 0.0
            if sim >= self.min_similarity and sim > 0.0:
                weight += sim
                total += sim * float(variance)
        return nearest_allowed(total / weight if weight > 0.0 else self.prior)


def _word_cache() -> Callable[[str], frozenset[str]]:
    """Lower-cased word set of a text, memoised for the lifetime of one judge call."""
    cache: dict[str, frozenset[str]] = {}

    def words(text: str) -> frozenset[str]:
        if text not in cache:
            cache[text] = frozenset(_WORD.findall(text.lower()))
        return cache[text]

    return words
