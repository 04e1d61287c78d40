"""METIS joint training: the policy judges (chat-templated judge prompts), failures are
counted, the judge loss is present and weighted by lam, and the lam = 0 / K = 0 flags work."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.cli.common import UsageError
from frontier_rft.cli.train import add_commands
from frontier_rft.selectors.metis.judge import parse_judgment, system_message
from frontier_rft.training.grpo import Trainer
from frontier_rft.training.metis_judge_training import PolicyJudge, judge_loss
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration

METIS = dataclasses.replace(TEST_TRAIN, selector="metis")


def test_policy_judges_every_candidate_and_failures_are_counted(
    sft_dir: Path, tmp_path: Path
) -> None:
    trainer = Trainer(METIS, sft_dir, tmp_path / "run", log=lambda _: None)
    judge = trainer.judge
    assert isinstance(judge, PolicyJudge) and judge.model is trainer.model  # the policy itself
    metrics = trainer.step()
    m, b = 8, METIS.batch_size
    assert judge.calls == 1 and len(judge.last_prompts) == m * b
    assert metrics["curriculum/metis/candidates"] == m * b
    assert metrics["curriculum/metis/non_llm_judge"] == 0.0
    for prompt in judge.last_prompts:  # the paper's judge prompt, chat rendering
        assert prompt.startswith("<|system|>\n" + system_message() + "\n<|user|>\n")
        assert prompt.endswith('"""\n<|assistant|>\n') and "[Candidate]" in prompt
    failed = [parse_judgment(r) is None for r in judge.last_responses]
    assert metrics["curriculum/metis/judge_failure_rate"] == pytest.approx(np.mean(failed))
    # After one feedback batch the memory holds exemplars and the next prompts show them.
    trainer.step()
    assert all("[Example 1]" in p for p in judge.last_prompts)
    assert all("REWARD_VARIANCE: " in p for p in judge.last_prompts)
    records = trainer.last["records"]
    assert len(records) == b and {r.task_id for r in records} == set(trainer.last["ids"].tolist())
    for rec in records:  # judge reward from the realised variance (Eq. 8) and R - b
        assert rec.reward == pytest.approx(1 - (4 * (rec.prediction - rec.realised_variance)) ** 2)
        assert rec.advantage == pytest.approx(rec.reward - rec.baseline)
    for key in ("metis/judge_reward_mean", "metis/prediction_mean", "metis/prediction_std"):
        assert np.isfinite(trainer.selector.metrics()[key]), key


def test_judge_loss_present_and_weighted_by_lam(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(METIS, selector_overrides={"judge_loss_weight": 0.5})
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    assert trainer.lam == 0.5
    metrics = trainer.step()  # the step's own judgments are scored before its update
    assert len(trainer.last["records"]) == cfg.batch_size
    assert metrics["loss/judge_weighted"] == pytest.approx(0.5 * metrics["loss/judge"])
    assert metrics["loss/total"] == pytest.approx(
        metrics["loss/policy"] + 0.5 * metrics["loss/judge"], rel=1e-5, abs=1e-6
    )
    # The judge loss is REINFORCE on the sampled answer tokens: linear in the advantages.
    records = trainer.last["records"]
    judge = trainer.judge
    assert judge is not None
    loss, _ = judge_loss(trainer.model, judge, records)
    doubled = [dataclasses.replace(r, advantage=2 * r.advantage) for r in records]
    loss2, _ = judge_loss(trainer.model, judge, doubled)
    assert loss2.item() == pytest.approx(2 * loss.item(), rel=1e-5, abs=1e-7)
    trainer.model.zero_grad()
    loss.backward()
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    if any(r.advantage != 0 for r in records):
        assert any(torch.any(g != 0) for g in grads)


@pytest.mark.parametrize("update_rows", [0, 5])
def test_lam_zero_trains_no_judge_tokens(sft_dir: Path, tmp_path: Path, update_rows: int) -> None:
    """Whole or in micro-batches of rows (whose judge loss, without a graph, has no backward)."""
    cfg = dataclasses.replace(
        METIS, selector_overrides={"judge_loss_weight": 0.0}, update_rows=update_rows
    )
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    trainer.step()
    metrics = trainer.step()
    assert metrics["loss/judge_weighted"] == 0.0
    assert metrics["loss/total"] == pytest.approx(metrics["loss/policy"], rel=1e-6, abs=1e-7)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="frontier")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_ablation_flags_lam0_k0(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "k0"
    argv = ["train", "--model", str(sft_dir), "--out", str(run), "--selector", "metis"]
    argv += ["--metis-lam", "0", "--metis-k", "0", "--metis-m", "2", "--steps", "2"]
    argv += ["--levels", "2x20,3x20", "--train-size", "24", "--batch-size", "3"]
    argv += ["--group-size", "4", "--max-new-tokens", "12", "--judge-max-new-tokens", "6"]
    argv += ["--eval-size", "4", "--eval-samples", "2", "--eval-k", "1,2", "--no-tensorboard"]
    assert _cli(argv) == 0
    saved = json.loads((run / "run.json").read_text())["config"]
    assert saved["selector_overrides"] == {
        "judge_loss_weight": 0.0,
        "memory_size": 0,
        "pool_multiplier": 2,
    }
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [s for s in steps if "train/reward_mean" in s]
    assert len(train) == 2
    assert all(
        s["curriculum/metis/memory_entries"] == 0 and s["curriculum/metis/candidates"] == 6
        for s in train
    )
    assert train[-1]["loss/judge_weighted"] == 0.0
    assert (run / "eval.json").exists() and (run / "final" / "config.json").exists()
    capsys.readouterr()  # drop the train command's output
    assert _cli(["evaluate", "--compare", str(run)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| run | start eval/mean_score | eval/mean_score | eval/pass@1")
    assert "| k0 (metis) |" in table  # the run, and its selector
    # The failure taxonomy table: counts and shares per category, adding up to the failures.
    taxonomy = table.split("taxonomy (appendix B.4):")[1].strip().splitlines()
    assert taxonomy[0].startswith("| run | failed | format_error | wrong_target")
    cells = [c.strip() for c in taxonomy[2].strip("|").split("|")]
    assert cells[0] == "k0 (metis)"
    assert sum(int(c.split()[0]) for c in cells[2:]) == int(cells[1])
    with pytest.raises(UsageError, match="metis only"):
        _cli(["train", "--model", str(sft_dir), "--out", str(tmp_path / "u"), "--metis-k", "0"])


def test_a_constrained_judge_answers_only_allowed_values(sft_dir: Path, tmp_path: Path) -> None:
    from frontier_rft.lm.answer_constraint import AnswerConstraint
    from frontier_rft.selectors.metis.judge import ALLOWED_VALUES

    cfg = dataclasses.replace(METIS, judge_constrained=True, judge_max_new_tokens=24)
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    judge = trainer.judge
    assert isinstance(judge, PolicyJudge) and judge.constrained and judge.top_p == 1.0
    # The trie: each answer's tokens then EOS; off the list, EOS alone.
    constraint = AnswerConstraint(judge.tokenizer, judge.answers)
    eos = judge.tokenizer.eos_token_id
    first = {seq[0] for seq in constraint.sequences}
    assert constraint.allowed([]) == first
    whole = constraint.sequences[3]
    assert constraint.allowed(list(whole[:-1])) == {eos}
    assert constraint.allowed([-5]) == {eos}
    for _ in range(2):  # judged, trained on (the judge loss), judged again
        metrics = trainer.step()
        assert metrics["curriculum/metis/judge_failure_rate"] == 0.0
        values = [parse_judgment(r) for r in judge.last_responses]
        assert all(v in ALLOWED_VALUES for v in values), judge.last_responses[:4]


def test_a_constrained_judge_needs_room_for_its_answers(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(METIS, judge_constrained=True, judge_max_new_tokens=2)
    with pytest.raises(ValueError, match="raise judge_max_new_tokens from 2 to"):
        Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
