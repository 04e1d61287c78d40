"""DAPO dynamic sampling inside FrontierGRPOTrainer: the real GRPOTrainer on the tiny local
model (tiny_lm.py), on CPU.

The stand-in reward makes exactly half the groups of every generation round zero-variance:
the group at an even position of the reward call's batch scores 1 on every completion, the
one at an odd position 1 on its first completion only (so it is mixed, whatever the text).
With one process a reward call's batch is one round, groups laid out one after the other, so
every round's zero-variance share is exactly 1/2 (for an even number of prompts).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import torch
from datasets import Dataset
from tiny_lm import char_tokenizer, task_dataset, tiny_grpo_args, tiny_llama
from trl import GRPOConfig
from two_ranks import leave_process_group

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.state import state_digest
from frontier_rft.integrations.trl.step_driver import filler_groups

N = 24
N_GEN = 4
PROMPTS = 4  # distinct prompts per generation batch (B)


class HalfConstant:
    """Even-position groups all 1, odd-position groups mixed (1 on their first completion)."""

    __name__ = "half_constant"

    def __init__(self, n: int = N_GEN):
        self.n = n
        self.calls: list[tuple[list[int], list[float]]] = []

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        out = [
            1.0 if (i // self.n) % 2 == 0 else float(i % self.n == 0) for i in range(len(task_id))
        ]
        self.calls.append(([int(t) for t in task_id], out))
        return out

    @property
    def rollouts(self) -> int:
        return sum(len(c[1]) for c in self.calls)


class SecondRoundSolved(HalfConstant):
    """HalfConstant on a step's first round, every group all 1 on its second."""

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        out = super().__call__(completions, task_id, **kwargs)
        return out if len(self.calls) % 2 else [1.0] * len(out)


def solved(completions: list[Any], **kwargs: Any) -> list[float]:
    return [1.0] * len(completions)


def dataset() -> Dataset:
    return task_dataset(range(N))


def args(out: Path, *, steps: int, n: int = N_GEN, prompts: int = PROMPTS, **kw: Any) -> GRPOConfig:
    return tiny_grpo_args(out, prompts=prompts, n=n, max_steps=steps, **kw)


class Recording(FrontierGRPOTrainer):
    """Records what reaches TRL's loss: every micro-batch's advantages and completion mask."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.loss_inputs: list[dict[str, torch.Tensor]] = []
        self.batches: list[dict[str, torch.Tensor]] = []  # before TRL shuffles and splits
        self.samples: list[Any] = []
        if self.frontier_driver is not None:
            wrapper = self.frontier_driver.sampler
            sample = wrapper.sample

            def spy(*args: Any, **kwargs: Any) -> Any:
                self.samples.append(sample(*args, **kwargs))
                return self.samples[-1]

            wrapper.sample = spy  # type: ignore[method-assign]

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.batches.append({k: v.detach().clone() for k, v in out.items()})
        return out

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self.loss_inputs.append(
            {k: inputs[k].detach().clone() for k in ("advantages", "completion_mask")}
        )
        return super()._compute_loss(model, inputs)


def trainer(
    out: Path,
    frontier: FrontierConfig | None,
    *,
    steps: int,
    reward: Any = None,
    cls: type = Recording,
    **kw: Any,
) -> Any:
    tok = char_tokenizer()
    return cls(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[reward if reward is not None else HalfConstant(kw.get("n", N_GEN))],
        args=args(out, steps=steps, **kw),
        train_dataset=dataset(),
        processing_class=tok,
        frontier=frontier,
    )


def trl_advantages(rewards: np.ndarray, n: int) -> np.ndarray:
    """TRL's GRPO advantages of groups laid out one after the other (scale_rewards: group)."""
    grid = rewards.reshape(-1, n).astype(np.float32)
    std = grid.std(axis=1, ddof=1, keepdims=True)
    return ((grid - grid.mean(axis=1, keepdims=True)) / (std + 1e-4)).ravel()


def dapo_logs(t: Any) -> list[dict[str, float]]:
    return [h for h in t.state.log_history if "loss" in h]


# ---------------------------------------------------------------------- the filter
@pytest.fixture(scope="module")
def adaptive(tmp_path_factory: pytest.TempPathFactory) -> Any:
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="adaptive")
    t = trainer(tmp_path_factory.mktemp("adaptive"), frontier, steps=6)
    t.train()
    return t


def test_zero_variance_groups_never_reach_the_loss_and_the_batch_is_full(adaptive: Any) -> None:
    n, rows = N_GEN, PROMPTS * N_GEN
    assert len(adaptive.batches) == 6 and len(adaptive.loss_inputs) == 6
    for inputs in adaptive.loss_inputs:
        kept = inputs["completion_mask"].sum(dim=1) > 0
        assert inputs["advantages"].shape[0] == rows and bool(kept.all())  # full, no padding
        assert bool((inputs["advantages"][kept] != 0).all())  # a mixed group's rows only
    for batch, samples in zip(adaptive.batches, adaptive.samples, strict=True):
        train = samples.train
        assert train.num_groups == PROMPTS and train.deficit == 0
        grid = train.rewards.reshape(-1, n)
        assert bool((grid.max(axis=1) > grid.min(axis=1)).all())  # 0 zero-variance groups
        # The rows TRL trains on are those groups' rows, in order, with TRL's own advantages.
        np.testing.assert_allclose(
            batch["advantages"].numpy(), trl_advantages(train.rewards, n), atol=1e-5
        )


def test_without_the_filter_zero_variance_groups_do_reach_the_loss(tmp_path: Path) -> None:
    t = trainer(tmp_path, FrontierConfig(selector="uniform"), steps=2)
    t.train()
    zero = [
        int(((i["advantages"] == 0) & (i["completion_mask"].sum(dim=1) > 0)).sum())
        for i in t.loss_inputs
    ]
    assert sum(zero) == 2 * (PROMPTS // 2) * N_GEN  # half of every batch: the control


def test_rollouts_per_trained_group_follow_the_adaptive_sizing(adaptive: Any) -> None:
    """z = 1/2 in every round: step 0 is sized before any z (fixed 3x: 12 prompts), later
    steps ceil(B / (1 - z) * 1.25) = 10 prompts, all filled in one round."""
    wrapper, n = adaptive.frontier_driver.sampler, N_GEN
    logs = dapo_logs(adaptive)
    measured = [h["curriculum/dapo/rollouts_per_trained_group"] for h in logs]
    assert [h["curriculum/dapo/filtered_share"] for h in logs] == [0.5] * 6
    assert [h["curriculum/dapo/rounds"] for h in logs] == [1.0] * 6
    first = math.ceil(PROMPTS * wrapper.config.oversample)  # no z measured yet
    predicted = [first * n / PROMPTS] + [
        wrapper.num_candidates(PROMPTS, 0.5) * n / PROMPTS for _ in range(5)
    ]
    assert predicted == [3 * n] + [2.5 * n] * 5  # the sizing rule: 1.25 / (1 - z) per slot
    for got, want in zip(measured, predicted, strict=True):
        assert abs(got / want - 1) <= 0.10, (measured, predicted)
    assert measured == predicted  # exactly, here
    print(f"adaptive: rollouts per trained group {measured}")


def test_fixed_sizing_spends_three_times_the_slots(tmp_path: Path) -> None:
    t = trainer(tmp_path, FrontierConfig(selector="uniform", dynamic_sampling="fixed"), steps=3)
    t.train()
    measured = [h["curriculum/dapo/rollouts_per_trained_group"] for h in dapo_logs(t)]
    assert measured == [3.0 * N_GEN] * 3  # 12 prompts a step, 6 of them mixed: one round
    print(f"fixed: rollouts per trained group {measured}")


def test_rollouts_spent_are_logged_and_equal_what_was_generated(adaptive: Any) -> None:
    reward = adaptive.reward_funcs[0].__wrapped__  # the tap wraps the user's function
    generated = reward.rollouts  # every completion a reward function scored
    metrics = adaptive.frontier_metrics()
    assert generated == (12 + 5 * 10) * N_GEN
    assert metrics["dapo/rollouts"] == generated
    assert (
        sum(h["curriculum/dapo/rollouts_per_trained_group"] * PROMPTS for h in dapo_logs(adaptive))
        == generated
    )
    assert metrics["feedback/rollouts"] == generated  # the selector saw every rollout once
    assert metrics["trl/rollouts_delivered"] == generated
    assert metrics["dapo/trained_groups"] == 6 * PROMPTS
    lines = (Path(adaptive.args.output_dir) / "frontier_metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["curriculum/dapo/rollouts"] == generated


# ---------------------------------------------------------------------- resume
def test_resume_continues_identically(tmp_path: Path) -> None:
    frontier = FrontierConfig(dynamic_sampling="adaptive")  # greso, the default selector
    full = trainer(tmp_path / "full", frontier, steps=6, save_strategy="steps", save_steps=3)
    full.train()
    ckpt = tmp_path / "full" / "checkpoint-3"
    assert (ckpt / "frontier_step_sampler.npz").is_file()
    resumed = trainer(tmp_path / "resumed", frontier, steps=6)
    resumed.train(resume_from_checkpoint=str(ckpt))
    digest = [state_digest(t.frontier_driver.sampler.state_dict()) for t in (full, resumed)]
    assert digest[0] == digest[1]  # the wrapper and the selector inside, bit for bit
    assert full.frontier_metrics()["dapo/rollouts"] == resumed.frontier_metrics()["dapo/rollouts"]
    keys = ("curriculum/dapo/rollouts_per_trained_group", "curriculum/dapo/filtered_share")
    tail = [[{k: h[k] for k in keys} for h in dapo_logs(t)][-3:] for t in (full, resumed)]
    assert tail[0] == tail[1]
    for a, b in zip(full.batches[3:], resumed.batches, strict=True):
        torch.testing.assert_close(a["completion_ids"], b["completion_ids"])


def test_a_checkpoint_and_a_trainer_that_disagree_are_refused(tmp_path: Path) -> None:
    on = FrontierConfig(selector="uniform", dynamic_sampling="fixed")
    trainer(tmp_path, on, steps=1, save_strategy="steps", save_steps=1).train()
    ckpt = tmp_path / "checkpoint-1"
    off = trainer(tmp_path / "b", FrontierConfig(selector="uniform"), steps=2)
    with pytest.raises(ValueError, match="dynamic_sampling sampler, but this run uses passthrough"):
        off.load_frontier_state(ckpt)
    other = FrontierConfig(selector="uniform", dynamic_sampling="fixed",
                           dynamic_sampling_config={"max_rounds": 3})  # fmt: skip
    with pytest.raises(ValueError, match="same dynamic_sampling, dynamic_sampling_config and"):
        trainer(tmp_path / "c", other, steps=2).load_frontier_state(ckpt)


# ---------------------------------------------------------------------- no signal, short batches
def test_an_all_solved_pool_stops_with_a_message_not_a_hang(tmp_path: Path) -> None:
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="fixed",
                              dynamic_sampling_config={"max_rounds": 3})  # fmt: skip
    t = trainer(tmp_path, frontier, steps=5, reward=solved)
    before = [p.detach().clone() for p in t.model.parameters()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.train()  # returns: no exception, no hang
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any("no prompt with mixed rewards in 3 rounds" in m for m in messages), messages
    assert t.frontier_stop_reason is not None and "training stops" in t.frontier_stop_reason
    assert t.state.global_step == 1  # the first step found nothing; training ended there
    assert t.frontier_metrics()["dapo/no_signal_steps"] == 1
    for a, b in zip(before, t.model.parameters(), strict=True):
        assert torch.equal(a, b.detach())  # the empty step changed no weight (no momentum)
    inputs = t.loss_inputs[0]
    assert int(inputs["completion_mask"].sum()) == 0 and bool((inputs["advantages"] == 0).all())


def test_greso_recipe_short_batches_train_only_the_groups_found(tmp_path: Path) -> None:
    """GRESO's round rule may stop with fewer mixed groups than slots: the batch TRL trains
    on is the groups found, nothing for the missing ones (TRL's schedule is unchanged)."""
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="greso")
    t = trainer(tmp_path, frontier, steps=4, reward=SecondRoundSolved())
    t.train()
    # Round 1: 1.5 B = 6 prompts, 3 mixed; round 2 is sized for the last slot (2 prompts,
    # GRESO's floor) and is the last; both its groups are constant: one slot stays empty.
    deficits = [s.train.deficit for s in t.samples]
    assert deficits == [1, 1, 1, 1] and [len(s.rounds) for s in t.samples] == [2] * 4
    for batch, d in zip(t.batches, deficits, strict=True):
        kept = batch["completion_mask"].sum(dim=1) > 0
        assert batch["advantages"].shape[0] == (PROMPTS - d) * N_GEN and bool(kept.all())
        assert int(batch["num_items_in_batch"]) == int(batch["completion_mask"].sum())
    assert t.state.global_step == 4
    assert all(np.isfinite(h["loss"]) for h in dapo_logs(t))


@pytest.mark.parametrize("n", [3, 5])
def test_any_num_generations(tmp_path: Path, n: int) -> None:
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="adaptive")
    t = trainer(tmp_path, frontier, steps=2, n=n, reward=HalfConstant(n))
    t.train()
    for batch, samples in zip(t.batches, t.samples, strict=True):
        np.testing.assert_allclose(
            batch["advantages"].numpy(), trl_advantages(samples.train.rewards, n), atol=1e-5
        )


def test_a_generation_reused_over_accumulation_and_iterations(tmp_path: Path) -> None:
    """gradient_accumulation_steps 2 (so steps_per_generation 2) and num_iterations 2: one
    generation (one dynamic sampling step) feeds 4 micro-batches; all carry kept rows only."""
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="adaptive")
    t = trainer(tmp_path, frontier, steps=2, gradient_accumulation_steps=2, num_iterations=2)
    t.train()
    assert len(t.samples) == 1 and len(t.loss_inputs) == 4
    assert t.samples[0].train.num_groups == 2 * PROMPTS  # a generation feeds 2 micro-batches
    assert "old_per_token_logps" in t.batches[0]  # TRL needs them when it reuses a generation
    for inputs in t.loss_inputs:
        kept = inputs["completion_mask"].sum(dim=1) > 0
        assert inputs["advantages"].shape[0] == PROMPTS * N_GEN and bool(kept.all())
        assert bool((inputs["advantages"] != 0).all())
    assert t.frontier_metrics()["trl/generations"] == 1


class LossRecording(Recording):
    """Also records each loss beside TRL's own loss of the trained rows alone (fillers cut)."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.losses: list[tuple[float, float, int]] = []

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        from trl.trainer.grpo_trainer import GRPOTrainer

        loss = super()._compute_loss(model, inputs)
        keep = inputs["completion_mask"].sum(dim=1) > 0
        if bool(keep.any()):
            alone = {k: v[keep] if k != "num_items_in_batch" else v for k, v in inputs.items()}
            alone["num_items_in_batch"] = inputs["completion_mask"][keep].sum()
            with torch.no_grad():
                trained = GRPOTrainer._compute_loss(self, model, alone)
            self.losses.append((float(loss.detach()), float(trained), int(keep.sum())))
        return loss


@pytest.mark.parametrize(
    ("loss_type", "entropy_coef"),
    [("grpo", 0.0), ("dr_grpo", 0.0), ("dapo", 0.0), ("grpo", 0.5)],
)
def test_a_short_step_trains_the_mean_over_its_groups_for_each_loss_type(
    tmp_path: Path, loss_type: str, entropy_coef: float
) -> None:
    """GRESO's rounds leave one of 4 slots empty every step (as in the test above): the loss
    is TRL's loss over the 3 trained groups alone, whatever the loss_type (a per-row type
    would otherwise count the filler rows as rows of zero loss: 3/4 of it), entropy bonus
    included."""
    frontier = FrontierConfig(selector="uniform", dynamic_sampling="greso")
    t = trainer(tmp_path, frontier, steps=2, reward=SecondRoundSolved(), cls=LossRecording,
                loss_type=loss_type, entropy_coef=entropy_coef)  # fmt: skip
    t.train()
    assert [s.train.deficit for s in t.samples] == [1, 1]
    assert [live for _, _, live in t.losses] == [(PROMPTS - 1) * N_GEN] * 2
    for loss, alone, _ in t.losses:
        assert loss == pytest.approx(alone, rel=1e-4, abs=1e-7), (loss, alone, t.losses)
    if entropy_coef:
        logged = {h["entropy_coef"] for h in t.state.log_history if "entropy_coef" in h}
        assert logged == {entropy_coef}  # TRL logs the user's coefficient


class FirstGroupMixed(HalfConstant):
    """Only the first group of every round is mixed; all the others score 0."""

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        out = [float(i == 0) for i in range(len(task_id))]
        self.calls.append(([int(t) for t in task_id], out))
        return out


@pytest.mark.parametrize(("mode", "rounds"), [("dapo", [12, 12, 12, 12]), ("fixed", [12, 9, 6, 3])])
def test_dapo_mode_rolls_out_full_rounds_fixed_the_open_slots(
    tmp_path: Path, mode: str, rounds: list[int]
) -> None:
    """One mixed group a round, B = 4: DAPO's code rolls out 3 B = 12 prompts every round,
    4 rounds; 'fixed' rolls out 3x the slots still open: 12, 9, 6, 3."""
    frontier = FrontierConfig(selector="uniform", dynamic_sampling=mode)
    t = trainer(tmp_path, frontier, steps=1, reward=FirstGroupMixed())
    t.train()
    (samples,) = t.samples
    assert [r.task_ids.size for r in samples.rounds] == rounds
    assert samples.train.num_groups == PROMPTS
    assert t.frontier_metrics()["dapo/rollouts"] == sum(rounds) * N_GEN


def test_filler_groups_make_rounds_split_evenly() -> None:
    assert [filler_groups(k, 3, 2) for k in (4, 5, 6, 7)] == [0, 1, 0, 1]
    assert [filler_groups(k, 4, 2) for k in (3, 5)] == [0, 0]
    assert filler_groups(5, 3, 4) == 3  # (5 + 3) * 3 = 24 rows, 6 per process


# ---------------------------------------------------------------------- mistakes, versions
@pytest.fixture
def hollow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model directory with a config.json and no weights: loading it would fail with
    another error, so seeing ours proves the check ran first."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "hollow"
    path.mkdir()
    tiny_llama(char_tokenizer()).config.save_pretrained(path)
    return path


@pytest.mark.parametrize(
    ("trainer_kind", "settings", "columns", "phrase"),
    [
        ("grpo", {"scale_rewards": "batch"}, {}, "scale_rewards: batch"),
        ("grpo", {"multi_objective_aggregation": "normalize_then_sum"}, {}, "sum_then_normalize"),
        ("grpo", {}, {"image": [None] * N}, "image datasets"),
        ("grpo", {"loss_type": "bnpo"}, {}, "dynamic_sampling with loss_type: bnpo"),
        ("rloo", {}, {}, "trainer 'rloo' is not supported"),
    ],
)
def test_settings_it_cannot_run_with_are_one_line_before_the_model_loads(
    hollow: Path, tmp_path: Path, trainer_kind: str, settings: dict, columns: dict, phrase: str
) -> None:
    from trl import RLOOConfig

    from frontier_rft.integrations.trl import FrontierRLOOTrainer

    cls, config_cls = (
        (FrontierGRPOTrainer, GRPOConfig)
        if trainer_kind == "grpo"
        else (FrontierRLOOTrainer, RLOOConfig)
    )
    values = args(tmp_path / "out", steps=1).to_dict()
    keep = {"output_dir", "per_device_train_batch_size", "num_generations", "use_cpu"}
    config = config_cls(**{k: values[k] for k in keep}, **settings)
    data = dataset()
    for name, column in columns.items():
        data = data.add_column(name, column)
    with pytest.raises(ValueError) as info:
        cls(model=str(hollow), reward_funcs=[solved], args=config, train_dataset=data,
            frontier=FrontierConfig(dynamic_sampling="fixed"))  # fmt: skip
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_a_trl_whose_private_method_cannot_be_wrapped_is_one_line() -> None:
    from trl import GRPOTrainer

    from frontier_rft.integrations.trl.seam_check import check_wrappable

    check_wrappable(GRPOTrainer)  # the installed TRL is wrappable

    class Renamed:
        def _prepare_inputs(self, batch: Any) -> Any:
            return self._generate_and_score(batch)

        def _generate_and_score(self, inputs: Any) -> Any:
            return inputs

    class NewSignature:
        def _prepare_inputs(self, batch: Any) -> Any:
            return self._generate_and_score_completions(batch, "train")

        def _generate_and_score_completions(self, inputs: Any, mode: str) -> Any:
            return inputs

    class NotCalled:
        def _prepare_inputs(self, batch: Any) -> Any:
            return batch

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            return inputs

    for cls, phrase in [
        (Renamed, "no _generate_and_score_completions"),
        (NewSignature, "takes (self, inputs, mode)"),
        (NotCalled, "no longer calls _generate_and_score_completions"),
    ]:
        with pytest.raises(ValueError) as info:
            check_wrappable(cls)
        text = str(info.value)
        assert phrase in text and "tested with TRL 1.16.0" in text and "\n" not in text
        assert "set dynamic_sampling: off" in text
        # a kept run's refusal turns off what it runs, not dynamic sampling
        with pytest.raises(ValueError) as info:
            check_wrappable(cls, "fewer_rollouts")
        text = str(info.value)
        assert text.endswith("or set rollouts: full and screen: 0")
        assert phrase in text and "dynamic_sampling" not in text


def test_an_output_it_cannot_regroup_is_one_line_not_a_wrong_batch(tmp_path: Path) -> None:
    t = trainer(tmp_path, FrontierConfig(selector="uniform", dynamic_sampling="fixed"), steps=1)
    parent = t.frontier_driver._parent

    def newer_trl(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = parent(inputs)
        out["pixel_values"] = torch.zeros(len(inputs), 3)
        return out

    t.frontier_driver._parent = newer_trl
    with pytest.raises(ValueError, match="returned pixel_values, which dynamic sampling cannot"):
        t.train()


def test_one_yaml_line_turns_it_on_in_the_grpo_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.integrations.trl.grpo import cli, main

    tok = char_tokenizer()
    model_dir = tmp_path / "model"
    tiny_llama(tok).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"p{i}:", "answer": "1"}) + "\n" for i in range(N))
    )
    config = tmp_path / "grpo.yaml"
    config.write_text("dynamic_sampling: adaptive\n")  # the one line
    base = ["--config", str(config), "--model_name_or_path", str(model_dir)]
    base += ["--dataset_files", str(data), "--output_dir", str(tmp_path / "out")]
    base += ["--use_cpu", "true", "--bf16", "false", "--report_to", "none", "--max_steps", "2"]
    base += ["--per_device_train_batch_size", "8", "--num_generations", "4"]
    base += ["--max_completion_length", "6", "--save_strategy", "no", "--disable_tqdm", "true"]
    base += ["--logging_steps", "1"]
    t = main(base)
    assert t.frontier_driver is not None and t.frontier_config.dynamic_sampling == "adaptive"
    assert t.frontier_config.selector == "uniform"  # around the default selector
    assert t.frontier_shadows.shadows == []  # a partial step: no default shadow
    assert t.frontier_config.rollouts == "full"  # auto: dynamic sampling is a sampler of its own
    logged = [h for h in t.state.log_history if "loss" in h]
    assert len(logged) == 2 and all("curriculum/dapo/rounds" in h for h in logged)
    assert cli([*base, "--scale_rewards", "batch"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if " error: " in line]
    assert len(errors) == 1 and "scale_rewards: batch" in errors[0] and "Traceback" not in err


# ---------------------------------------------------------------------- two processes
TWO_PROCESS_RUNS = {"odd_n": (3, 6), "straddling": (4, 6)}
"""name: (num_generations, rows per process). n = 3: rounds of an odd number of prompts need
a filler group; n = 4 with 6 rows per process: B = 3, so groups straddle the processes, in
the rounds (odd numbers of prompts) and in the trained batch."""


def _distributed_worker(out: Path) -> None:
    """One rank of a 2-process CPU (gloo) run per TWO_PROCESS_RUNS entry."""
    for name, (n, rows) in TWO_PROCESS_RUNS.items():
        crc_reward.count = 0
        frontier = FrontierConfig(dynamic_sampling="adaptive", check_sync=True)  # greso inside
        saves = {"save_strategy": "steps", "save_steps": 2}  # check_sync compares at saves
        t = trainer(
            out / name, frontier, steps=4, n=n, reward=crc_reward,
            per_device_train_batch_size=rows, **saves,
        )  # fmt: skip
        t.train()
        rank = t.accelerator.process_index
        record = {
            "num_processes": t.accelerator.num_processes,
            "digest": state_digest(t.frontier_driver.sampler.state_dict()),
            "metrics": {  # timings aside
                k: v for k, v in t.frontier_metrics().items() if np.isfinite(v) and "_ms" not in k
            },
            "trained": [s.train.task_ids.tolist() for s in t.samples],
            "rewards": [s.train.rewards.tolist() for s in t.samples],
            "round_sizes": [[r.task_ids.size for r in s.rounds] for s in t.samples],
            "advantages": [b["advantages"].tolist() for b in t.batches],
            "kept": [(b["completion_mask"].sum(dim=1) > 0).tolist() for b in t.batches],
            "generated": crc_reward.count,
        }
        (out / f"{name}-rank{rank}.json").write_text(json.dumps(record))
    leave_process_group()


class CrcReward:
    """Half the tasks always 1, the others the parity of a checksum of the completion."""

    __name__ = "crc_reward"

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        import zlib

        self.count += len(completions)
        return [
            1.0 if t % 2 == 0 else float(zlib.crc32(str(c).encode()) & 1)
            for t, c in zip(task_id, completions, strict=True)
        ]


crc_reward = CrcReward()


def test_two_processes_train_the_same_groups(tmp_path: Path) -> None:
    """`accelerate launch` with 2 CPU processes (gloo): both ranks hold the same wrapper and
    selector, and their halves of each batch are the kept groups' rows with TRL's advantages."""
    import frontier_rft

    # The processes import the package this test imports (a worktree's, not the installed one).
    paths = [str(Path(__file__).parent), str(Path(frontier_rft.__file__).parents[1])]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(paths)}
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    launcher += ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    launcher += ["--dynamo_backend", "no", "--main_process_port", "0"]
    done = subprocess.run(
        [*launcher, __file__, str(tmp_path)], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, (n, _) in TWO_PROCESS_RUNS.items():
        ranks = [json.loads((tmp_path / f"{name}-rank{r}.json").read_text()) for r in (0, 1)]
        assert all(r["num_processes"] == 2 for r in ranks)
        assert ranks[0]["digest"] == ranks[1]["digest"]  # the same wrapper and selector
        for key in ("trained", "rewards", "round_sizes", "metrics"):
            assert ranks[0][key] == ranks[1][key], key
        for step, rewards in enumerate(ranks[0]["rewards"]):
            both = np.array(ranks[0]["advantages"][step] + ranks[1]["advantages"][step])
            kept = np.array(ranks[0]["kept"][step] + ranks[1]["kept"][step])
            live = len(rewards)
            assert kept[:live].all() and not kept[live:].any()
            np.testing.assert_allclose(both[:live], trl_advantages(np.array(rewards), n), atol=1e-5)
            grid = np.array(rewards).reshape(-1, n)
            assert bool((grid.max(axis=1) > grid.min(axis=1)).all())  # no zero-variance group
        metrics, generated = ranks[0]["metrics"], ranks[0]["generated"] + ranks[1]["generated"]
        assert metrics["dapo/rollouts"] == generated  # fillers included
        assert metrics["feedback/rollouts"] == generated - metrics["dapo/filler_rollouts"]
        sizes = [k for step in ranks[0]["round_sizes"] for k in step]
        if n % 2:  # a round of an odd number of prompts, n odd: one filler group
            odd = sum(k % 2 for k in sizes)
            assert odd > 0 and metrics["dapo/filler_rollouts"] == odd * n
        else:  # odd rounds split a group between the processes; B = 3 splits the batch
            assert any(k % 2 for k in sizes) and metrics["dapo/filler_rollouts"] == 0


if __name__ == "__main__":  # a rank of the two-process test, started by accelerate launch
    _distributed_worker(Path(sys.argv[1]))
