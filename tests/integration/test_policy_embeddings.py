"""policy_embeddings: the policy's own mean-pooled hidden states, batched, order-preserving."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.features import policy_embeddings

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tiny_lm import char_tokenizer, tiny_llama  # noqa: E402


def _reference(model, tok, prompt: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    ids = torch.tensor([tok(prompt)["input_ids"]])
    with torch.no_grad():
        h = model.model(input_ids=ids).last_hidden_state[0].mean(dim=0).numpy()
    return np.asarray(h / np.linalg.norm(h))


def test_matches_one_prompt_at_a_time_and_keeps_order() -> None:
    tok = char_tokenizer()
    model = tiny_llama(tok)
    model.train()
    prompts = ["a", "find 2+2", "a much longer prompt about lists", "", "xyz"]
    emb = policy_embeddings(model, tok, prompts, batch_size=2, progress=False)
    assert emb.shape == (5, 32) and emb.dtype == np.float32
    for i, p in enumerate(prompts):
        if p:
            np.testing.assert_allclose(emb[i], _reference(model, tok, p), atol=1e-5)
    assert model.training  # mode restored
    inner = policy_embeddings(model, tok, prompts, layer=1, progress=False)
    assert inner.shape == (5, 32) and not np.allclose(inner[1:3], emb[1:3])


def test_truncation_and_bad_input() -> None:
    tok = char_tokenizer()
    model = tiny_llama(tok)
    long = policy_embeddings(model, tok, ["x" * 500], max_length=16, progress=False)
    short = policy_embeddings(model, tok, ["x" * 16], max_length=16, progress=False)
    np.testing.assert_allclose(long, short, atol=1e-6)
    with pytest.raises(ValueError, match="at least one prompt"):
        policy_embeddings(model, tok, [], progress=False)
    with pytest.raises(ValueError, match="prompt 0 is a int"):
        policy_embeddings(model, tok, [3], progress=False)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        policy_embeddings(model, tok, ["a"], batch_size=0, progress=False)
