"""The reference trainer acting on the batch planner (training/batch_auto.py): `batch_plan:
fixed` trains what it trained before, `auto` grows the prompts a step where the planted
evidence and a linear cost say so (hand-computed), logs its plans, resumes exactly, and a bad
setting is refused by name in one line."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft.core.noise_scale import NoiseEma
from frontier_rft.step_cost.planner import NoiseTerms, linear_cost
from frontier_rft.training.batch_auto import (
    LR_CAP,
    MIN_METERED,
    BatchAuto,
    decide,
    lr_factor,
    read_terms,
)
from frontier_rft.training.config import TrainConfig

# B_noise(K=4) = (4 x 2 + 8) / 1 = 16 rows; t(N) = 16 + N / 4 seconds: T(N) / S_min =
# (1 + 16 / N)(16 + N / 4), least at N* = sqrt(16 x 16 / 0.25) = 32 rows = 8 prompts of 4.
TERMS = NoiseTerms(grad_sq=1.0, inter=2.0, intra=8.0, steps=3)
COST = linear_cost(16.0, 0.25, "datasheet", "a planted line")


def _t(rows: int) -> float:
    return (1 + 16 / rows) * (16 + rows / 4)


def test_auto_grows_the_prompts_to_the_hand_computed_optimum() -> None:
    plan = decide(TERMS, COST, prompts=2, rollouts=4, max_prompts=24)
    assert (plan.prompts, plan.rollouts, plan.rows) == (8, 4, 32)
    assert _t(32) == 36.0 and _t(8) == 54.0  # T at 8 x 4 rows, and at the current 2 x 4
    assert plan.seconds_ratio == pytest.approx(36.0 / 54.0)
    assert plan.b_noise == pytest.approx(16.0)


def test_the_prompts_stay_within_the_bound_and_never_shrink() -> None:
    # T falls up to 32 rows: a bound of 5 prompts takes all 5
    assert decide(TERMS, COST, prompts=2, rollouts=4, max_prompts=5).prompts == 5
    # from 12 prompts (48 rows, T 37.3 > 36) the plan would shrink to 8: growth only keeps 12
    assert _t(48) > _t(32)
    kept = decide(TERMS, COST, prompts=12, rollouts=4, max_prompts=24)
    assert (kept.prompts, kept.seconds_ratio) == (12, 1.0)
    # a bound below the current prompts keeps the current ones
    assert decide(TERMS, COST, prompts=12, rollouts=4, max_prompts=6).prompts == 12


def test_the_square_root_rule_is_capped_and_none_keeps_lr() -> None:
    assert lr_factor(8, 2, "sqrt") == 2.0
    assert lr_factor(6, 3, "sqrt") == pytest.approx(math.sqrt(2))
    assert lr_factor(3, 3, "sqrt") == 1.0
    assert lr_factor(1000, 2, "sqrt") == LR_CAP
    assert lr_factor(1000, 2, "none") == 1.0


def _ema(count: int, grad_sq: float, inter: float, intra: float) -> NoiseEma:
    """A NoiseEma holding `count` metered steps whose smoothed terms are the ones given."""
    ema = NoiseEma(0.9)
    scale = 1 - 0.9**count
    ema.load_state_dict(
        {"count": count, "grad_sq": grad_sq * scale, "inter": inter * scale, "intra": intra * scale}
    )
    return ema


def test_a_plan_reads_enough_metered_steps_that_define_a_noise_scale() -> None:
    assert MIN_METERED == 2
    assert read_terms(_ema(1, 1.0, 2.0, 8.0)) is None  # one metered step: no estimate yet
    assert read_terms(_ema(2, 1.0, -0.5, 8.0)) is None  # a negative variance: read again later
    assert read_terms(_ema(2, 0.0, 2.0, 8.0)) is None  # |G|^2 = 0: no noise scale
    terms = read_terms(_ema(2, 1.0, 2.0, 8.0))
    assert terms is not None and terms.steps == 2
    assert (terms.grad_sq, terms.inter, terms.intra) == pytest.approx((1.0, 2.0, 8.0))


class _Optimizer:
    def __init__(self) -> None:
        self.param_groups = [{"lr": 1e-3}]


def test_batch_auto_plans_once_per_metered_step_and_sets_the_step() -> None:
    config = TrainConfig(
        batch_plan="auto", batch_size=2, group_size=4, train_size=64, lr=1e-3, noise_every=1
    )
    auto = BatchAuto(config, COST)
    assert auto.after_step(_ema(1, 1.0, 2.0, 8.0)) == {}  # too few metered steps
    got = auto.after_step(_ema(2, 1.0, 2.0, 8.0))
    assert got["plan/prompts"] == 8 and got["plan/rows"] == 32
    assert got["plan/lr_factor"] == 2.0 and got["plan/metered_steps"] == 2
    assert got["plan/seconds_ratio"] == pytest.approx(36.0 / 54.0)
    assert auto.after_step(_ema(2, 1.0, 2.0, 8.0)) == {}  # no new metered step: no new plan
    opt = _Optimizer()
    plan = auto.apply(config.step_plan(), opt)
    assert (plan.shape().batch, plan.shape().group_size()) == (8, 4)
    assert opt.param_groups[0]["lr"] == 2e-3
    again = BatchAuto(config)
    again.load_state_dict(auto.state_dict())
    assert again.state_dict() == auto.state_dict() == {"prompts": 8, "lr_factor": 2.0, "metered": 2}
    fixed = BatchAuto(TrainConfig(batch_size=2, group_size=4, train_size=64))
    opt = _Optimizer()
    step = TrainConfig(batch_size=2, group_size=4, train_size=64).step_plan()
    assert fixed.after_step(_ema(2, 1.0, 2.0, 8.0)) == {}
    assert fixed.apply(step, opt) is step and opt.param_groups[0]["lr"] == 1e-3


def test_least_regret_starts_at_the_start_plan_logs_it_once_and_resumes() -> None:
    """t(N) = 1 + N / 4 at K = 4 over 1..4 prompts: the hand-computed start of
    test_start_plan.py is 2 prompts (worst 1.5x); lr by the rule from there, the start logged
    once (in the first row, plans or not), and not again after a resume."""
    config = TrainConfig(
        batch_plan="auto",
        batch_start="least_regret",
        batch_size=1,
        group_size=4,
        batch_max=4,
        train_size=64,
        lr=1e-3,
        noise_every=1,
        batch_lr_rule="sqrt",
    )
    auto = BatchAuto(config, linear_cost(1.0, 0.25, "datasheet", "a planted line"))
    assert (auto.prompts, auto.lr_factor) == (2, pytest.approx(math.sqrt(2)))
    opt = _Optimizer()
    plan = auto.apply(config.step_plan(), opt)
    assert plan.shape().batch == 2 and opt.param_groups[0]["lr"] == pytest.approx(1e-3 * 2**0.5)
    first = auto.after_step(_ema(1, 1.0, 2.0, 8.0))  # no plan yet: the start alone
    assert first == {"plan/start_prompts": 2.0, "plan/start_worst_ratio": pytest.approx(1.5)}
    assert auto.after_step(_ema(1, 1.0, 2.0, 8.0)) == {}
    again = BatchAuto(config, linear_cost(1.0, 0.25, "datasheet", "a planted line"))
    again.load_state_dict({"prompts": 3, "lr_factor": 1.5, "metered": 1})
    assert (again.prompts, again.lr_factor, again.after_step(_ema(1, 1.0, 2.0, 8.0))) == (
        3,
        1.5,
        {},
    )
    configured = BatchAuto(dataclasses.replace(config, batch_start="configured"), COST)
    assert (configured.prompts, configured.lr_factor, configured.start) == (1, 1.0, None)


@pytest.mark.parametrize(
    "changes, said",
    [
        ({"batch_plan": "sometimes"}, "batch_plan"),
        ({"batch_start": "middle"}, "batch_start"),
        ({"batch_lr_rule": "cube"}, "batch_lr_rule"),
        ({"plan_curve": "tpu"}, "plan_curve"),
        ({"plan_noise": "sgd"}, "plan_noise"),
        ({"batch_max": -1}, "batch_max must be an int >= 0"),
        ({"batch_plan": "auto", "batch_max": 4}, r"batch_max \(4\) must lie in \[batch_size=8"),
        ({"batch_plan": "auto", "batch_max": 600}, "train_size=512"),
        ({"batch_plan": "auto", "noise_every": 0}, "set noise_every > 0"),
        ({"batch_plan": "auto", "sampler": "dynamic_sampling"}, "sampler 'dynamic_sampling'"),
        ({"batch_plan": "auto", "rescue": 4}, "which rescue sizes"),
        ({"batch_plan": "auto", "hard_groups": 4}, "which hard_groups sizes"),
        ({"batch_plan": "auto", "fewer_steps": True}, "which fewer_steps sizes"),
    ],
)
def test_bad_batch_plan_settings_are_refused_by_name(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said) as info:
        TrainConfig(**changes)
    assert "\n" not in str(info.value)


def test_every_selector_takes_a_growing_count(selector_name: str) -> None:
    """Why auto refuses no selector: each takes its count per `select` call, and a run's count
    that grows between steps (3 prompts, then 6) gets valid, distinct ids every step."""
    from helpers import build, drive, world_pool

    pool = world_pool()
    sel = build(selector_name, pool, seed=1)
    picked = drive(sel, steps=3, batch=3) + drive(sel, steps=3, batch=6, start_step=3)
    assert [ids.shape[0] for ids in picked] == [3, 3, 3, 6, 6, 6]
    if not sel.allows_repeats:
        assert all(np.unique(ids).size == ids.size for ids in picked)


def test_good_batch_plan_settings_are_taken() -> None:
    config = TrainConfig(batch_plan="auto", batch_max=64, plan_curve="h200", batch_lr_rule="none")
    assert (config.batch_plan, config.batch_max) == ("auto", 64)
    assert TrainConfig(batch_plan="auto", batch_start="least_regret").batch_start == "least_regret"
    assert TrainConfig(batch_plan="auto").batch_max == 0  # the pool
    # with fixed, the auto-only bounds are not read
    assert TrainConfig(batch_max=4, noise_every=0, rescue=4).batch_plan == "fixed"


# ---------------------------------------------------------------- the trainer, tiny model
torch_needed = pytest.mark.integration


@pytest.fixture
def _torch_threads() -> Iterator[None]:
    """Trainer sets torch's (process-wide) thread count: give the next test its own back."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _config(**changes: Any) -> TrainConfig:
    from test_training_model import TEST_TRAIN

    fields: dict[str, Any] = {
        "batch_size": 3,
        "steps": 4,
        "eval_every": 0,
        "checkpoint_every": 1000,
        "threads": 1,
        "noise_every": 1,
    }
    return dataclasses.replace(TEST_TRAIN, **{**fields, **changes})


def _params(trainer: Any) -> list[Any]:
    return [p.detach().clone() for p in trainer.model.parameters()]


@torch_needed
@pytest.mark.usefixtures("_torch_threads")
def test_fixed_trains_bitwise_what_the_default_trains(sft_dir: Path, tmp_path: Path) -> None:
    """batch_plan fixed, its other settings anything, is the default: every parameter after
    every step bitwise equal, the same metrics, no plan/ key."""
    import torch

    from frontier_rft.training.grpo import Trainer

    runs = []
    for name, config in (
        ("default", _config(steps=2)),
        ("fixed", _config(steps=2, batch_plan="fixed", batch_max=5, plan_curve="h200")),
    ):
        trainer = Trainer(config, sft_dir, tmp_path / name, log=lambda _: None)
        runs.append([(trainer.step(), _params(trainer)) for _ in range(2)])
    for (m_a, p_a), (m_b, p_b) in zip(*runs, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(p_a, p_b, strict=True))
        same = [k for k in m_a if not k.startswith("perf/") and not k.endswith("_ms")]
        assert {k: m_a[k] for k in same} == {k: m_b[k] for k in same}
        assert not any(k.startswith("plan/") for k in m_a)


def _stable(row: dict[str, float]) -> dict[str, float]:
    """A metrics row without its timings (wall and CPU seconds differ run to run)."""
    return {k: v for k, v in row.items() if not k.startswith("perf/") and not k.endswith("_ms")}


@torch_needed
@pytest.mark.usefixtures("_torch_threads")
def test_auto_grows_the_step_and_resumes_exactly(sft_dir: Path, tmp_path: Path) -> None:
    """On the tiny model, the h200 curve (latency-bound at these rows: more rows nearly free)
    makes the first plan, after two metered steps, grow the prompts to batch_max; the next
    steps roll out that many at the raised lr. Killed after step 3 and resumed, the run logs
    the same metrics rows as the straight one."""
    from frontier_rft.training.grpo import Trainer

    config = _config(batch_plan="auto", plan_curve="h200", batch_max=6)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    want = [straight.step() for _ in range(4)]
    assert "plan/prompts" not in want[0]  # one metered step: no plan yet
    assert want[1]["plan/prompts"] == 6 and want[1]["plan/metered_steps"] == 2
    assert want[1]["plan/lr_factor"] == pytest.approx(math.sqrt(2))
    assert want[1]["plan/seconds_ratio"] < 1
    assert [w["train/prompts"] for w in want] == [3, 3, 6, 6]
    lr = straight.optimizer.param_groups[0]["lr"]
    assert lr == pytest.approx(config.lr * math.sqrt(2))
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = [first.step() for _ in range(3)]
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert resumed.plan.shape().batch == 6
    assert resumed.optimizer.param_groups[0]["lr"] == lr
    got.append(resumed.step())
    assert [_stable(a) for a in want] == [_stable(b) for b in got]


def test_plan_noise_names_the_smoothed_terms_a_plan_reads() -> None:
    from frontier_rft.training.noise_meter import NoiseMeter

    meter = NoiseMeter(1, 0.9)
    assert meter.smoothed("plain") is meter.ema and meter.smoothed("adam") is meter.adam_ema
    assert meter.adam_ema.prefix == "noise/adam/" and meter.ema.prefix == "noise/"


@torch_needed
@pytest.mark.usefixtures("_torch_threads")
def test_plan_noise_adam_hands_the_planner_adams_terms(sft_dir: Path, tmp_path: Path) -> None:
    """plan_noise adam: after every step the trainer hands the planner the meter's terms in
    Adam's geometry (plain: the plain ones), which the planner reads as any terms
    (`BatchAuto.after_step`, tested above on planted ones)."""
    from frontier_rft.training.grpo import Trainer

    for geometry in ("adam", "plain"):
        config = _config(batch_plan="auto", plan_curve="h200", batch_max=6, plan_noise=geometry)
        trainer = Trainer(config, sft_dir, tmp_path / geometry, log=lambda _: None)
        asked: list[str] = []
        smoothed = trainer.noise.smoothed

        def spy(name: str, smoothed: Any = smoothed, asked: list[str] = asked) -> Any:
            asked.append(name)
            return smoothed(name)

        trainer.noise.smoothed = spy  # type: ignore[method-assign]
        rows = [trainer.step() for _ in range(2)]
        assert asked == [geometry, geometry]
        assert "noise/adam/intra" not in rows[0] and "noise/adam/intra" in rows[1]


@torch_needed
@pytest.mark.usefixtures("_torch_threads")
def test_least_regret_starts_the_trainer_there_and_resumes_exactly(
    sft_dir: Path, tmp_path: Path
) -> None:
    """On the tiny model with the h200 curve, batch_start least_regret trains the start plan's
    prompts from the first step (logged in that step's row), at the rule's lr; killed after
    step 2 and resumed, the run logs the same rows as the straight one."""
    from frontier_rft.step_cost.curve import load_curve
    from frontier_rft.step_cost.planner import curve_cost
    from frontier_rft.step_cost.start_plan import start_plan
    from frontier_rft.training.grpo import Trainer

    config = _config(
        batch_plan="auto", batch_start="least_regret", plan_curve="h200", batch_max=6, steps=3
    )
    start = start_plan(
        curve_cost(load_curve("h200"), config.max_new_tokens),
        rollouts=config.group_size,
        min_prompts=3,
        max_prompts=6,
    )
    assert start.prompts > 3  # latency-bound: more rows than the configured 3
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    want = [straight.step() for _ in range(3)]
    assert want[0]["plan/start_prompts"] == start.prompts
    assert want[0]["train/prompts"] == start.prompts
    assert not any("plan/start_prompts" in w for w in want[1:])
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = [first.step() for _ in range(2)]
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    got.append(resumed.step())
    assert [_stable(a) for a in want] == [_stable(b) for b in got]
