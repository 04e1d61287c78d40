"""The reference trainer's noise meter (training/noise_meter.py): it trains nothing (weights
bitwise the unmetered run's), its halves are the step's own loss, its torch path measures
planted gradients exactly as the estimator says, and it resumes exactly."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frontier_rft.core.noise_scale import halves, halves_estimate  # noqa: E402
from frontier_rft.training.config import TrainConfig  # noqa: E402
from frontier_rft.training.noise_meter import NoiseMeter, adam_geometry, rows_loss  # noqa: E402


@pytest.fixture(autouse=True)
def _torch_threads() -> Iterator[None]:
    """Trainer sets torch's (process-wide) thread count: give the next test its own back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _config(**changes: Any) -> TrainConfig:
    from test_training_model import TEST_TRAIN

    fields: dict[str, Any] = {
        "batch_size": 4,
        "steps": 3,
        "eval_every": 0,
        "checkpoint_every": 1000,
        "threads": 1,
        "noise_every": 1,
    }
    return dataclasses.replace(TEST_TRAIN, **{**fields, **changes})


def _run(config: TrainConfig, sft_dir: Path, out: Path) -> tuple[list[dict[str, float]], list[Any]]:
    from frontier_rft.training.grpo import Trainer

    trainer = Trainer(config, sft_dir, out, log=lambda _: None)
    metrics, params = [], []
    for _ in range(config.steps):
        metrics.append(trainer.step())
        params.append([p.detach().clone() for p in trainer.model.parameters()])
    params.append([torch.get_rng_state()])
    return metrics, params


@pytest.mark.integration
def test_the_meter_changes_nothing_trained(sft_dir: Path, tmp_path: Path) -> None:
    """Metered every step, with every input the meter slices (pi_old over two PPO epochs, the
    KL's reference, the entropy bonus, clipping): every parameter after every step, the RNG
    and every logged loss are bitwise those of the run without the meter."""
    changes = {"ppo_epochs": 2, "kl_coef": 0.05, "entropy_coef": 0.01, "max_grad_norm": 0.05}
    on, p_on = _run(_config(**changes), sft_dir, tmp_path / "on")
    off, p_off = _run(_config(noise_every=0, **changes), sft_dir, tmp_path / "off")
    for step, (a, b) in enumerate(zip(p_on, p_off, strict=True)):
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True)), step
    # Adam's geometry from its second step on: the first has no second moments to read
    assert "noise/adam/intra" not in on[0] and all("noise/adam/intra" in m for m in on[1:])
    for m_on, m_off in zip(on, off, strict=True):
        assert "noise/intra" in m_on and not any(k.startswith("noise/") for k in m_off)
        same = [k for k in m_off if not k.startswith("perf/") and not k.endswith("_ms")]
        assert {k: m_on[k] for k in same} == {k: m_off[k] for k in same}
        assert m_on["perf/noise_s"] > 0 and "perf/noise_s" not in m_off


def _synthetic_step(model: Any, sizes: list[int], seed: int) -> dict[str, Any]:
    """A step's rows on the tiny model: groups of `sizes` random completions of random prompts,
    with advantages, group weights, pi_old and reference log-probs as `_update` holds them."""
    from frontier_rft.lm.rollout import score_completions
    from frontier_rft.training.policy_loss import row_weights

    rng = np.random.default_rng(seed)
    vocab = model.config.vocab_size
    prompts, completions = [], []
    for n in sizes:
        prompt = rng.integers(5, vocab, rng.integers(3, 7)).tolist()
        for _ in range(n):
            prompts.append(prompt)
            completions.append(rng.integers(5, vocab, rng.integers(1, 9)).tolist())
    with torch.no_grad():
        old = score_completions(model, prompts, completions).logprobs
    weights = row_weights(sizes, "prompt")
    return {
        "prompts": prompts,
        "completions": completions,
        "tensors": {
            "advantages": torch.tensor(rng.normal(size=len(prompts)), dtype=torch.float32),
            "weights": None if weights is None else torch.tensor(weights, dtype=torch.float32),
            "old": old,
            "ref": old + 0.1 * torch.tensor(rng.normal(size=old.shape), dtype=torch.float32),
            "caps": None,
        },
    }


@pytest.mark.integration
@pytest.mark.parametrize("how", ["token_mean", "sequence_mean", "constant"])
def test_the_halves_are_the_steps_own_loss(sft_dir: Path, how: str) -> None:
    """The loss over a subset of rows is the step's loss restricted to them: the whole step's is
    policy_loss's own, the prompt halves' losses and gradients sum to the step's and the
    rollout halves' to their prompt half's (ragged groups, group weights, KL and entropy terms,
    the surrogate scaled)."""
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.lm.rollout import score_completions
    from frontier_rft.training.policy_loss import policy_loss

    model, _ = load_lm(sft_dir)
    model.train()
    config = _config(loss_aggregation=how, kl_coef=0.1, entropy_coef=0.02)
    sizes = [3, 2, 4]
    step = _synthetic_step(model, sizes, seed=1)
    t = step["tensors"]
    loss_of, _ = rows_loss(
        model, config, step["prompts"], step["completions"], t, 0.75, lambda: _Nothing()
    )
    scores = score_completions(
        model, step["prompts"], step["completions"], with_entropy=True, temperature=1.0
    )
    whole = policy_loss(scores, t["advantages"], t["old"], t["ref"], config, t["weights"], 0.75)
    params = list(model.parameters())
    full = torch.autograd.grad(whole.total, params)
    rows = np.arange(sum(sizes))
    assert float(loss_of(rows).detach()) == pytest.approx(float(whole.total.detach()), rel=1e-6)
    split = halves(sizes)
    rollouts = (split.rollout_1, split.rollout_2, split.prompt_a)  # A's rollout halves make A
    for first, second, union in ((split.prompt_a, split.prompt_b, rows), rollouts):
        a, b = loss_of(first), loss_of(second)
        want_loss = whole.total if union is rows else loss_of(union)
        assert float((a + b).detach()) == pytest.approx(float(want_loss.detach()), abs=1e-6)
        ga, gb = torch.autograd.grad(a, params), torch.autograd.grad(b, params)
        want = full if union is rows else torch.autograd.grad(want_loss, params)
        for x, y, w in zip(ga, gb, want, strict=True):
            torch.testing.assert_close(x + y, w, rtol=1e-4, atol=1e-6)


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_planted_gradients_through_the_meter_are_the_estimators() -> None:
    """A linear model whose per-row gradients are planted vectors x_r (loss c_r w . x_r): the
    meter's torch path (one pass a half, the complement from the step's `.grad`, or a pass of
    its own) reports exactly the estimator on those vectors, and leaves `.grad` as it was."""
    rng = np.random.default_rng(4)
    sizes = [2, 3, 3, 2]
    x = torch.tensor(rng.normal(size=(sum(sizes), 6)), dtype=torch.float64)
    coef = rng.uniform(0.5, 1.5, sum(sizes))
    model = torch.nn.Linear(6, 1, bias=False).double()
    w = model.weight

    def loss_of(rows: np.ndarray) -> Any:
        c = torch.tensor(coef[rows], dtype=torch.float64)
        return (c * (x[rows] @ w[0])).sum()

    loss_of(np.arange(sum(sizes))).backward()
    before = w.grad.clone()
    split = halves(sizes)
    xs = x.numpy()

    def mean(rows: np.ndarray) -> np.ndarray:
        return coef[rows] @ xs[rows] / coef[rows].sum()

    a, b = mean(split.prompt_a), mean(split.prompt_b)
    r1, r2 = mean(split.rollout_1), mean(split.rollout_2)
    want = halves_estimate(split, coef, a @ b, (a - b) @ (a - b), (r1 - r2) @ (r1 - r2))
    for full in ([w.grad], None):
        meter = NoiseMeter(1, 0.9)
        got = meter.measure(model, loss_of, coef, sizes, full)
        assert got["noise/grad_sq"] == pytest.approx(want.grad_sq, rel=1e-9, abs=1e-12)
        assert got["noise/inter"] == pytest.approx(want.inter, rel=1e-9, abs=1e-12)
        assert got["noise/intra"] == pytest.approx(want.intra, rel=1e-9, abs=1e-12)
        assert torch.equal(w.grad, before)


def test_planted_gradients_in_a_geometry_are_the_estimator_on_rescaled_vectors() -> None:
    """Weighting every inner product by w is measuring the vectors sqrt(w) x_r plainly: the
    meter's `noise/adam/...` terms equal the estimator on those, and its plain terms are the
    unweighted run's."""
    rng = np.random.default_rng(7)
    sizes = [3, 2, 4, 2]
    x = torch.tensor(rng.normal(size=(sum(sizes), 5)), dtype=torch.float64)
    coef = rng.uniform(0.5, 1.5, sum(sizes))
    w = rng.uniform(0.1, 3.0, 5)
    model = torch.nn.Linear(5, 1, bias=False).double()

    def loss_of(rows: np.ndarray) -> Any:
        c = torch.tensor(coef[rows], dtype=torch.float64)
        return (c * (x[rows] @ model.weight[0])).sum()

    split = halves(sizes)
    xs = x.numpy() * np.sqrt(w)

    def mean(rows: np.ndarray) -> np.ndarray:
        return coef[rows] @ xs[rows] / coef[rows].sum()

    a, b = mean(split.prompt_a), mean(split.prompt_b)
    r1, r2 = mean(split.rollout_1), mean(split.rollout_2)
    want = halves_estimate(split, coef, a @ b, (a - b) @ (a - b), (r1 - r2) @ (r1 - r2))
    geometry = [torch.tensor(w, dtype=torch.float64).reshape(1, 5)]
    got = NoiseMeter(1, 0.9).measure(model, loss_of, coef, sizes, None, geometry)
    plain = NoiseMeter(1, 0.9).measure(model, loss_of, coef, sizes, None)
    assert got["noise/adam/grad_sq"] == pytest.approx(want.grad_sq, rel=1e-9, abs=1e-12)
    assert got["noise/adam/inter"] == pytest.approx(want.inter, rel=1e-9, abs=1e-12)
    assert got["noise/adam/intra"] == pytest.approx(want.intra, rel=1e-9, abs=1e-12)
    assert got["noise/adam/b_simple_ema"] == pytest.approx(want.trace() / want.grad_sq)
    assert {k: v for k, v in got.items() if not k.startswith(("noise/adam/", "perf/"))} == {
        k: v for k, v in plain.items() if not k.startswith("perf/")
    }
    assert not any(k.startswith("noise/adam/") for k in plain)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adams_geometry_is_one_over_its_denominator_hand_computed(amsgrad: bool) -> None:
    """1 / (sqrt(v_hat) + eps) of the step Adam is about to take: None before its first step;
    after a gradient (3, -4, 0) and with the step's gradient (0, 0, 5) clipped by 1/2,
    v = beta2 (1 - beta2) (9, 16, 0) + (1 - beta2) (0, 0, 6.25) over 1 - beta2^2 (AMSGrad:
    the larger of that and its maximum, (1 - beta2) (9, 16, 0)); the third coordinate, first
    moved now, is bounded (about 1 / 2.5 / sqrt(1/2)), not 1 / eps; a parameter with no
    gradient and no moments weighs 0."""
    used = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    unused = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    opt = torch.optim.AdamW([used, unused], lr=0.1, betas=(0.9, 0.999), eps=1e-8, amsgrad=amsgrad)
    now = [torch.tensor([0.0, 0.0, 5.0], dtype=torch.float64), None]
    assert adam_geometry(opt, [used, unused], now) is None
    used.grad = torch.tensor([3.0, -4.0, 0.0], dtype=torch.float64)
    opt.step()
    got = adam_geometry(opt, [used, unused], now, clip=0.5)
    assert got is not None
    v = 0.999 * 0.001 * np.array([9.0, 16.0, 0.0]) + 0.001 * np.array([0.0, 0.0, 6.25])
    if amsgrad:
        v = np.maximum(v, 0.001 * np.array([9.0, 16.0, 0.0]))
    want = 1.0 / (np.sqrt(v / (1 - 0.999**2)) + 1e-8)
    torch.testing.assert_close(got[0], torch.tensor(want, dtype=torch.float64))
    assert float(got[0][2]) == pytest.approx(1 / (2.5 * math.sqrt(0.001 / (1 - 0.999**2))))
    assert torch.equal(got[1], torch.zeros(3, dtype=torch.float64))


def test_only_steps_of_two_groups_or_more_are_metered_on_schedule() -> None:
    meter = NoiseMeter(4, 0.9)
    assert [s for s in range(10) if meter.due(s, 8)] == [0, 4, 8]
    assert not meter.due(4, 1)  # a kept step of one group: no halves of prompts
    assert not NoiseMeter(0, 0.9).due(0, 8)


@pytest.mark.parametrize(
    "field, value, said",
    [("noise_every", -1, "noise_every must be an int >= 0"), ("noise_ema", 1.0, "noise_ema")],
)
def test_bad_meter_settings_are_refused_in_one_line(field: str, value: Any, said: str) -> None:
    with pytest.raises(ValueError, match=said) as info:
        TrainConfig(**{field: value})
    assert "\n" not in str(info.value)


@pytest.mark.integration
def test_a_metered_run_resumes_exactly(sft_dir: Path, tmp_path: Path) -> None:
    """The smoothed state crosses the checkpoint: 3 steps straight and 2 + resume + 1 log the
    same noise metrics at every step."""
    from frontier_rft.training.grpo import Trainer

    config = _config(steps=3)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    want = [straight.step() for _ in range(3)]
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = [first.step() for _ in range(2)]
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    got.append(resumed.step())
    for a, b in zip(want, got, strict=True):
        noise = sorted(k for k in a if k.startswith("noise/"))
        assert noise and {k: a[k] for k in noise} == {k: b[k] for k in noise}
