"""The one TRL step driver (integrations/trl/step_driver.py): every step sampler kind
FrontierConfig turns on runs through it, a kind TRL did not drive before (PassThrough) runs
through it unchanged, and the kinds it does not run are refused in one line. The real
GRPOTrainer on the tiny local model (tiny_lm.py), on CPU.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import numpy as np
import torch
from test_trl_fewer import N_GEN, PROMPTS, args, dataset, trl_advantages
from test_trl_fewer import Keyed as Scored
from tiny_lm import char_tokenizer, tiny_llama

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.driver_kinds import KINDS, UNDRIVEN, VALUES, driver_kind
from frontier_rft.integrations.trl.step_driver import GroupRows, StepDriver
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.sampler_flags import build_sampler
from frontier_rft.sampling.spec import KINDS as SAMPLER_KINDS
from frontier_rft.sampling.step import StepSamples, check_rollout, fresh_batch, roll_unit_round


class Keyed(Scored):
    """test_trl_fewer's reward by the prompt (solved, unsolved or mixed); also records the
    task ids of each call it scores."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[int]] = []

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        self.calls.append([int(t) for t in task_id])
        return super().__call__(completions, task_id, **kwargs)


def trainer(out: Path, frontier: FrontierConfig, reward: Keyed, **kw: Any) -> Any:
    """test_trl_fewer's trainer settings and data, for 3 steps unless `kw` says otherwise."""
    tok = char_tokenizer()
    return FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[reward],
        args=args(out, **{"max_steps": 3, **kw}),
        train_dataset=dataset(),
        processing_class=tok,
        frontier=frontier,
    )


def recorded(
    driver: StepDriver,
) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, Any]], list[tuple[float, float]]]:
    """Lists the driver fills as it runs: TRL's output of each call it makes, each batch it
    lays out, and the (loss_factor, pg_scale) of that batch."""
    parent, step = driver._parent, driver.step
    calls: list[dict[str, torch.Tensor]] = []
    laid_out: list[dict[str, Any]] = []
    factors: list[tuple[float, float]] = []

    def recorded_parent(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = parent(inputs)
        calls.append({k: v.clone() for k, v in out.items() if isinstance(v, torch.Tensor)})
        return out

    def recorded_step() -> dict[str, Any]:
        laid_out.append(step())
        factors.append((driver.loss_factor, driver.pg_scale))
        return laid_out[-1]

    driver._parent = recorded_parent
    driver.step = recorded_step  # type: ignore[method-assign]
    return calls, laid_out, factors


def test_the_driver_rows_are_step_sampler_kinds_with_what_the_driver_reads() -> None:
    """A row of KINDS is a step sampler kind (what the driver does differently for it), a
    row of UNDRIVEN one it does not run (why); every row reports only values it has."""
    assert set(KINDS) <= set(SAMPLER_KINDS) and set(UNDRIVEN) <= set(SAMPLER_KINDS) - set(KINDS)
    assert all(driver_kind(name) is row for name, row in KINDS.items())
    assert all(driver_kind(name) is None for name in (*UNDRIVEN, ""))
    generic = driver_kind("new_kind")
    assert generic is not None and generic.namespace == "new_kind"
    assert generic.counters["rollouts"] == "new_kind_rollouts"
    for kind in (*KINDS.values(), generic):
        assert set(kind.metrics.values()) <= set(VALUES)
        assert {"rollouts", "filler_rollouts", "trained_groups", "empty_steps"} <= set(
            kind.counters
        )
        assert kind.on_empty in ("stop", "skip") and (kind.on_empty == "skip") != bool(
            kind.stop_fix
        )


@pytest.mark.parametrize(
    "settings",
    [
        {"dynamic_sampling": "fixed"},
        {"dynamic_sampling": "adaptive"},
        {"dynamic_sampling": "greso"},
        {"rollouts": "kept"},
        {"rollouts": "full", "screen": 2},
        {"rollouts": "kept", "screen": 2, "loss_scale": "kept"},
    ],
)
def test_every_kind_trl_turns_on_runs_through_the_one_driver(
    tmp_path: Path, settings: dict[str, Any]
) -> None:
    """Each step sampler FrontierConfig turns on is run by one StepDriver, whose counters and
    metrics are its kind's row."""
    reward = Keyed()
    t = trainer(tmp_path, FrontierConfig(selector="uniform", **settings), reward, max_steps=2)
    driver = t.frontier_driver
    assert type(driver) is StepDriver and driver.kind is KINDS[driver.sampler.kind]
    t.train()
    counters = t.frontier_run.counters
    names = driver.kind.counters
    assert counters["generations"] == 2
    assert counters[names["rollouts"]] == sum(len(c) for c in reward.calls) > 0
    assert counters[names["trained_groups"]] > 0
    metrics = t.frontier_metrics()
    prefix = driver.kind.namespace
    assert {f"{prefix}/{key}" for key in driver.kind.metrics} <= set(metrics)
    assert metrics[f"{prefix}/rollouts"] == counters[names["rollouts"]]


def test_passthrough_a_kind_trl_never_drove_runs_through_the_driver_as_trls_own_step(
    tmp_path: Path,
) -> None:
    """Plain GRPO's step (PassThrough: the selector's B prompts, every group trained), run
    through the one driver instead of TRL's data loader: the prompts TRL's own loop is given
    by the same selector, and each step's batch exactly the one TRL's own method returns
    for them (every row trained, nothing rescaled)."""
    own_reward, driven_reward = Keyed(), Keyed()
    own = trainer(tmp_path / "own", FrontierConfig(selector="uniform"), own_reward)
    own.train()
    driven = trainer(tmp_path / "driven", FrontierConfig(selector="uniform"), driven_reward)
    assert driven.frontier_driver is None
    driver = driven._frontier_drive(build_sampler(PassThrough.kind, {}, driven.frontier_selector))
    assert driven.frontier_driver is driver and driver.kind is KINDS[PassThrough.kind]
    trl_out, laid_out, factors = recorded(driver)
    driven.train()
    # the selector's B prompts a step (those TRL's own loop got), n completions each
    assert len(driven_reward.calls) == 3 and driven_reward.calls == own_reward.calls
    for call in driven_reward.calls:
        assert len(call) == PROMPTS * N_GEN and len(set(call)) == PROMPTS
    # one TRL call a step, its batch handed to TRL's loss as TRL returned it
    assert len(trl_out) == len(laid_out) == 3 and factors == [(1.0, 1.0)] * 3
    for trl, out in zip(trl_out, laid_out, strict=True):
        assert set(trl) == set(out)
        for key, value in trl.items():
            torch.testing.assert_close(out[key], value, msg=key)
    counters = driven.frontier_run.counters
    assert counters["generations"] == 3 and counters["passthrough_rollouts"] == 3 * PROMPTS * N_GEN
    assert counters["passthrough_trained_groups"] == 3 * PROMPTS
    assert counters["passthrough_empty_steps"] == 0 and counters["passthrough_filler_rollouts"] == 0
    metrics = driven.frontier_metrics()
    assert metrics["passthrough/rows_step"] == PROMPTS * N_GEN
    assert metrics["passthrough/rollouts_step"] == PROMPTS * N_GEN
    logged = [h for h in driven.state.log_history if "loss" in h]
    assert len(logged) == 3 and all("curriculum/passthrough/rollouts_step" in h for h in logged)


class HalfTrained(PassThrough):
    """A kind of the test's own: plain GRPO's round, the first half of its groups trained,
    the loss normalised by all B (as fewer rollouts' `loss_scale: batch`)."""

    kind: ClassVar[str] = "half_trained"

    def sample(self, step: int, batch_size: int, group_size: int, rollout: Any) -> StepSamples:
        whole = super().sample(step, batch_size, group_size, rollout)
        picks = [(0, g) for g in range(batch_size // 2)]
        train = fresh_batch(whole.rounds, picks, step, 0)
        return StepSamples(step, whole.rounds, train, nominal_groups=batch_size)


def test_a_new_kind_runs_on_trl_with_its_module_alone(tmp_path: Path) -> None:
    """Adding a step sampler kind to TRL is its module: with no row of its own the driver
    gives it the generic one (`driver_kind`), generates its rounds, trains its groups only
    and scales the policy gradient as its StepSamples say, with counters and metrics under
    its own name."""
    assert HalfTrained.kind not in KINDS
    reward = Keyed()
    t = trainer(tmp_path, FrontierConfig(selector="uniform"), reward, max_steps=2)
    driver = t._frontier_drive(HalfTrained(t.frontier_selector))
    rows: list[int] = []
    step = driver.step

    def counted() -> dict[str, Any]:
        out = step()
        rows.append(int((out["completion_mask"].sum(dim=1) > 0).sum()))
        assert driver.pg_scale == 0.5 and driver.loss_factor == 1.0  # dapo: per token
        return out

    driver.step = counted  # type: ignore[method-assign]
    t.train()
    assert [len(call) for call in reward.calls] == [PROMPTS * N_GEN] * 2
    assert rows == [PROMPTS // 2 * N_GEN] * 2  # the trained half's rows only
    metrics = t.frontier_metrics()
    half = HalfTrained.kind
    assert metrics == {
        **metrics,
        f"{half}/groups_trained": PROMPTS // 2,
        f"{half}/loss_scale": 0.5,
    }
    rollouts = t.frontier_run.counters[f"{half}_rollouts"]
    assert metrics[f"{half}/rollouts"] == rollouts == 2 * PROMPTS * N_GEN
    logged = [h for h in t.state.log_history if "loss" in h]
    assert all(f"curriculum/{half}/groups_trained" in h for h in logged) and len(logged) == 2


class Halves(PassThrough):
    """A kind of the test's own that joins groups across rounds: B prompts rolled out with
    n / 2 completions each, then the same prompts in reverse order with the other n / 2, and
    group g trained as round 0's part g joined to round 1's part B - 1 - g."""

    kind: ClassVar[str] = "halves"

    def __init__(self, *a: Any) -> None:
        super().__init__(*a)
        self.samples: list[StepSamples] = []

    def sample(self, step: int, batch_size: int, group_size: int, rollout: Any) -> StepSamples:
        check_rollout(rollout)
        ids = self.inner.select(batch_size)
        half = np.full(batch_size, group_size // 2, dtype=np.int64)
        rounds = tuple(
            roll_unit_round(self.inner, step, order, half, rollout, 0.0, "pass rates")
            for order in (ids, ids[::-1].copy())
        )
        self.inner.flush()
        last = batch_size - 1
        tails = {(0, g): ((1, last - g),) for g in range(batch_size)}
        picks = [(0, g) for g in range(batch_size)]
        self.samples.append(StepSamples(step, rounds, fresh_batch(rounds, picks, step, 0, tails)))
        return self.samples[-1]


def test_a_joined_group_is_laid_out_whole_from_its_parts_payloads(tmp_path: Path) -> None:
    """The sampler hands back each trained group's parts as the handles the driver gave it
    (GroupRows, opaque to sampling/): the batch holds exactly the rows they name, round 0's
    part then round 1's (rolled out in the other order), and TRL's advantages over the whole
    joined group of n, not over each part."""
    reward = Keyed()
    t = trainer(tmp_path, FrontierConfig(selector="uniform"), reward, max_steps=2)
    sampler = Halves(t.frontier_selector)
    calls, laid_out, _ = recorded(t._frontier_drive(sampler))
    t.train()
    half = N_GEN // 2
    assert [len(c) for c in reward.calls] == [PROMPTS * half] * 4  # two rounds a step
    assert len(laid_out) == len(sampler.samples) == 2
    mixed = 0
    for s, (samples, out) in enumerate(zip(sampler.samples, laid_out, strict=True)):
        train, trl = samples.train, calls[2 * s : 2 * s + 2]
        assert out["advantages"].shape[0] == PROMPTS * N_GEN  # the trained rows only
        width = int(out["completion_ids"].shape[1])
        for g in range(train.num_groups):
            first, second = train.payload_parts(g)
            assert isinstance(first, GroupRows) and isinstance(second, GroupRows)
            assert (first.round, first.start) == (0, g * half)
            assert (second.round, second.start) == (1, (PROMPTS - 1 - g) * half)
            named = first.rows() + second.rows()
            for i, (r, row) in enumerate(named):  # each laid-out row is the one named
                at = g * N_GEN + i
                mask = trl[r]["completion_mask"][row]
                assert int(mask[width:].sum()) == 0
                assert torch.equal(out["completion_mask"][at], mask[:width])
                assert torch.equal(out["completion_ids"][at], trl[r]["completion_ids"][row][:width])
            rewards = np.concatenate([first.rewards, second.rewards])
            assert rewards.tolist() == train.rewards[g * N_GEN : (g + 1) * N_GEN].tolist()
            whole = trl_advantages(rewards, N_GEN)
            got = out["advantages"][g * N_GEN : (g + 1) * N_GEN].numpy()
            np.testing.assert_allclose(got, whole, atol=1e-5)
            if rewards.tolist() == [1.0, 0.0, 1.0, 0.0]:  # a mixed task: whole != per part
                mixed += 1
                per_part = trl_advantages(rewards, half)
                assert not np.allclose(got, per_part, atol=1e-3)
    assert mixed > 0


@pytest.mark.parametrize("kind", sorted(UNDRIVEN))
def test_a_kind_the_driver_does_not_run_is_one_line_and_changes_nothing(
    tmp_path: Path, kind: str
) -> None:
    t = trainer(tmp_path, FrontierConfig(selector="uniform"), Keyed())
    counters, callbacks = dict(t.frontier_run.counters), list(t.callback_handler.callbacks)
    with pytest.raises(ValueError) as info:
        t._frontier_drive(build_sampler(kind, {}, t.frontier_selector))
    text = str(info.value)
    assert f"not {kind!r}: {UNDRIVEN[kind]}" in text and "\n" not in text
    assert t.frontier_driver is None and t.frontier_run.counters == counters
    assert t.callback_handler.callbacks == callbacks


def test_the_fewer_step_gives_its_own_advice_when_it_cannot_regroup(tmp_path: Path) -> None:
    """An output the driver cannot regroup names the sampler that is on and how to turn it
    off (the fewer-rollouts step used to advise `dynamic_sampling: off`, which is off)."""
    t = trainer(tmp_path, FrontierConfig(selector="uniform", rollouts="kept"), Keyed())
    parent = t.frontier_driver._parent

    def newer_trl(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = parent(inputs)
        out["pixel_values"] = torch.zeros(len(inputs), 3)
        return out

    t.frontier_driver._parent = newer_trl
    with pytest.raises(ValueError) as info:
        t.train()
    text = str(info.value)
    assert "returned pixel_values, which fewer rollouts cannot regroup" in text
    assert text.endswith("set rollouts: full and screen: 0") and "dynamic_sampling" not in text


def test_the_driver_reaches_no_private_trainer_attribute() -> None:
    """step_driver.py uses TRL's public trainer attributes and the AdapterSeam the trainer
    hands over, never the trainer's private ones (`trainer._...`)."""
    import frontier_rft.integrations.trl.step_driver as module

    reach = re.compile(r"\b(?:tr|trainer|self\.trainer)\._\w+")
    assert reach.findall(Path(module.__file__).read_text()) == []


def test_the_docs_name_the_one_driver() -> None:
    """The TRL page and the architecture page name the one driver, not the two it replaced."""
    repo = Path(__file__).resolve().parents[2]
    trl_page = (repo / "docs" / "integrations" / "trl.md").read_text()
    architecture = (repo / "docs" / "architecture.md").read_text()
    assert "`StepDriver._lay_out`" in trl_page and "step_driver.filler_groups" in trl_page
    assert "`step_driver`" in architecture
    for page in (trl_page, architecture):
        assert "DynamicGeneration" not in page and "FewerGeneration" not in page
