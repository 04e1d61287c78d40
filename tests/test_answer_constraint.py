"""AnswerConstraint: a row may generate only one of the listed answers, then EOS (the trie
checked by hand on a character tokenizer), and bad answer lists are refused."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from frontier_rft.lm.answer_constraint import AnswerConstraint, answer_token_ids  # noqa: E402

EOS = 0


class CharTokenizer:
    """One token per character: id = code point (EOS = 0)."""

    eos_token_id = EOS

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, Any]:
        return {"input_ids": [ord(c) for c in text]}


def test_the_trie_allows_exactly_the_listed_continuations() -> None:
    c = AnswerConstraint(CharTokenizer(), ["ab", "ac", "b"])
    assert c.sequences == [(97, 98, EOS), (97, 99, EOS), (98, EOS)]
    assert c.allowed([]) == {97, 98}
    assert c.allowed([97]) == {98, 99}
    assert c.allowed([97, 98]) == {EOS}
    assert c.allowed([98]) == {EOS}
    assert c.allowed([99]) == {EOS}  # off the list: end now


def test_the_processor_masks_from_where_generation_starts() -> None:
    c = AnswerConstraint(CharTokenizer(), ["ab", "ac"])
    prompt = torch.tensor([[5, 6, 7], [8, 9, 10]])
    scores = torch.zeros((2, 128))
    first = c(prompt, scores.clone())  # the first call fixes the start at 3 tokens
    assert torch.isfinite(first).nonzero()[:, 1].tolist() == [97, 97]
    after = torch.cat([prompt, torch.tensor([[97], [97]])], dim=1)
    second = c(after, scores.clone())
    assert torch.isfinite(second[0]).nonzero().flatten().tolist() == [98, 99]
    done = torch.cat([after, torch.tensor([[98], [99]])], dim=1)
    third = c(done, scores.clone())
    assert [torch.isfinite(r).nonzero().flatten().tolist() for r in third] == [[EOS], [EOS]]


@pytest.mark.parametrize(
    ("answers", "message"),
    [([], "1 to 4096 answers"), ([""], "non-empty strings"), ([3], "non-empty strings")],
)
def test_bad_answer_lists_are_refused(answers: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        answer_token_ids(CharTokenizer(), answers)


def test_a_tokenizer_without_eos_is_refused() -> None:
    tok = CharTokenizer()
    tok.eos_token_id = None  # type: ignore[assignment]
    with pytest.raises(ValueError, match="eos_token_id"):
        AnswerConstraint(tok, ["a"])
