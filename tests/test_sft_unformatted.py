"""The warm start that knows answers but not the format (`SFTConfig.unformatted_share`,
issue 70 item 1): a fixed share of the tasks is demonstrated as the bare answer."""

from __future__ import annotations

import pytest

from frontier_rft.training.config import SFTConfig
from frontier_rft.training.sft import demonstration_examples, unformatted


class Words:
    """A tokenizer stand-in: one id per character, the prompt's chat template skipped."""

    eos_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}

    def apply_chat_template(self, messages: list, **kwargs: object) -> list[int]:
        return [1]


def test_the_subset_is_fixed_by_id_and_near_the_share() -> None:
    # Knuth's hash by hand: 3 * 2654435761 = 7963307283 -> 283 (< 300: bare at 0.3, not 0.2)
    assert unformatted(3, 0.3) and not unformatted(3, 0.2)
    assert not unformatted(3, 0.0)
    bare = sum(unformatted(t, 0.8) for t in range(10_000)) / 10_000
    assert bare == pytest.approx(0.8, abs=0.02)


def test_bare_demonstrations_lose_their_tags_and_the_rest_keep_them() -> None:
    config = SFTConfig(num_examples=200, unformatted_share=0.5)
    texts = [
        "".join(chr(i) for i in demo[:-1]) for _, demo in demonstration_examples(config, Words())
    ]
    tagged = sum(t.startswith("<answer>") and t.endswith("</answer>") for t in texts)
    assert all("<answer>" not in t for t in texts if not t.startswith("<answer>"))
    assert 70 <= tagged <= 130  # about half of 200
    plain = demonstration_examples(SFTConfig(num_examples=200), Words())
    assert all(chr(demo[0]) == "<" for _, demo in plain)


def test_a_share_outside_the_range_or_off_countdown_is_refused() -> None:
    with pytest.raises(ValueError, match="unformatted_share must lie in"):
        SFTConfig(unformatted_share=1.0)
    with pytest.raises(ValueError, match="Countdown only"):
        SFTConfig(task="arithmetic", unformatted_share=0.5)
