"""ZIP-RC-Lite head training on a really tiny Llama: the policy is untouched bit for bit (and
a tied head would not be), labels and readouts match hand-computed numbers, the head learns
a learnable signal, checkpoints round-trip, bad inputs fail clearly, and `generate` with
SuppressReservedLogits never emits a reserved id."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
import torch.nn.functional as F

from frontier_rft.inference.calibration import auc
from frontier_rft.inference.head import (
    SuppressReservedLogits,
    attach_head,
    load_head_model,
    readout,
    save_head_model,
    write_slice,
)
from frontier_rft.inference.rollouts import RolloutSet, collect_rollouts
from frontier_rft.inference.scoring import score_sequences
from frontier_rft.inference.spec import STRUCTURED_REWARDS, ZipRCSpec
from frontier_rft.inference.train_head import (
    HeadTrainConfig,
    completion_features,
    rollout_slice_logits,
    train_head,
)
from frontier_rft.lm.decoding import Sampling
from frontier_rft.lm.model_io import load_lm
from frontier_rft.lm.rollout import generate_completions
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.suite import load_task, train_split
from test_training_model import tiny_models

pytestmark = pytest.mark.integration

EDGES = (0, 4, 8, 16, 32)
FAST = HeadTrainConfig(length_edges=EDGES, batch_size=4, grad_accum=2, epochs=2)


@pytest.fixture(scope="module")
def sft_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return tiny_models(tmp_path_factory)[1]


def _synthetic_rollouts(tokenizer: object, n: int = 24, k: int = 4, seed: int = 0) -> RolloutSet:
    """Prompts of token 40 always succeed, prompts of token 41 always fail (0.1: a format
    reward, still a failure); completions are random tokens of random length, EOS last."""
    rng = np.random.default_rng(seed)
    eos = 2
    prompts, comps, rewards = [], [], []
    for i in range(n):
        good = i % 2 == 0
        prompts.append([1] + [40 if good else 41] * 6)
        row = []
        for _ in range(k):
            length = int(rng.integers(3, 12))
            row.append([*rng.integers(10, 300, size=length - 1).tolist(), eos])
        comps.append(row)
        rewards.append([1.0 if good else 0.1] * k)
    return RolloutSet(
        list(range(n)),
        [0] * n,
        prompts,
        comps,
        [["" for _ in range(k)] for _ in range(n)],
        np.array(rewards),
    )


def _probe_logits(model: torch.nn.Module, vocab: int) -> torch.Tensor:
    ids = torch.tensor([[1, 40, 77, 12, 130, 9, 2], [1, 41, 5, 6, 7, 250, 3]])
    with torch.no_grad():
        return model(input_ids=ids).logits[..., :vocab].clone()


# ----------------------------------------------------------------------------- (a) policy intact


def test_trained_head_leaves_policy_logits_and_embeddings_bit_identical(sft_dir: Path) -> None:
    model, tok = load_lm(sft_dir)
    vocab = model.get_input_embeddings().weight.shape[0]
    before = _probe_logits(model, vocab)
    emb = model.get_input_embeddings().weight.detach().clone()
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    rollouts = _synthetic_rollouts(tok)
    model, spec, stats = train_head(model, tok, rollouts, FAST, progress=False)
    assert stats["final_loss"] < stats["initial_loss"]  # the head did train
    assert torch.equal(_probe_logits(model, vocab), before)
    assert torch.equal(model.get_input_embeddings().weight[:vocab], emb)
    for name, value in model.named_parameters():  # only the head's reserved rows are new
        if name in params and value.shape == params[name].shape:
            assert torch.equal(value, params[name]), name
    head = model.get_output_embeddings().weight
    assert torch.equal(head[:vocab], emb)  # the clone still holds the old tied rows
    assert head.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    assert not torch.all(head[spec.start_id : spec.end_id] == 0)


def test_training_a_tied_head_would_change_the_policy(sft_dir: Path) -> None:
    """Control for the paper's critical bug: with the head still tied, the trainable head is
    the input embedding matrix, so the head loss (through the input lookup) moves the
    policy's logits over the real vocabulary."""
    model, tok = load_lm(sft_dir)
    vocab = model.get_input_embeddings().weight.shape[0]
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    spec = ZipRCSpec(vocab, (0.0, 1.0), EDGES)
    model.resize_token_embeddings(spec.end_id, mean_resizing=False)  # still tied
    before = _probe_logits(model, vocab)
    emb_before = model.get_input_embeddings().weight[:vocab].detach().clone()
    model.requires_grad_(False)
    tied = model.get_output_embeddings().weight
    tied.requires_grad_(True)
    opt = torch.optim.AdamW([tied], lr=1e-3, betas=(0.9, 0.95), weight_decay=0.0)
    rollouts = _synthetic_rollouts(tok, n=4, k=2)
    prompts, comps, rewards = rollouts.flat()
    for p, c, r in zip(prompts, comps, rewards, strict=True):
        logits = model(input_ids=torch.tensor([p + c])).logits[0, len(p) - 1 : len(p) - 1 + len(c)]
        labels = torch.from_numpy(spec.sequence_labels(float(r), len(c)))
        F.cross_entropy(logits[:, spec.start_id : spec.end_id], labels).backward()
    opt.step()
    assert not torch.equal(model.get_input_embeddings().weight[:vocab], emb_before)
    assert not torch.equal(_probe_logits(model, vocab), before)


# ----------------------------------------------------------------------------- (b) labels


def test_labels_and_flat_index_layout_by_hand() -> None:
    spec = ZipRCSpec(100, (0.0, 1.0), (0, 2, 4, 8))  # L = 3 bins: [0,2) [2,4) [4,8+)
    assert spec.flat_index(1, 2) == 5 and spec.flat_index(0, 1) == 1  # length varies fastest
    # 5 completion tokens: remaining 5 4 3 2 1 -> bins 2 2 1 1 0; success adds L = 3.
    assert spec.sequence_labels(1.0, 5).tolist() == [5, 5, 4, 4, 3]
    assert spec.sequence_labels(0.1, 5).tolist() == [2, 2, 1, 1, 0]  # format reward = fail
    assert spec.sequence_labels(0.0, 12).tolist()[:3] == [2, 2, 2]  # beyond 8 -> last bin
    structured = ZipRCSpec(100, (0.0, 0.1, 1.0), (0, 2, 4, 8))
    assert structured.sequence_labels(0.1, 2).tolist() == [3 + 1, 3 + 0]


def test_paper_slice_layout_and_bin_midpoints_by_hand() -> None:
    """Sec. 3.2 / App. B.5: R x L = 14 (binary) or 21 (structured) rows from id 151,665 for
    Qwen2.5; L = 7 bins with edges {0, 16, ..., 1024}; idx = length bin + state * L."""
    binary = ZipRCSpec(151_665)  # defaults: binary states, the paper's length edges
    assert (binary.num_rewards, binary.num_lengths, binary.size) == (2, 7, 14)
    assert binary.end_id == 151_679
    assert ZipRCSpec(151_665, STRUCTURED_REWARDS).size == 21
    np.testing.assert_allclose(binary.midpoints, [8, 24, 48, 96, 192, 384, 768])
    assert binary.flat_index(1, 0) == 7 and binary.flat_index(0, 6) == 6
    # remaining 0 and 15 -> bin 0, 16 -> bin 1, 300 -> [256, 512) = bin 5, 5000 -> last bin
    assert binary.length_bin([0, 15, 16, 300, 5000]).tolist() == [0, 0, 1, 5, 6]
    # A uniform joint: V = 1/2, E[l] = (8 + 24 + 48 + 96 + 192 + 384 + 768) / 7 = 1520 / 7.
    joint = binary.joint(np.zeros(14))
    assert binary.value(joint) == pytest.approx(0.5)
    assert binary.expected_remaining(joint) == pytest.approx(1520 / 7)


def test_training_features_are_exactly_where_the_scorer_reads_the_head(sft_dir: Path) -> None:
    model, tok = load_lm(sft_dir)
    spec = attach_head(model, tok, (0.0, 1.0), EDGES)
    with torch.no_grad():
        model.get_output_embeddings().weight[spec.start_id : spec.end_id].normal_(0, 0.5)
    rollouts = _synthetic_rollouts(tok, n=3, k=2)
    prompts, comps, _ = rollouts.flat()
    feats = completion_features(model, prompts, comps, batch_size=4)
    assert [f.shape[0] for f in feats] == [len(c) for c in comps]
    scored = score_sequences(model, spec, prompts, comps)
    logits = rollout_slice_logits(model, spec, rollouts)
    for i, s in enumerate(scored):
        joint = spec.joint(logits[i // 2][i % 2])
        np.testing.assert_allclose(spec.value(joint), s.values, atol=1e-5)
        np.testing.assert_allclose(spec.expected_remaining(joint), s.remaining, atol=1e-4)


# ----------------------------------------------------------------------------- (c) readout


def test_readout_matches_hand_computed_values() -> None:
    spec = ZipRCSpec(3, (0.0, 1.0), (0, 4, 8))  # midpoints 2 and 6
    p = np.array([0.1, 0.2, 0.3, 0.4])  # (fail, short) (fail, long) (ok, short) (ok, long)
    logits = torch.cat([torch.tensor([5.0, -1.0, 2.0]), torch.log(torch.tensor(p))]).float()
    value, remaining = readout(logits, spec)
    assert float(value) == pytest.approx(0.7, abs=1e-6)  # P(ok) = 0.3 + 0.4
    assert float(remaining) == pytest.approx(0.4 * 2 + 0.6 * 6, abs=1e-5)  # 4.4
    joint = spec.joint(np.log(p))
    assert spec.value(joint) == pytest.approx(0.7)
    assert spec.expected_remaining(joint) == pytest.approx(4.4)
    structured = ZipRCSpec(0, (0.0, 0.1, 1.0), (0, 4))
    assert structured.value(structured.joint(np.log([0.5, 0.3, 0.2]))) == pytest.approx(0.23)


def test_untrained_head_reads_uniform_joint_through_the_model(sft_dir: Path) -> None:
    model, tok = load_lm(sft_dir)
    spec = attach_head(model, tok, (0.0, 1.0), EDGES)  # new rows start at zero
    (s,) = score_sequences(model, spec, [[1, 40, 41]], [[50, 60, 2]])
    np.testing.assert_allclose(s.values, 0.5, atol=1e-6)
    np.testing.assert_allclose(s.remaining, np.mean([2, 6, 12, 24]), atol=1e-5)


# ----------------------------------------------------------------------------- (d) learns


def test_head_learns_a_prompt_determined_reward(sft_dir: Path) -> None:
    model, tok = load_lm(sft_dir)
    train = _synthetic_rollouts(tok, n=32, k=4, seed=1)
    cfg = dataclasses.replace(FAST, epochs=8, lr=3e-2)
    model, spec, stats = train_head(model, tok, train, cfg, progress=False)
    assert stats["steps"] == math.ceil(32 * 4 / 8) * 8
    assert stats["loss"][-1] < stats["loss"][0]
    test = _synthetic_rollouts(tok, n=16, k=2, seed=2)
    logits = rollout_slice_logits(model, spec, test)
    values = [[spec.value(spec.joint(seq)) for seq in row] for row in logits]
    v_prompt = np.array([[v[0] for v in row] for row in values])
    v_end = np.array([[v[-16:].mean() for v in row] for row in values])
    assert auc(v_prompt, test.successes) > 0.95  # measured 1.0
    assert auc(v_end, test.successes) > 0.85  # measured 0.96


# ----------------------------------------------------------------------------- (e) persistence


def test_head_model_and_rollouts_round_trip(sft_dir: Path, tmp_path: Path) -> None:
    model, tok = load_lm(sft_dir)
    rollouts = _synthetic_rollouts(tok, n=6, k=2)
    rollouts.save(tmp_path / "r.jsonl")
    again = RolloutSet.load(tmp_path / "r.jsonl")
    assert again.completion_ids == rollouts.completion_ids
    assert again.prompt_ids == rollouts.prompt_ids
    np.testing.assert_array_equal(again.rewards, rollouts.rewards)
    model, spec, _ = train_head(model, tok, rollouts, FAST, progress=False)
    save_head_model(model, tok, spec, tmp_path / "head", note="test")
    loaded, tok2, spec2 = load_head_model(tmp_path / "head")
    assert spec2 == spec and len(tok2) == len(tok)
    ids = torch.tensor([[1, 40, 77, 12, 2]])
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, model(input_ids=ids).logits)
    assert loaded.get_output_embeddings().weight.data_ptr() != (
        loaded.get_input_embeddings().weight.data_ptr()
    )


@pytest.mark.parametrize(
    ("spec", "phrase"),
    [
        ({"start_id": 10}, "must lie in"),  # inside the real vocabulary
        ({"start_id": 99.7}, "start_id must be an int"),
        ({"length_edges": None}, "length_edges must be a list of numbers"),
        ({"length_edges": [0, 4.5, 8.9]}, "whole numbers"),
        ({"reward_values": [0, float("nan")]}, "finite"),
        ("x", "a JSON object"),
    ],
)
def test_a_damaged_head_description_is_one_error_naming_it(
    sft_dir: Path, tmp_path: Path, spec: object, phrase: str
) -> None:
    import json

    model, tok = load_lm(sft_dir)
    good = attach_head(model, tok)
    save_head_model(model, tok, good, tmp_path / "head")
    path = tmp_path / "head" / "ziprc.json"
    payload = json.loads(path.read_text())
    payload["spec"] = {**payload["spec"], **spec} if isinstance(spec, dict) else spec
    path.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match=phrase):
        load_head_model(tmp_path / "head")


def test_collect_rollouts_resumes_to_the_uninterrupted_result(
    sft_dir: Path, tmp_path: Path
) -> None:
    model, tok = load_lm(sft_dir)
    suite = load_task("countdown")
    items = train_split(suite, 6, 1, "2x20")

    def collect(part: list[TaskItem], seed: int = 5, path: Path | None = None) -> RolloutSet:
        return collect_rollouts(
            model, tok, part, suite.verifier, Sampling(3, 12), seed=seed, prompts_per_batch=2,
            path=path, progress=False,
        )  # fmt: skip

    full = collect(items)
    assert full.rewards.shape == (6, 3) and all(
        c[-1] == 2 or len(c) == 12 for r in full.completion_ids for c in r
    )
    path = tmp_path / "partial.jsonl"
    collect(items[:4], path=path)  # interrupted after 4 of 6 tasks
    resumed = collect(items, path=path)
    assert resumed.completion_ids == full.completion_ids
    np.testing.assert_array_equal(resumed.rewards, full.rewards)
    assert RolloutSet.load(path).completion_ids == full.completion_ids
    with pytest.raises(ValueError, match="other settings"):
        collect(items, seed=6, path=path)


# ----------------------------------------------------------------------------- (f) bad inputs


def test_bad_inputs_give_clear_errors(sft_dir: Path, tmp_path: Path) -> None:
    model, tok = load_lm(sft_dir)
    with pytest.raises(ValueError, match="overlaps the tokenizer"):
        attach_head(model, tok, start_id=len(tok) - 3)
    good = _synthetic_rollouts(tok, n=2, k=2)
    with pytest.raises(ValueError, match="no rollouts"):
        train_head(model, tok, good.select([]), FAST, progress=False)
    with pytest.raises(ValueError, match="every field needs one entry"):
        RolloutSet([0, 1], [0], good.prompt_ids, good.completion_ids, good.texts, good.rewards)
    with pytest.raises(ValueError, match="rewards have 3 samples"):
        RolloutSet(
            [0, 1], [0, 0], good.prompt_ids, good.completion_ids, good.texts, np.zeros((2, 3))
        )
    bad = good.select([0, 1])
    bad.completion_ids[0][0] = []
    with pytest.raises(ValueError, match="empty completion"):
        train_head(model, tok, bad, FAST, progress=False)
    bad.completion_ids[0][0] = [10, 10_000]
    with pytest.raises(ValueError, match="different tokenizer"):
        train_head(model, tok, bad, FAST, progress=False)
    spec = ZipRCSpec(len(tok), (0.0, 1.0), EDGES)
    bad.completion_ids[0][0] = [10, spec.start_id + 1, 2]
    with pytest.raises(ValueError, match="reserved ZIP-RC id"):
        bad.check_tokens(spec)
    with pytest.raises(ValueError, match="length_edges must start at 0"):
        HeadTrainConfig(length_edges=(4, 8))
    with pytest.raises(ValueError, match="grad_accum must be a positive int"):
        HeadTrainConfig(grad_accum=0)
    with pytest.raises(FileNotFoundError, match="frontier ziprc train"):
        load_head_model(sft_dir)
    (tmp_path / "x.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(ValueError, match="not a ZIP-RC rollout file"):
        RolloutSet.load(tmp_path / "x.jsonl")


# ----------------------------------------------------------------------------- (g) masking


def test_generate_never_emits_reserved_ids_even_when_they_dominate(sft_dir: Path) -> None:
    model, tok = load_lm(sft_dir)
    original, _ = load_lm(sft_dir)
    spec = attach_head(model, tok, (0.0, 1.0), EDGES)
    prompts = [[1, 40, 77, 12, 130], [1, 41, 5, 6]]
    # Make the slice logits huge at every position: rows along the mean hidden direction.
    feats = torch.cat(completion_features(model, prompts, [[50, 60, 70, 80]] * 2))
    direction = feats.mean(0) / feats.mean(0).norm() ** 2
    assert torch.all(feats @ direction > 0)
    write_slice(model, spec, 1e4 * direction.repeat(spec.size, 1))
    greedy = generate_completions(model, prompts, 1, 8, temperature=0.0)
    assert all(spec.start_id <= t < spec.end_id for row in greedy for t in row)  # control
    suppress = [SuppressReservedLogits(spec)]
    torch.manual_seed(0)
    sampled = generate_completions(model, prompts, 16, 12, 1.0, suppress)
    assert not any(spec.start_id <= t < spec.end_id for row in sampled for t in row)
    masked_greedy = generate_completions(model, prompts, 1, 12, 0.0, suppress)
    assert masked_greedy == generate_completions(original, prompts, 1, 12, 0.0)
