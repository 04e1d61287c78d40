"""The noise meter in TRL's GRPOTrainer (integrations/trl/noise.py): it logs noise/... from the
micro-batches of gradient accumulation, reads the gradients it is shown and changes nothing
trained, reads TRL's loss weights right, and says why it is off where TRL's hooks deny it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import torch
from tiny_lm import char_tokenizer, task_dataset, tiny_grpo_args, tiny_llama
from trl import GRPOConfig

from frontier_rft.cli.main import main
from frontier_rft.core.noise_scale import NoiseEma, NoiseEstimate
from frontier_rft.integrations.batch_settings import plan_lines, plan_run, start_run
from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.noise import LOSS_UNITS, micro_batch_coefficients
from frontier_rft.metrics_log import read_metrics_jsonl
from frontier_rft.step_cost.planner import NoiseTerms


def _reward(prompts: list[str], completions: list[str], task_id: list[int], **kw: Any) -> list:
    """Mixed groups: a completion's reward is the parity of its length and its task."""
    return [float((len(c) + t) % 2) for c, t in zip(completions, task_id, strict=True)]


def _trainer(out: Path, every: int, plan_every: int = 100, **kw: Any) -> Any:
    tok = char_tokenizer()
    args = tiny_grpo_args(out, prompts=4, n=4, cls=GRPOConfig, **{"max_steps": 3, **kw})
    return FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[_reward],
        args=args,
        train_dataset=task_dataset(np.arange(12)),
        processing_class=tok,
        frontier=FrontierConfig(
            selector="uniform", shadows=[], noise_every=every, plan_every=plan_every
        ),
    )


ACCUMULATED = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2}
"""16 rows a step as two micro-batches of 8 (shuffled by TRL across the step's 4 prompts)."""


def test_the_meter_logs_noise_from_micro_batches_and_trains_nothing(tmp_path: Path) -> None:
    on = _trainer(tmp_path / "on", 1, **ACCUMULATED)
    on.train()
    off = _trainer(tmp_path / "off", 0, **ACCUMULATED)
    off.train()
    for a, b in zip(on.model.parameters(), off.model.parameters(), strict=True):
        assert torch.equal(a, b)
    logged = [h for h in on.state.log_history if "noise/intra" in h]
    assert logged, on.state.log_history
    assert all(np.isfinite(h["noise/intra_ema"]) for h in logged)
    assert not any(k.startswith("noise/") for h in off.state.log_history for k in h)
    losses = [h["loss"] for h in on.state.log_history if "loss" in h]
    assert losses == [h["loss"] for h in off.state.log_history if "loss" in h]


def test_one_micro_batch_a_step_turns_the_meter_off_saying_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    trainer = _trainer(tmp_path / "run", 1, max_steps=1)
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        trainer.train()
    said = [r.getMessage() for r in caplog.records if "noise meter off" in r.getMessage()]
    assert said and "gradient_accumulation_steps is 1" in said[0]
    assert not any(k.startswith("noise/") for h in trainer.state.log_history for k in h)


def test_the_run_ends_with_its_batch_plan_and_its_log_holds_the_evidence(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The end-of-run line plans from the meter's EMA in TRL's keys, and `frontier plan-batch`
    reads the same terms back from frontier_metrics.jsonl."""
    trainer = _trainer(tmp_path / "run", 1, **ACCUMULATED)
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        trainer.train()
    # three tiny steps: |G|^2's estimate may still be < 0, and the line then says why
    said = [r.getMessage() for r in caplog.records if "batch plan" in r.getMessage()]
    assert len(said) == 1 and ("against 16 now (4 x 4)" in said[0] or "none (" in said[0])
    last = [row for row in read_metrics_jsonl(tmp_path / "run" / "frontier_metrics.jsonl")
            if "noise/grad_sq_ema" in row][-1]  # fmt: skip
    kept = trainer.frontier_noise.ema.smoothed()  # logged each step: the log's last is the EMA
    assert [last[f"noise/{k}_ema"] for k in ("grad_sq", "inter", "intra")] == pytest.approx(kept)
    # the meter's EMA planted: the line is the shared planner's, in TRL's keys
    ema = trainer.frontier_noise.ema = NoiseEma(0.9)
    ema.update(NoiseEstimate(1.0, 25.0, 200.0, 16, 0.25, 1 / 16))
    lines = trainer._frontier_batch_plan()
    plan = plan_run(NoiseTerms.from_ema(ema), "cpu", length=trainer.args.max_completion_length,
                    prompts=4, rollouts=4, max_prompts=12)  # fmt: skip
    assert lines == plan_lines(plan, "trl", lr=trainer.args.learning_rate, per_device=8)
    assert "against 16 now (4 x 4)" in lines[0] and "curve cpu" in lines[0]
    assert "num_generations=4" in lines[1] and "learning_rate=" in lines[1]
    code = main(["plan-batch", str(tmp_path / "run"), "--prompts", "4", "--group-size", "4",
                 "--trainer", "trl", "--max-prompts", "12"])  # fmt: skip
    out, err = capsys.readouterr()
    if code == 0:  # the same terms read back: a plan...
        assert "against 16 now (4 x 4)" in out
    else:  # ...or the same refusal of a |G|^2 not yet > 0
        assert code == 2 and "|G|^2 is" in err and "none (" in said[0]


def test_start_up_says_the_least_regret_start_in_trls_keys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """At start-up, before any step: the start from the run's curve (cpu here) at its step of
    4 prompts x 4, up to the pool of 12, in TRL's settings (frontier plan-batch's lines)."""
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        trainer = _trainer(tmp_path / "run", 1, **ACCUMULATED)
    said = [r.getMessage() for r in caplog.records if "start plan" in r.getMessage()]
    start = start_run("cpu", length=trainer.args.max_completion_length, prompts=4, rollouts=4,
                      max_prompts=12)  # fmt: skip
    want = plan_lines(start, "trl", lr=trainer.args.learning_rate, per_device=8)
    assert said[0] == f"frontier-rft: {want[0]}" and len(said) == 1
    assert "start plan: " in said[0] and "the configured step, 16 rows" in said[0]
    settings = [r.getMessage() for r in caplog.records if "set for your trainer" in r.getMessage()]
    assert settings == [f"frontier-rft: {want[1]}"] and "num_generations=4" in want[1]


def test_the_plan_is_said_every_plan_every_steps_and_at_the_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """plan_every 2 over 5 metered steps: the plan at steps 2 and 4, then the run's end line
    (step 5 is not said twice); plan_every 0: the end only."""
    trainer = _trainer(tmp_path / "run", 1, plan_every=2, max_steps=5, **ACCUMULATED)
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        trainer.train()
    said = [r.getMessage() for r in caplog.records if "batch plan" in r.getMessage()]
    assert [m.split(":")[1].strip() for m in said[:2]] == ["at step 2", "at step 4"]
    assert len(said) == 3 and "at step" not in said[2]
    caplog.clear()
    quiet = _trainer(tmp_path / "quiet", 1, plan_every=0, max_steps=3, **ACCUMULATED)
    with caplog.at_level(logging.INFO, logger="frontier_rft"):
        quiet.train()
    assert len([r for r in caplog.records if "batch plan" in r.getMessage()]) == 1


def test_plan_every_below_zero_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="plan_every"):
        FrontierConfig(selector="uniform", plan_every=-1)


class _Stub:
    """What micro_batch_coefficients reads of a trainer."""

    def __init__(self, loss_type: str) -> None:
        self.loss_type = loss_type
        self.max_completion_length = 8
        self.current_gradient_accumulation_steps = 2
        self.accelerator = type("A", (), {"num_processes": 1})()
        self.args = type("Args", (), {"steps_per_generation": 2})()


@pytest.mark.parametrize("loss_type", sorted(LOSS_UNITS))
def test_the_rows_weights_are_trls_own_loss(loss_type: str) -> None:
    """Each loss type's coefficients c_r make sum_r c_r f_r (f_r a row's token mean) the loss
    TRL's `_compute_loss` aggregates, per_token_loss summed as its loss type does."""
    rng = np.random.default_rng(0)
    rows, width = 5, 8
    mask = torch.zeros(rows, width)
    for r, n in enumerate(rng.integers(1, width + 1, rows)):
        mask[r, :n] = 1.0
    per_token = torch.tensor(rng.normal(size=(rows, width)), dtype=torch.float32)
    total_tokens = mask.sum() * 2  # num_items_in_batch: the generation batch's tokens
    inputs = {
        "prompt_ids": torch.tensor(rng.integers(3, 9, (rows, 3))),
        "prompt_mask": torch.ones(rows, 3, dtype=torch.long),
        "completion_mask": mask,
        "num_items_in_batch": total_tokens,
    }
    stub = _Stub(loss_type)
    _, coef = micro_batch_coefficients(stub, inputs)
    f = (per_token * mask).sum(-1) / mask.sum(-1)
    ga = 2.0
    trl = {
        "grpo": ((per_token * mask).sum(-1) / mask.sum(-1)).mean() / ga,
        "sapo": ((per_token * mask).sum(-1) / mask.sum(-1)).mean() / ga,
        "luspo": (per_token * mask).sum(-1).mean() / ga,
        "bnpo": (per_token * mask).sum() / mask.sum() / ga,
        "dr_grpo": (per_token * mask).sum() / (rows * 8) / ga,
        "dapo": (per_token * mask).sum() / (total_tokens * ga / 2),
        "cispo": (per_token * mask).sum() / (total_tokens * ga / 2),
        "vespo": (per_token * mask).sum() / (total_tokens * ga / 2),
    }[loss_type]
    assert float(coef @ f.double().numpy()) == pytest.approx(float(trl), rel=1e-5)
