"""Constrained decoding to a fixed set of answers: a logits processor that lets a model
generate only one of the listed strings, then its end-of-sequence token.

METIS's judge must answer `\\boxed{v}` with v from its list of allowed values; a small
pretrained model (SmolLM2-135M) never does unprompted (parse rate 0.00 on the 64-prompt
check). Under this constraint every judgment parses; what the check then measures is the
model's preference among the allowed answers. Each answer is tokenised once, as the
tokenizer encodes it alone, and the listed token sequences form a trie: at each step a row
may take only a token that continues some answer from what it generated so far; after a
whole answer only EOS. Sampling under the mask draws each token from the model's
distribution renormalised over the allowed tokens (so the answer's probability is the
product of those renormalised conditionals, not the model's sequence probability
renormalised over the list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["AnswerConstraint", "answer_token_ids"]

MAX_ANSWERS = 4096
"""Most answers one constraint holds (the judge lists 26)."""


def answer_token_ids(tokenizer: Any, answers: Sequence[str]) -> list[tuple[int, ...]]:
    """Each answer's token ids as the tokenizer encodes it alone, then EOS."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("constrained answers need a tokenizer with an eos_token_id")
    if not 1 <= len(answers) <= MAX_ANSWERS:
        raise ValueError(f"constrained answers: 1 to {MAX_ANSWERS} answers, got {len(answers)}")
    out = []
    for text in answers:
        if not isinstance(text, str) or not text:
            raise ValueError(f"constrained answers must be non-empty strings, got {text!r}")
        ids = [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
        out.append((*ids, int(eos)))
    return out


class AnswerConstraint:
    """HF LogitsProcessor: each row generates one of `answers` (then EOS) and nothing else.

    One instance per `generate` call: the first call fixes where generation starts (the
    prompt's padded length), and every later call reads the row's tokens after it.
    """

    def __init__(self, tokenizer: Any, answers: Sequence[str]):
        self.sequences = answer_token_ids(tokenizer, answers)
        self._trie: dict[tuple[int, ...], set[int]] = {}
        for seq in self.sequences:
            for k in range(len(seq)):
                self._trie.setdefault(seq[:k], set()).add(seq[k])
        self._eos = int(tokenizer.eos_token_id)
        self._start: int | None = None

    def allowed(self, generated: Sequence[int]) -> set[int]:
        """Tokens that may follow `generated` (EOS alone once an answer is complete or left)."""
        return self._trie.get(tuple(generated), {self._eos})

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self._start is None:
            self._start = int(input_ids.shape[1])
        mask = torch.full_like(scores, float("-inf"))
        for row, ids in enumerate(input_ids[:, self._start :].tolist()):
            mask[row, sorted(self.allowed(ids))] = 0.0
        return scores + mask
