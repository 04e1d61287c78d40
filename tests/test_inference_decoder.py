"""ZIP-RC-Lite live decoder, adaptive-K allocation and the `ziprc pareto` command.

Two kinds of model: a real tiny Llama (hidden 32, locally built tokenizer, a random head
slice and a boosted EOS row so samples end at different lengths) for the sampling,
reference and invariant checks; and a scripted bigram LM whose logits depend only on the
current token, so the head's value is a known constant and cost/latency can be computed by
hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import torch

from frontier_rft.inference import decoder as decoder_module
from frontier_rft.inference.adaptive_k import (
    allocate_k,
    difficulty_rank,
    evaluate_allocation,
    fixed_allocation,
)
from frontier_rft.inference.decoder import (
    TINY_COUNTDOWN,
    DecoderConfig,
    decode,
    prune_keep,
    utility_keep,
)
from frontier_rft.inference.head import attach_head, mask_reserved, readout, save_head_model
from frontier_rft.inference.scoring import score_sequences
from frontier_rft.inference.spec import ZipRCSpec
from frontier_rft.lm.rollout import encode_prompts
from frontier_rft.training.tiny_model import build_tiny_lm
from test_training_model import TINY as TRAINING_TINY

EDGES = (0, 4, 8, 16)
TINY = dataclasses.replace(TRAINING_TINY, max_positions=256, corpus_tasks=60)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, ZipRCSpec, Path]:
    """(head model, tokenizer, spec, saved dir): random slice rows, EOS boosted to ~15%."""
    root = tmp_path_factory.mktemp("decoder_lm")
    model, tok = build_tiny_lm(TINY, root / "init")
    spec = attach_head(model, tok, length_edges=EDGES)
    model.eval()
    gen = torch.Generator().manual_seed(0)
    head = model.get_output_embeddings().weight
    prompt = encode_prompts(tok, ["Using the numbers [3, 5], create 8."])[0]
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([prompt]), output_hidden_states=True)
        mean_h = hidden.hidden_states[-1][0].mean(0)
        head[spec.start_id : spec.end_id] = torch.randn(spec.size, head.shape[1], generator=gen)
        eos = model.generation_config.eos_token_id
        head[eos] += 3.5 * mean_h / mean_h.norm() ** 2  # +3.5 logits where h ~ the mean state
    save_head_model(model, tok, spec, root / "head")
    return model, tok, spec, root / "head"


@pytest.fixture(scope="module")
def prompt(tiny: tuple[Any, Any, ZipRCSpec, Path]) -> list[int]:
    return encode_prompts(tiny[1], ["Using the numbers [3, 5], create 8."])[0]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"policy": "greedy"}, "policy must be one of"),
        ({"k": 2, "k_min": 3}, "k_min (3) must not exceed k (2)"),
        ({"warmup": 0}, "warmup must be an int >= 1"),
        ({"tau": 1.5}, "tau must be a number in [0, 1]"),
        ({"temperature": 0.0}, "not 0: pure sampling"),
        ({"temperature": 1e-300}, "temperature must be a finite number >= 1e-06"),
        ({"beta": -0.1}, "beta must be a number >= 0"),
        ({"stop_ids": 5}, "stop_ids must be a tuple"),
        ({"temperature": float("inf")}, "temperature must be a finite number"),
        ({"utility_norm": "tokens"}, "utility_norm must be one of"),
        ({"check_values": "some"}, "check_values must be one of"),
    ],
)
def test_config_validation_names_the_fix(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        DecoderConfig(**changes)


def test_presets_and_labels() -> None:
    paper = DecoderConfig()
    assert (paper.k, paper.warmup, paper.interval, paper.k_min, paper.smoothing) == (
        8,
        128,
        32,
        2,
        4,
    )
    assert (paper.end_window, paper.prune_threshold, paper.tau, paper.beta) == (16, 0.5, 0.8, 0.02)
    tiny = TINY_COUNTDOWN
    assert (tiny.max_new_tokens, tiny.warmup, tiny.interval, tiny.end_window) == (40, 4, 2, 4)
    assert paper.replace(policy="early_stop", tau=0.9).label == "early_stop tau=0.9"
    assert paper.replace(policy="utility", beta=0.005).label == "utility beta=0.005"
    assert paper.replace(policy="prune").label == "prune thr=0.5"


# ---------------------------------------------------------------------------- policy rules


def test_prune_keep_hand_computed() -> None:
    v = np.array([0.7, 0.2, 0.4, 0.1])
    assert prune_keep(v, 0.5, 2).tolist() == [True, False, True, False]
    assert prune_keep(v, 0.5, 1).tolist() == [True, False, False, False]
    assert prune_keep(v, 0.5, 3).tolist() == [True, True, True, False]
    assert prune_keep(np.full(4, 0.2), 0.5, 2).tolist() == [True, True, False, False]
    assert prune_keep(v, 0.0, 2).all()  # nothing below a threshold of 0


def test_utility_keep_hand_computed() -> None:
    v, c = np.array([0.6, 0.3, 0.1]), np.array([0.5, 0.5, 1.0])
    # margins: 0.6*0.7*0.9 - 0.025 = 0.353, 0.3*0.4*0.9 - 0.025 = 0.083, 0.1*0.4*0.7 - 0.05
    # = -0.022: drop sample 2; then 0.42 - 0.025 and 0.12 - 0.025 are both >= 0.
    assert utility_keep(v, c, beta=0.05).tolist() == [True, True, False]
    # A finished candidate with value 0.9 stays in the set: every product gains a factor 0.1.
    # margins 0.0128, -0.0142, -0.0472: drop 2; then 0.042 - 0.025, 0.012 - 0.025: drop 1.
    assert utility_keep(v, c, beta=0.05, others=[0.9]).tolist() == [True, False, False]
    # beta 0 keeps everything; a huge beta keeps exactly one (the best margin).
    assert utility_keep(v, c, beta=0.0).all()
    assert utility_keep(v, c, beta=10.0).tolist() == [True, False, False]
    # Equal values: ties drop the higher index, the set shrinks until each sample pays.
    # 4 x 0.5: margin 0.5^4 - 0.1 < 0 -> drop 3; 3 x 0.5: 0.125 - 0.1 >= 0 -> stop.
    assert utility_keep(np.full(4, 0.5), np.ones(4), beta=0.1).tolist() == [1, 1, 1, 0]


def test_smoothed_value_and_value_end_windows_by_hand() -> None:
    """App. B.5 / Table 7: policies read V averaged over the last 4 positions (smoothing
    window 4); value_end, the selection signal, is the mean over the last 16."""
    smoothed = decoder_module._smoothed
    assert smoothed([0.9, 0.1, 0.2, 0.3, 0.4], 4) == pytest.approx(0.25)  # (0.1+...+0.4)/4
    assert smoothed([0.6, 0.2], 4) == pytest.approx(0.4)  # fewer positions than the window
    history = [1.0] * 4 + [0.5] * 16
    assert smoothed(history, DecoderConfig().end_window) == pytest.approx(0.5)


# ---------------------------------------------------------------------------- real model


def _reference_samples(
    model: Any, spec: ZipRCSpec, prompt: list[int], config: DecoderConfig, seed: int
) -> list[list[int]]:
    """Each sample decoded on its own with full (uncached) forward passes and the same
    per-step uniforms: what K independent samples from the masked softmax give."""
    gen = _gen(seed)
    uniforms = [torch.rand(config.k, generator=gen, dtype=torch.float64) for _ in range(64)]
    eos = model.generation_config.eos_token_id
    out = []
    for j in range(config.k):
        seq: list[int] = []
        while True:
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([prompt + seq])).logits[0, -1].float()
            probs = torch.softmax(mask_reserved(logits, spec).double(), dim=-1)
            cdf = torch.cumsum(probs, 0)
            u = uniforms[len(seq)][j]
            seq.append(int(torch.searchsorted(cdf, u * cdf[-1], right=True)))
            if seq[-1] == eos or len(seq) == config.max_new_tokens:
                break
        out.append(seq)
    return out


def test_none_is_k_independent_samples_run_to_completion(tiny: Any, prompt: list[int]) -> None:
    model, _, spec, _ = tiny
    config = DecoderConfig(k=6, max_new_tokens=14, warmup=2, interval=2)
    res = decode(model, spec, prompt, config, _gen(3))
    assert res.sequences == _reference_samples(model, spec, prompt, config, 3)
    eos = model.generation_config.eos_token_id
    lengths = [len(s) for s in res.sequences]
    assert len(set(lengths)) > 1, "the boosted EOS should end samples at different lengths"
    for seq, status in zip(res.sequences, res.status, strict=True):
        assert status == ("finished" if seq[-1] == eos else "max_tokens")
        assert eos not in seq[:-1] and len(seq) <= config.max_new_tokens
    assert res.candidates == list(range(6)) and res.events == []
    # cost: the prefill once, then one pass per row per later step; latency: longest sample
    assert res.cost == 1 + sum(n - 1 for n in lengths)
    assert res.latency == max(lengths)
    # selection: highest mean V over the last end_window positions
    ends = [float(np.mean(v[-config.end_window :])) for v in res.values]
    np.testing.assert_allclose(res.value_end, ends)
    assert res.selected == int(np.argmax(ends))


def test_live_values_equal_teacher_forced_scoring(tiny: Any, prompt: list[int]) -> None:
    model, _, spec, _ = tiny
    config = DecoderConfig(k=5, max_new_tokens=12, warmup=2, interval=2, policy="prune")
    res = decode(model, spec, prompt.copy(), config.replace(prune_threshold=0.55), _gen(1))
    assert res.value_check < 1e-4
    offline = score_sequences(model, spec, [prompt] * 5, res.sequences)
    for j, ref in enumerate(offline):  # abandoned rows too: their prefix values match
        n = len(res.sequences[j])
        np.testing.assert_allclose(res.values[j][:n], ref.values, atol=1e-4)
        np.testing.assert_allclose(res.remaining[j][:n], ref.remaining, atol=1e-3)
        extra = 1 if res.status[j] == "abandoned" else 0  # the value read when abandoned
        assert len(res.values[j]) == n + extra
    assert res.values[0][0] == pytest.approx(offline[0].prompt_value, abs=1e-5)
    # every sample starts from the same prompt value
    assert len({round(float(v[0]), 6) for v in res.values}) == 1


def test_same_seed_same_result_and_policies_share_trajectories(
    tiny: Any, prompt: list[int]
) -> None:
    model, _, spec, _ = tiny
    base = DecoderConfig(k=6, max_new_tokens=12, warmup=2, interval=2)
    a = decode(model, spec, prompt, base, _gen(7))
    b = decode(model, spec, prompt, base, _gen(7))
    assert a.sequences == b.sequences and a.cost == b.cost
    np.testing.assert_array_equal(a.values[0], b.values[0])
    assert decode(model, spec, prompt, base, _gen(8)).sequences != a.sequences
    # common random numbers: a pruned run keeps exactly the none run's samples (abandoned
    # ones as prefixes), so policy comparisons at one seed are paired
    pruned = decode(model, spec, prompt, base.replace(policy="prune", prune_threshold=0.6), _gen(7))
    assert "abandoned" in pruned.status
    for j in range(6):
        n = len(pruned.sequences[j])
        assert pruned.sequences[j] == a.sequences[j][:n]
        if pruned.status[j] != "abandoned":
            assert n == len(a.sequences[j])


def test_decode_restores_training_mode_and_rejects_bad_input(tiny: Any, prompt: list[int]) -> None:
    model, _, spec, _ = tiny
    model.train()
    decode(model, spec, prompt, DecoderConfig(k=2, max_new_tokens=3, check_values="off"))
    assert model.training
    model.eval()
    with pytest.raises(ValueError, match="prompt_ids is empty"):
        decode(model, spec, [], DecoderConfig(k=2, max_new_tokens=3))
    for bad in ([spec.start_id], [-1], [10**6]):  # a reserved id, or no token at all
        with pytest.raises(ValueError, match="prompt_ids must be token ids"):
            decode(model, spec, bad, DecoderConfig(k=2, max_new_tokens=3))
    with pytest.raises(ValueError, match="reserved slice"):
        decode(model, spec, prompt, DecoderConfig(k=2, stop_ids=(spec.start_id,)))


# ---------------------------------------------------------------------------- scripted model


class BigramLM(torch.nn.Module):
    """Logits depend only on the current token: table[token]. Real ids 0..7 (EOS 2), then
    the slice. Every real token moves uniformly to ids 3..7 (EOS only where `eos_logit`
    says); the slice logits give V = sigmoid(value_logit) everywhere."""

    def __init__(self, spec: ZipRCSpec, value: float, eos_logit: float = -1e9) -> None:
        super().__init__()
        self.spec = spec
        table = torch.full((spec.end_id, spec.end_id), -1e9)
        table[:, 3:8] = 0.0
        table[:, 2] = eos_logit
        table[:, spec.start_id : spec.end_id] = 0.0
        success = slice(spec.start_id + spec.num_lengths, spec.end_id)  # reward state 1
        table[:, success] = float(np.log(value / (1 - value)))
        self.table = table
        self.generation_config = types.SimpleNamespace(eos_token_id=2, pad_token_id=0)

    def forward(self, input_ids: torch.Tensor, **_: Any) -> Any:
        return types.SimpleNamespace(logits=self.table[input_ids])


SCRIPT_SPEC = ZipRCSpec(8, (0.0, 1.0), EDGES)


def _scripted(value: float, policy: str, **changes: Any) -> Any:
    model = BigramLM(SCRIPT_SPEC, value)
    config = DecoderConfig(
        k=4, max_new_tokens=10, warmup=3, interval=2, k_min=2, policy=policy, **changes
    )
    return decode(model, SCRIPT_SPEC, [3, 4, 5], config, _gen(0))


def test_scripted_value_is_the_constant() -> None:
    res = _scripted(0.2, "none")
    for v in res.values:
        np.testing.assert_allclose(v, 0.2, atol=1e-6)
    assert res.value_check < 1e-6


@pytest.mark.parametrize(
    ("value", "policy", "changes", "cost", "latency", "abandoned", "events"),
    [
        # none: 4 rows x 10 tokens, the prefill once then 9 row passes each: 1 + 36
        (0.2, "none", {}, 37, 10, [], []),
        # prune, V = 0.2 < 0.5: at the first prune point (step 3) drop to k_min = 2 (the
        # lowest indices on ties): steps 1-3 run 4 rows, steps 4-9 run 2 rows: 1 + 12 + 12
        (0.2, "prune", {}, 25, 10, [2, 3], [(3, "abandon", (2, 3))]),
        (0.9, "prune", {}, 37, 10, [], []),
        # early stop, V = 0.9 >= tau: commit at step 3 to sample 0: 1 + 12 + 6 x 1
        (
            0.9,
            "early_stop",
            {},
            19,
            10,
            [1, 2, 3],
            [(3, "commit", (0,)), (3, "abandon", (1, 2, 3))],
        ),
        (0.2, "early_stop", {}, 37, 10, [], []),
        # utility, V = 0.5, E[l]/l_max = 1: 4 rows margin 0.0625 - 0.1 < 0 drops one, then
        # 0.125 - 0.1 >= 0 keeps three: 1 + 12 + 6 x 3
        (0.5, "utility", {"beta": 0.1}, 31, 10, [3], [(3, "abandon", (3,))]),
        # beta 0.3: 0.0625, 0.125 and 0.25 all below 0.3: down to one sample: 1 + 12 + 6
        (0.5, "utility", {"beta": 0.3}, 19, 10, [1, 2, 3], [(3, "abandon", (1, 2, 3))]),
    ],
)
def test_scripted_cost_and_latency(
    value: float,
    policy: str,
    changes: dict[str, Any],
    cost: int,
    latency: int,
    abandoned: list[int],
    events: list[Any],
) -> None:
    res = _scripted(value, policy, **changes)
    assert (res.cost, res.latency) == (cost, latency)
    assert [j for j, s in enumerate(res.status) if s == "abandoned"] == abandoned
    assert res.events == events
    for j in abandoned:  # abandoned at step 3: three tokens, four values read
        assert len(res.sequences[j]) == 3 and len(res.values[j]) == 4 and res.stopped_at[j] == 3
        assert np.isnan(res.value_end[j])
    assert res.selected not in abandoned
    assert all(len(res.sequences[j]) == 10 for j in res.candidates)
    if policy == "early_stop" and abandoned:
        assert res.committed == 0 and res.selected == 0


def test_scripted_early_stop_latency_and_stop_ids() -> None:
    # EOS has probability 1/6 per step: the committed sample ends early, the decoder with it.
    model = BigramLM(SCRIPT_SPEC, 0.9, eos_logit=0.0)
    config = DecoderConfig(k=4, max_new_tokens=30, warmup=2, interval=2, policy="early_stop")
    res = decode(model, SCRIPT_SPEC, [3], config, _gen(5))
    assert res.committed is not None and res.events[0] == (2, "commit", (res.committed,))
    assert res.latency == res.stopped_at[res.committed] + 1 == len(res.selected_ids)
    for j in range(4):
        if j != res.committed and res.stopped_at[j] >= 2:  # still running at the commit
            assert res.status[j] == "abandoned" and res.stopped_at[j] == 2
    none = decode(model, SCRIPT_SPEC, [3], config.replace(policy="none"), _gen(5))
    assert none.latency == max(len(s) for s in none.sequences) >= res.latency
    # an extra stop id ends samples like EOS
    stop = decode(model, SCRIPT_SPEC, [3], config.replace(policy="none", stop_ids=(7,)), _gen(5))
    for seq, status in zip(stop.sequences, stop.status, strict=True):
        assert status == "finished" and seq[-1] in (2, 7) and not set(seq[:-1]) & {2, 7}


def test_reserved_ids_are_never_sampled_even_when_the_slice_dominates() -> None:
    model = BigramLM(SCRIPT_SPEC, 0.5)
    model.table[:, SCRIPT_SPEC.start_id : SCRIPT_SPEC.end_id] += 1e4  # slice >> real logits
    res = decode(model, SCRIPT_SPEC, [3], DecoderConfig(k=8, max_new_tokens=20), _gen(0))
    tokens = {t for s in res.sequences for t in s}
    assert tokens and tokens <= set(range(3, 8))
    # the sampler itself: u = 0 and u -> 1 with zero-probability ids at both ends
    logits = torch.full((2, SCRIPT_SPEC.end_id), -1e9)
    logits[:, 4] = 0.0
    logits[:, 5] = 0.0
    logits[:, SCRIPT_SPEC.start_id :] = 1e4
    u = torch.tensor([0.0, 1.0 - 1e-12], dtype=torch.float64)
    assert decoder_module._sample(logits, SCRIPT_SPEC, 1.0, u).tolist() == [4, 5]


def test_a_broken_mask_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    model = BigramLM(SCRIPT_SPEC, 0.5)
    model.table[:, SCRIPT_SPEC.start_id] = 1e4
    monkeypatch.setattr(decoder_module, "mask_reserved", lambda logits, spec: logits.clone())
    with pytest.raises(RuntimeError, match="reserved id 8 sampled"):
        decode(model, SCRIPT_SPEC, [3], DecoderConfig(k=2, max_new_tokens=5), _gen(0))


def test_a_live_offline_mismatch_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def shifted(logits: torch.Tensor, spec: ZipRCSpec) -> tuple[torch.Tensor, torch.Tensor]:
        value, remaining = readout(logits, spec)
        return value + 0.01, remaining

    monkeypatch.setattr(decoder_module, "readout", shifted)
    model = BigramLM(SCRIPT_SPEC, 0.5)
    with pytest.raises(RuntimeError, match="live values differ"):
        decode(model, SCRIPT_SPEC, [3], DecoderConfig(k=2, max_new_tokens=4), _gen(0))


# ---------------------------------------------------------------------------- adaptive-K


def test_difficulty_rank_and_allocation_hand_computed() -> None:
    v = [0.9, 0.1, 0.5, 0.3]
    np.testing.assert_allclose(difficulty_rank(v), [0.0, 1.0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(difficulty_rank([0.2, 0.2, 0.9]), [0.75, 0.75, 0.0])
    # budget 16 over [1, 7]: the linear map 1 + 6 d already sums to 16
    assert allocate_k(v, 4, 1, 7).tolist() == [1, 7, 3, 5]
    # budget 8: shift the line down by 3 and clip: [1, 4, 1, 2]
    assert allocate_k(v, 2, 1, 7).tolist() == [1, 4, 1, 2]
    # budget 10: shift by 2: [1, 5, 1, 3]
    assert allocate_k(v, 2.5, 1, 7).tolist() == [1, 5, 1, 3]
    # fractional ideal [1, 3.5, 1, 2.5] (budget 8 over [1, 4.5]... ) -> integer via remainders
    alloc = allocate_k([0.9, 0.1, 0.5, 0.3, 0.7], 3, 1, 8)  # budget 15
    assert alloc.sum() == 15 and alloc.min() >= 1 and alloc.max() <= 8
    assert alloc[1] == alloc.max() and alloc[0] == alloc.min()  # hardest most, easiest least
    assert allocate_k([0.5] * 5, 3, 1, 8).tolist() == [3] * 5  # no spread: equal split
    assert fixed_allocation(4, 2.5).tolist() == [3, 3, 2, 2]


@pytest.mark.parametrize("seed", range(5))
def test_allocation_properties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = rng.random(37)
    for k_bar in (1.0, 2.3, 4.0, 7.9):
        alloc = allocate_k(v, k_bar, 1, 8)
        assert alloc.sum() == int(np.floor(k_bar * 37 + 0.5))
        assert alloc.min() >= 1 and alloc.max() <= 8
        order = np.argsort(v)  # lower value -> at least as many samples
        assert np.all(np.diff(alloc[order]) <= 0)


def test_allocation_errors() -> None:
    with pytest.raises(ValueError, match="choose K_bar in"):
        allocate_k([0.1, 0.2], 9, 1, 8)
    with pytest.raises(ValueError, match="k_min <= k_max"):
        allocate_k([0.1, 0.2], 2, 3, 2)


def test_evaluate_allocation_hand_computed() -> None:
    correct = np.array([[0, 1, 1], [0, 0, 0], [1, 0, 1]], dtype=bool)
    value_end = np.array([[0.9, 0.2, 0.8], [0.5, 0.4, 0.3], [0.1, 0.7, 0.9]])
    lengths = np.array([[5, 3, 4], [2, 2, 2], [6, 1, 3]])
    ev = evaluate_allocation([1, 2, 3], correct, value_end, lengths)
    # prompt 0 uses sample 0 (wrong); prompt 1 picks 0 (wrong); prompt 2 picks 2 (right)
    assert ev["value_accuracy"] == pytest.approx(1 / 3)
    assert ev["oracle_accuracy"] == pytest.approx(1 / 3)
    # compute: (1 + 4) + (1 + 1 + 1) + (1 + 5 + 0 + 2); latency 5, 2, 6
    assert ev["compute"] == pytest.approx((5 + 3 + 8) / 3)
    assert ev["latency"] == pytest.approx((5 + 2 + 6) / 3)
    assert evaluate_allocation([3, 0, 1], correct, value_end)["oracle_accuracy"] == pytest.approx(
        2 / 3
    )
    with pytest.raises(ValueError, match="allocations must lie in"):
        evaluate_allocation([4, 0, 0], correct, value_end)


# ---------------------------------------------------------------------------- pareto command


def test_summarize_and_table() -> None:
    from frontier_rft.inference.pareto import format_table, operating_points, summarize

    per_seed = {
        "none": {
            "0": {"accuracy": 0.5, "oracle": 0.6, "compute": 100.0, "latency": 20.0},
            "1": {"accuracy": 0.7, "oracle": 0.8, "compute": 120.0, "latency": 22.0},
        },
        "prune thr=0.5": {
            "0": {"accuracy": 0.4, "oracle": 0.5, "compute": 50.0, "latency": 20.0},
            "1": {"accuracy": 0.7, "oracle": 0.7, "compute": 60.0, "latency": 18.0},
        },
    }
    rows = summarize(per_seed, {"none": "live", "prune thr=0.5": "live"})
    prune = rows[1]
    assert prune["accuracy"]["mean"] == pytest.approx(0.55)
    assert prune["accuracy"]["std"] == pytest.approx(np.std([0.4, 0.7], ddof=1))
    assert prune["delta_accuracy"]["mean"] == pytest.approx(-0.05)  # paired: -0.1 and 0.0
    assert prune["compute_pct"] == pytest.approx(-50.0)
    assert prune["latency_pct"] == pytest.approx(100 * (19 / 21 - 1))
    table = format_table(rows)
    assert "| prune thr=0.5 | 0.550 ± 0.212 | -0.050 ± 0.071 | — |" in table
    assert "55.0 ± 7.1 (-50%)" in table
    # paired bootstrap over prompts: prompt changes (-1, 0, 0, +1) and (0, 0, 0, +1) average
    # to (-0.5, 0, 0, 1): resampled means lie in [-0.5, 1], the interval holds the mean 0.125
    records = {
        "none": {"0": {"accuracy": [1, 0, 0, 0]}, "1": {"accuracy": [0, 1, 0, 0]}},
        "prune thr=0.5": {"0": {"accuracy": [0, 0, 0, 1]}, "1": {"accuracy": [0, 1, 0, 1]}},
    }
    rows = summarize(per_seed, {}, records=records)
    lo, hi = rows[1]["delta_accuracy_ci95"]
    assert -0.5 <= lo < 0.125 < hi <= 1.0
    assert "delta_accuracy_ci95" not in rows[0]
    points = operating_points(TINY_COUNTDOWN, (0.5,), (0.8,), (0.02,))
    assert [p.label for p in points] == [
        "none",
        "prune thr=0.5",
        "early_stop tau=0.8",
        "utility beta=0.02",
    ]
    with pytest.raises(ValueError, match="duplicate operating points"):
        operating_points(TINY_COUNTDOWN, (0.5, 0.5), (), ())


def test_pareto_rows_with_undefined_values_are_strict_json_and_tabulate() -> None:
    from frontier_rft.core.jsonsafe import dumps_strict
    from frontier_rft.inference.pareto import format_table, summarize

    metrics = {"accuracy": 0.5, "oracle": 0.5, "compute": 0.0, "latency": 0.0}
    rows = summarize({"none": {"0": metrics}, "prune thr=0.5": {"0": metrics}}, {})
    assert np.isnan(rows[1]["compute_pct"])  # no compute to compare against

    def strict(token: str) -> None:
        raise AssertionError(f"bare {token}: not valid JSON")

    loaded = json.loads(dumps_strict(rows), parse_constant=strict)
    assert loaded[1]["compute_pct"] is None
    assert "0.0 ± 0.0 (+nan%)" in format_table(loaded)


def test_pareto_command_end_to_end(tiny: Any, tmp_path: Path) -> None:
    from frontier_rft.cli.ziprc_pareto import add_pareto_command

    head_dir = tiny[3]
    parser = argparse.ArgumentParser()
    add_pareto_command(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "pareto"
    args = parser.parse_args(
        ["pareto", "--head", str(head_dir), "--out", str(out), "--seeds", "0,1",
         "--prompts", "3", "--k", "3", "--max-new-tokens", "8", "--warmup", "2",
         "--interval", "2", "--tau", "0.5", "--beta", "0.05", "--k-bar", "2",
         "--levels", "2x20", "--threads", "1"]
    )  # fmt: skip
    assert args.func(args) == 0
    text = (out / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text  # strict JSON: null where undefined
    result = json.loads(text)
    labels = [r["label"] for r in result["summary"]]
    assert labels == [
        "none",
        "prune thr=0.5",
        "early_stop tau=0.5",
        "utility beta=0.05",
        "fixed K=2",
        "adaptive K=2",
    ]
    assert result["settings"]["decoder"]["warmup"] == 2
    for label, by_seed in result["per_seed"].items():
        assert sorted(by_seed) == ["0", "1"]
        for metrics in by_seed.values():
            assert 0.0 <= metrics["accuracy"] <= metrics["oracle"] <= 1.0
            if result["kinds"][label] == "live":
                assert metrics["reserved"] == 0 and metrics["value_check"] < 1e-4
    none = result["per_seed"]["none"]["0"]
    for label in labels[1:4]:  # a policy never costs more than best-of-K at the same seed
        assert result["per_seed"][label]["0"]["compute"] <= none["compute"]
    md = (out / "results.md").read_text()
    assert "| none |" in md and "adaptive K=2" in md and "AUC" in md
    for name in ("pareto_compute.png", "pareto_latency.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob("*.tmp"))
