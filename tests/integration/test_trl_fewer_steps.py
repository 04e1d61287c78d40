"""`rollouts: fewer_steps` inside FrontierGRPOTrainer: the real GRPOTrainer on the tiny local
model, on CPU, over test_trl_fewer's planted pool (task t always solved when t % 3 == 0, never
when t % 3 == 1, mixed when t % 3 == 2).

ScaleRL's rule is deterministic: a prompt solved in the first pass is passed over from the
second on. In pool order, 24 prompts in chunks of 4: the first pass is 6 steps; the second
keeps the 16 prompts with t % 3 != 0, 4 steps, and it ends on prompt 23, which is kept, so
two passes are walked in 10 steps where TRL plans 12.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from test_trl_fewer import (  # the planted pool, its arguments and the module's settings
    N_GEN,
    PROMPTS,
    Keyed,
    _launch,
    args,
    dataset,
)
from tiny_lm import char_tokenizer, tiny_llama

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.state import state_digest

RETIRING = {"selector": "scalerl", "selector_config": {"order": "pool"}}


def trainer(out: Path, frontier: FrontierConfig, **kw: Any) -> Any:
    tok = char_tokenizer()
    return FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[Keyed()],
        args=args(out, **kw),
        train_dataset=dataset(),
        processing_class=tok,
        frontier=frontier,
    )


def test_two_passes_end_in_the_steps_counted_by_hand(tmp_path: Path) -> None:
    fewer = trainer(tmp_path / "f", FrontierConfig(**RETIRING, rollouts="fewer_steps"))
    fewer.train()
    assert fewer.state.global_step == 10
    assert fewer.frontier_sampler.passes_done
    assert fewer.frontier_selector.passes_walked() == 2.0
    assert fewer.frontier_sampler.passes_trained == 2.0
    full = trainer(tmp_path / "u", FrontierConfig(**RETIRING, rollouts="full"))
    full.train()
    assert full.state.global_step == 12  # TRL's plan: the same batches walk further
    assert full.frontier_selector.passes_walked() > 2.0


@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant_with_warmup"])
def test_the_schedule_ends_where_uniforms_ends(schedule: str, tmp_path: Path) -> None:
    """Warm-up over the first pass as uniform's (the same passes a step there), and the last
    learning rate uniform's last, two steps earlier."""
    kw = {"lr_scheduler_type": schedule, "warmup_steps": 3}
    uniform = trainer(tmp_path / "u", FrontierConfig(selector="uniform", rollouts="full"), **kw)
    uniform.train()
    fewer = trainer(tmp_path / "f", FrontierConfig(**RETIRING, rollouts="fewer_steps"), **kw)
    fewer.train()
    u_last, f_last = uniform.lr_scheduler.get_last_lr(), fewer.lr_scheduler.get_last_lr()
    assert uniform.state.global_step == 12 and fewer.state.global_step == 10
    assert f_last == pytest.approx(u_last, abs=1e-12)  # every parameter group's

    def rates(t: Any) -> list[float]:
        return [h["learning_rate"] for h in t.state.log_history if "loss" in h]

    assert rates(fewer)[:6] == pytest.approx(rates(uniform)[:6])  # the first pass
    if schedule != "constant_with_warmup":  # it decays: ended by steps it would end higher
        assert f_last[0] < rates(fewer)[-1]


def test_resume_mid_second_pass_continues_identically(tmp_path: Path) -> None:
    frontier = FrontierConfig(**RETIRING, rollouts="fewer_steps")
    kw = {"save_strategy": "steps", "save_steps": 8, "lr_scheduler_type": "cosine"}
    straight = trainer(tmp_path / "a", frontier, **kw)
    straight.train()
    resumed = trainer(tmp_path / "b", frontier, **kw)
    resumed.train(resume_from_checkpoint=str(tmp_path / "a" / "checkpoint-8"))
    assert resumed.state.global_step == straight.state.global_step == 10
    digests = [state_digest(t.frontier_selector.state_dict()) for t in (straight, resumed)]
    assert digests[0] == digests[1]
    assert resumed.lr_scheduler.get_last_lr() == straight.lr_scheduler.get_last_lr()
    assert resumed.frontier_sampler.passes_trained == 2.0


def test_the_run_says_at_its_end_what_it_saved_and_logs_trls_cost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One line at the end of a fewer_steps run and of a kept run; TRL's num_tokens and
    step_time beside the curriculum metrics in frontier_metrics.jsonl."""
    with caplog.at_level(logging.INFO, logger="frontier_rft.integrations.trl"):
        trainer(tmp_path / "f", FrontierConfig(**RETIRING, rollouts="fewer_steps")).train()
        trainer(tmp_path / "k", FrontierConfig(**RETIRING, rollouts="kept")).train()
    assert "rollouts: fewer_steps walked 2.00 passes over the prompts in 10 steps (TRL " in (
        caplog.text
    )
    assert "planned 12 for num_train_epochs=2)" in caplog.text
    kept = [r.getMessage() for r in caplog.records if "rollouts: kept generated" in r.getMessage()]
    assert len(kept) == 1 and "of TRL's whole batches' 192" in kept[0], kept
    rows = [json.loads(x) for x in (tmp_path / "f" / "frontier_metrics.jsonl").open()]
    steps = [r for r in rows if "step_time" in r]  # TRL's end-of-training log has none
    assert len(steps) == 10 and all(r["num_tokens"] > 0 and r["step_time"] > 0 for r in steps)


def test_a_run_set_by_max_steps_keeps_its_steps_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="frontier_rft.integrations.trl"):
        t = trainer(
            tmp_path / "m", FrontierConfig(**RETIRING, rollouts="fewer_steps"), max_steps=12
        )
    assert "max_steps 12 sets the run's length: it keeps its 12 steps" in caplog.text
    t.train()
    assert t.state.global_step == 12
    assert t.frontier_sampler.passes is None


def test_the_trainer_ends_the_run_as_its_plan_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How the run ends is decided once, by the resolution's plan (issue 90, item 5): a
    trainer handed a plan ended by its steps keeps TRL's epochs, whatever rollouts says."""
    from dataclasses import replace

    from frontier_rft.integrations.trl import trainer as trainer_module

    resolve = trainer_module.resolve_step

    def by_steps(*args: Any, **kwargs: Any) -> Any:
        resolution = resolve(*args, **kwargs)
        return replace(resolution, plan=replace(resolution.plan, ends_by="steps"))

    monkeypatch.setattr(trainer_module, "resolve_step", by_steps)
    t = trainer(tmp_path / "m", FrontierConfig(**RETIRING, rollouts="fewer_steps"))
    assert t.frontier_plan.ends_by == "steps"
    assert t.frontier_sampler.passes is None and t.frontier_pass_clock is None


@pytest.mark.parametrize(
    ("frontier", "kw", "message"),
    [
        ({"selector": "skip", "screen": 2}, {}, "set screen: 0, or rollouts: kept"),
        ({"selector": "skip", "dynamic_sampling": "fixed"}, {}, "set dynamic_sampling: off"),
        ({"selector": "bots"}, {}, "does not walk the data"),
        (
            {"selector": "skip"},
            {"lr_scheduler_type": "reduce_lr_on_plateau", "eval_strategy": "steps"},
            "not a schedule",
        ),
    ],
)
def test_refused_in_one_line_before_the_model_loads(
    frontier: dict[str, Any], kw: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError) as info:
        FrontierGRPOTrainer(
            model=tiny_llama(char_tokenizer(), seed=0),
            reward_funcs=[Keyed()],
            args=args(tmp_path / "r", **kw),
            train_dataset=dataset(),
            frontier=FrontierConfig(**frontier, rollouts="fewer_steps"),
        )
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_through_trls_vllm_path_it_ends_after_the_same_passes(
    mode: str,
    tmp_path: Path,
    vllm_standin: Any,
) -> None:
    """TRL's vLLM code path (the engine stood in, tests/integration/vllm_standin.py: no vLLM
    engine runs) generates for each whole batch, 10 calls of 4 prompts, and the run ends
    after the passes as without it."""
    frontier = FrontierConfig(**RETIRING, rollouts="fewer_steps")
    t = trainer(tmp_path, frontier, use_vllm=True, vllm_mode=mode)
    t.train()
    assert t.state.global_step == 10 and t.frontier_sampler.passes_trained == 2.0
    calls = [c for engine in vllm_standin.ENGINES for c in engine.calls]
    rows = [len(c["prompts"]) * c["n"] for c in calls]
    assert sum(rows) == 10 * PROMPTS * N_GEN, rows  # whole batches, 10 of them


def _rank(out: Path) -> None:
    """One rank of the 2-process run: what it trained, written for the test to compare."""
    from two_ranks import leave_process_group

    t = trainer(
        out,
        FrontierConfig(**RETIRING, rollouts="fewer_steps", check_sync=True),
        per_device_train_batch_size=PROMPTS * N_GEN // 2,
        lr_scheduler_type="cosine",
    )
    t.train()
    record = {
        "num_processes": t.accelerator.num_processes,
        "global_step": int(t.state.global_step),
        "digest": state_digest(t.frontier_selector.state_dict()),
        "passes_trained": t.frontier_sampler.passes_trained,
        "learning_rates": [h["learning_rate"] for h in t.state.log_history if "loss" in h],
        "last_lr": t.lr_scheduler.get_last_lr(),
    }
    (out / f"rank{t.accelerator.process_index}.json").write_text(json.dumps(record))
    leave_process_group()


def test_two_processes_end_together_after_the_same_passes(tmp_path: Path) -> None:
    """`accelerate launch` on 2 CPU processes (gloo, DDP): each rank generates for its half of
    every batch, finds its chunk's passes from its own rows, and both end after the 10 steps
    counted by hand, on the same schedule, with the same selector state."""
    done, _ = _launch(tmp_path, ["--multi_gpu"], script=__file__)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["num_processes"] for r in ranks] == [2, 2]
    assert [r["global_step"] for r in ranks] == [10, 10]
    assert [r["passes_trained"] for r in ranks] == [2.0, 2.0]
    for key in ("digest", "learning_rates", "last_lr"):
        assert ranks[0][key] == ranks[1][key], key
    assert ranks[0]["last_lr"] == pytest.approx([0.0] * len(ranks[0]["last_lr"]), abs=1e-12)


if __name__ == "__main__":  # a rank of the two-process test, started by accelerate launch
    _rank(Path(sys.argv[1]))


def test_two_optimizer_steps_a_generation_follow_the_passes_in_equal_parts(
    tmp_path: Path,
) -> None:
    """steps_per_generation 2: each generation batch is trained over 2 optimizer steps, so
    TRL plans 24 and the run takes 20; the schedule moves on in equal parts within each
    batch, matches uniform's over the first pass and ends at uniform's last rate."""
    kw = {"lr_scheduler_type": "cosine", "warmup_steps": 3, "steps_per_generation": 2}
    kw["per_device_train_batch_size"] = PROMPTS * N_GEN // 2
    uniform = trainer(tmp_path / "u", FrontierConfig(selector="uniform", rollouts="full"), **kw)
    uniform.train()
    fewer = trainer(tmp_path / "f", FrontierConfig(**RETIRING, rollouts="fewer_steps"), **kw)
    fewer.train()
    assert (uniform.state.global_step, fewer.state.global_step) == (24, 20)

    def rates(t: Any) -> list[float]:
        return [h["learning_rate"] for h in t.state.log_history if "loss" in h]

    assert rates(fewer)[:12] == pytest.approx(rates(uniform)[:12])
    assert fewer.lr_scheduler.get_last_lr() == pytest.approx(uniform.lr_scheduler.get_last_lr())


def test_a_ready_selector_of_an_unregistered_class_that_does_not_walk_is_refused(
    tmp_path: Path,
) -> None:
    """The check reads the ready selector's class, not the registry (an unregistered class
    once fell through it to an IndexError)."""
    from frontier_rft import TaskPool
    from frontier_rft.selectors import SELECTORS

    class Unlisted(SELECTORS["prioritized"]):  # type: ignore[misc,valid-type]
        name = "unlisted"

    assert "unlisted" not in SELECTORS
    with pytest.raises(ValueError) as info:
        FrontierGRPOTrainer(
            model=tiny_llama(char_tokenizer(), seed=0),
            reward_funcs=[Keyed()],
            args=args(tmp_path / "r"),
            train_dataset=dataset(),
            selector=Unlisted(TaskPool(num_tasks=24), seed=0),
            frontier=FrontierConfig(rollouts="fewer_steps"),
        )
    assert "selector 'unlisted' does not walk the data" in str(info.value)
    assert "\n" not in str(info.value)


def test_the_step_that_ends_the_passes_saves_and_evaluates_as_uniforms_last(
    tmp_path: Path,
) -> None:
    """Save and evaluate every 4 steps: uniform at 4, 8 and its last, 12; fewer_steps at 4, 8
    and its last, 10, though 4 does not divide it."""
    kw = {"save_strategy": "steps", "save_steps": 4, "eval_strategy": "steps", "eval_steps": 4}
    ran = {}
    for name, frontier in (
        ("u", FrontierConfig(**RETIRING, rollouts="full")),
        ("f", FrontierConfig(**RETIRING, rollouts="fewer_steps")),
    ):
        tok = char_tokenizer()
        t = FrontierGRPOTrainer(
            model=tiny_llama(tok, seed=0),
            reward_funcs=[Keyed()],
            args=args(tmp_path / name, per_device_eval_batch_size=N_GEN * 2, **kw),
            train_dataset=dataset(),
            eval_dataset=dataset().select(range(2)),
            processing_class=tok,
            frontier=frontier,
        )
        t.train()
        saved = sorted(int(p.name.split("-")[1]) for p in (tmp_path / name).glob("checkpoint-*"))
        evaluated = [h["step"] for h in t.state.log_history if "eval_reward" in h]
        ran[name] = (saved, evaluated)
    assert ran["u"] == ([4, 8, 12], [4, 8, 12])
    assert ran["f"] == ([4, 8, 10], [4, 8, 10])
