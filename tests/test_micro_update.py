"""The update in micro-batches of rows (training/micro_update.py, TrainConfig.update_rows):
each run's share of the loss by hand, the same gradient and logged parts as one pass over
ragged groups for every aggregation, a trained run that matches the whole-step run up to float
rounding (PPO epochs, KL, entropy, the noise meter), and the settings it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frontier_rft.training.config import TrainConfig  # noqa: E402
from frontier_rft.training.micro_update import (  # noqa: E402
    _shares,
    chunked_backward,
    chunked_logprobs,
    row_chunks,
)

# The noise meter's tests build the same runs and steps: one home for them.
from test_noise_meter_training import _config, _Nothing, _run, _synthetic_step  # noqa: E402


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    """Trainer sets torch's (process-wide) thread count: give the next test its own back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_rows_are_cut_into_contiguous_runs_of_at_most_the_setting() -> None:
    assert [c.tolist() for c in row_chunks(10, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [c.tolist() for c in row_chunks(3, 0)] == [[0, 1, 2]]
    assert [c.tolist() for c in row_chunks(3, 5)] == [[0, 1, 2]]


def test_a_runs_share_of_the_normaliser_by_hand() -> None:
    """Lengths 3, 0, 5, 2 (10 tokens, 4 rows); the run of rows 0-1 holds 3 tokens and 2 rows:
    token_mean 3/10, sequence_mean and constant 2/4; the token means' share 3/10. A run of
    empty rows only counts 1 token (aggregate's own clamp), against 0 in the numerator."""
    lengths = np.array([3, 0, 5, 2])
    first = np.array([0, 1])
    assert _shares(lengths, first, "token_mean") == pytest.approx((0.3, 0.3))
    assert _shares(lengths, first, "sequence_mean") == pytest.approx((0.5, 0.3))
    assert _shares(lengths, first, "constant") == pytest.approx((0.5, 0.3))
    assert _shares(lengths, np.array([1]), "token_mean") == pytest.approx((0.1, 0.1))


@pytest.mark.integration
@pytest.mark.parametrize("how", ["token_mean", "sequence_mean", "constant"])
def test_runs_of_rows_give_the_whole_steps_gradient_and_parts(sft_dir: Path, how: str) -> None:
    """Ragged groups (3, 2, 4 rows, group weights), KL and entropy terms, pi_old and the
    surrogate scaled: the runs' gradients add up to one pass's, and the logged parts and
    loss are one pass's; pi_old scored in runs is one pass's."""
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.lm.rollout import score_completions
    from frontier_rft.training.policy_loss import policy_loss

    model, _ = load_lm(sft_dir)
    model.train()
    config = _config(loss_aggregation=how, kl_coef=0.1, entropy_coef=0.02, update_rows=4)
    step = _synthetic_step(model, [3, 2, 4], seed=2)
    t = step["tensors"]
    prompts, completions = step["prompts"], step["completions"]
    scores = score_completions(model, prompts, completions, with_entropy=True, temperature=1.0)
    whole = policy_loss(scores, t["advantages"], t["old"], t["ref"], config, t["weights"], 0.75)
    params = list(model.parameters())
    want = torch.autograd.grad(whole.total, params)
    inputs = {**t, "pg_scale": 0.75}
    model.zero_grad(set_to_none=True)
    total, parts, old = chunked_backward(
        model, config, prompts, completions, inputs, lambda: _Nothing()
    )
    for p, w in zip(params, want, strict=True):
        torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-6)
    assert total == pytest.approx(float(whole.total.detach()), rel=1e-5, abs=1e-7)
    assert parts == pytest.approx(whole.parts, rel=1e-5, abs=1e-7)
    torch.testing.assert_close(old, t["old"])
    with torch.no_grad():
        in_runs = chunked_logprobs(model, prompts, completions, 4, 1.0)
    torch.testing.assert_close(in_runs, t["old"], rtol=1e-5, atol=1e-6)


def _whole_and_in_runs_of_5(
    changes: dict[str, Any], sft_dir: Path, tmp_path: Path
) -> list[tuple[dict[str, float], dict[str, float]]]:
    """Train `changes` whole-step and in runs of 5 rows; check every step's parameters (and
    the RNG) agree to float rounding; each step's metrics, (in runs, whole)."""
    whole, p_whole = _run(_config(**changes), sft_dir, tmp_path / "whole")
    micro, p_micro = _run(_config(update_rows=5, **changes), sft_dir, tmp_path / "micro")
    for a, b in zip(p_micro, p_whole, strict=True):
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    return list(zip(micro, whole, strict=True))


@pytest.mark.integration
def test_a_run_in_micro_batches_trains_as_the_whole_step_does(
    sft_dir: Path, tmp_path: Path
) -> None:
    """16 rows a step in runs of 5 (groups of 4 cut across), two PPO epochs, KL, entropy and
    clipping, metered every step: each step's parameters, losses and noise readings are the
    whole-step run's up to float rounding."""
    changes = {"ppo_epochs": 2, "kl_coef": 0.05, "entropy_coef": 0.01, "max_grad_norm": 0.05}
    for m_micro, m_whole in _whole_and_in_runs_of_5(changes, sft_dir, tmp_path):
        read = [k for k in m_whole if k.startswith(("loss/", "policy/", "noise/")) and k in m_micro]
        assert any(k.startswith("noise/") for k in read)
        assert {k: m_micro[k] for k in read} == pytest.approx(
            {k: m_whole[k] for k in read}, rel=1e-3, abs=1e-5
        )


@pytest.mark.parametrize("lam", [0.5, 0.0])
def test_metis_judge_loss_in_micro_batches_trains_as_the_whole_step_does(
    sft_dir: Path, tmp_path: Path, lam: float
) -> None:
    """METIS's judge loss (not a sum over rows) backward on its own beside the runs of rows,
    metered every step; lam = 0 reports it and trains nothing on it: parameters and losses
    are the whole-step run's up to float rounding."""
    changes = {"selector": "metis", "selector_overrides": {"judge_loss_weight": lam}, "steps": 2}
    for m_micro, m_whole in _whole_and_in_runs_of_5(changes, sft_dir, tmp_path):
        assert m_micro["loss/judge_weighted"] == pytest.approx(lam * m_micro["loss/judge"])
        read = [k for k in m_whole if k.startswith(("loss/", "noise/")) and k in m_micro]
        assert {"loss/judge", "loss/total", "noise/grad_sq", "noise/trace"} <= set(read)
        assert {k: m_micro[k] for k in read} == pytest.approx(
            {k: m_whole[k] for k in read}, rel=1e-3, abs=1e-5
        )


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"update_rows": -1}, "update_rows must be an int >= 0"),
        ({"update_rows": True}, "update_rows must be an int"),
        ({"update_rows": 2.5}, "update_rows must be an int"),
        ({"update_rows": 8, "backfill": "replay"}, "update_rows needs backfill off"),
    ],
)
def test_bad_micro_batch_settings_are_refused_in_one_line(
    changes: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=said) as caught:
        TrainConfig(**changes)
    assert "\n" not in str(caught.value)


def test_bench_rl_update_rows_changes_where_runs_compute_not_which_runs_they_are(
    tmp_path: Path,
) -> None:
    """`bench-rl --update-rows 128` sets the runs' update_rows and says so in the reported
    command, while the ledger's testbed digest and a runs directory's testbed check read the
    runs as the same runs (like the device and the thread count)."""
    import argparse
    import json

    from frontier_rft.bench.real_rl.ledger import testbed_digest
    from frontier_rft.cli.bench_rl import _check_same_testbed, _command, _testbed_from_args

    def args(**changes: Any) -> argparse.Namespace:
        fields: dict[str, Any] = {
            "seeds": [0], "selectors": "uniform", "scale": "toy", "device": "", "steps": 0,
            "pool_size": None, "lr": 0.0, "model": "", "start_weights": "", "report_only": True,
            "update_rows": 0, "out": "o", "name": "n", "effects": False,
        }  # fmt: skip
        return argparse.Namespace(**{**fields, **changes})

    whole, micro = _testbed_from_args(args()), _testbed_from_args(args(update_rows=128))
    assert (whole.train.update_rows, micro.train.update_rows) == (0, 128)
    assert testbed_digest(whole) == testbed_digest(micro)
    assert "--update-rows 128 " in _command(args(update_rows=128))
    assert "--update-rows" not in _command(args())
    (tmp_path / "testbed.json").write_text(json.dumps(whole.to_json()))
    _check_same_testbed(tmp_path, micro)  # no refusal
