"""Backfill in the reference trainer (`backfill: replay`: the sampler wrapped in Backfill,
sampling/backfill.py, whose own checks are test_backfill_sampler.py's): on a pool whose
prompts are planted solved, unsolvable or mixed, a kept step fills the group slots it frees
with replayed mixed groups of earlier steps, and the rows that reach the policy's forward pass
(counted in the model's own calls) are exactly the fresh ones plus the replayed ones it
reports; staleness and max-uses bounds hold; the IS weight it reports is the one computed by
hand; resume is exact; bad settings are refused in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.cli.main import main
from frontier_rft.core.persistence import write_state_file
from frontier_rft.lm.rollout import TokenScores, score_completions
from frontier_rft.sampling.sampler_file import SAMPLER_FILE
from frontier_rft.sampling.step import StepSamples
from frontier_rft.training.config import train_config
from frontier_rft.training.grpo import Trainer
from frontier_rft.training.policy_loss import policy_loss
from helpers import assert_state_equal
from test_kept_rows_training import CONFIG as KEPT
from test_kept_rows_training import MIXED, Counted, counting

pytestmark = pytest.mark.integration

CONFIG = dataclasses.replace(KEPT, backfill="replay", steps=10)
"""skip-kept over 12 planted prompts in batches of 3, with backfill: epoch 1 (steps 0-3) rolls
out every prompt and stores the mixed groups; from epoch 2 the skip frees slots."""


def replayed(samples: StepSamples) -> list[tuple[int, int, list[list[int]]]]:
    """The (task, step sampled, completions) of a step's replayed groups, in order."""
    train = samples.train
    first = train.num_groups - samples.replayed
    return [
        (int(train.task_ids[g]), int(train.steps[g]), train.payload_parts(g)[0])
        for g in range(first, train.num_groups)
    ]


def recording_draws(trainer: Trainer) -> list[list[tuple[int, int, list[list[int]]]]]:
    """Per step: the (task, step sampled, completions) of the groups the sampler replays."""
    draws: list[list[tuple[int, int, list[list[int]]]]] = []
    sampler = trainer.sampler
    original = sampler.sample

    def sample(*args: Any) -> StepSamples:
        samples = original(*args)
        draws.append(replayed(samples))
        return samples

    sampler.sample = sample  # type: ignore[method-assign]
    return draws


def test_a_kept_step_trains_exactly_the_replayed_rows_it_reports(
    sft_dir: Path, tmp_path: Path
) -> None:
    trainer = Trainer(CONFIG, sft_dir, tmp_path / "run", log=lambda _: None)
    n, batch = CONFIG.group_size, CONFIG.batch_size
    pad = trainer.model.generation_config.pad_token_id
    draws = recording_draws(trainer)
    replayed_any = False
    with counting(trainer) as steps:
        for s in range(CONFIG.steps):
            steps.append(Counted())
            metrics = trainer.step()
            step, kept, drawn = steps[-1], steps[-1].generated, draws[-1]
            freed = batch - len(kept)
            assert metrics["backfill/replayed_groups"] == len(drawn) <= freed
            assert metrics["backfill/replayed_rows"] == len(drawn) * n
            assert metrics["train/rollouts"] == len(kept) * n  # nothing generated for a replay
            # loss_scale batch: replayed groups count as fresh ones in (trained) / B
            assert metrics["train/loss_scale"] == (len(kept) + len(drawn)) / batch
            # the policy's forward pass sees the fresh rows and the replayed ones, nothing more
            assert step.completion_rows == metrics["train/trained_rows"]
            assert step.completion_rows == (len(kept) + len(drawn)) * n
            assert all(task in MIXED for task, _, _ in drawn), "a flat group was replayed"
            # ...their prompts in order: the kept ones, then the replayed ones (a group on the
            # prompt of the row before it shares that row's prompt pass)
            order = [*kept, *(task for task, _, _ in drawn)]
            runs = [t for i, t in enumerate(order) if i == 0 or order[i - 1] != t]
            got = [[t for t in row if t != pad] for row in step.prompt_rows]
            assert got == [list(trainer.prompt_ids[t]) for t in runs]
            if s < 4:
                assert not drawn  # epoch 1 frees no slot
            if drawn:
                replayed_any = True
                staleness = np.mean([s - at for _, at, _ in drawn])
                assert metrics["backfill/staleness_mean"] == pytest.approx(staleness)
    assert replayed_any, "no step replayed a group"


def test_staleness_uses_and_capacity_are_bounded(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(
        CONFIG, backfill_max_age=2, backfill_max_uses=2, backfill_buffer=3, steps=12
    )
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    draws = recording_draws(trainer)
    assert trainer.sampler.replays  # Backfill, found by its fact, not its class
    uses: dict[tuple[int, int], int] = {}
    for s in range(config.steps):
        trainer.step()
        assert trainer.sampler.store.size <= 3  # type: ignore[attr-defined]
        for task, at, _ in draws[-1]:
            assert 1 <= s - at <= 2, "a group older than backfill_max_age was replayed"
            uses[(task, at)] = uses.get((task, at), 0) + 1
    assert uses, "nothing was replayed"
    assert max(uses.values()) <= 2
    assert 2 in uses.values(), "no group was replayed twice"


def test_the_is_weight_is_the_hand_computed_one(sft_dir: Path, tmp_path: Path) -> None:
    """At the step that replays, the policy before the update scores the replayed completions:
    r = exp(log pi_now - log pi_behaviour) per token, its token mean and clipped share."""
    trainer = Trainer(CONFIG, sft_dir, tmp_path / "run", log=lambda _: None)
    expected: list[tuple[float, float]] = []
    original = trainer.sampler.sample

    def sample(*args: Any) -> StepSamples:
        samples = original(*args)
        behaviour = iter(samples.behaviour)  # the replayed rows', in order
        ratios = []
        for task, _, completions in replayed(samples):
            with torch.no_grad():
                lp = score_completions(
                    trainer.model,
                    [trainer.prompt_ids[task]] * len(completions),
                    completions,
                    temperature=CONFIG.temperature,
                ).logprobs
            for i, c in enumerate(completions):
                ratios.append(np.exp(lp[i, : len(c)].numpy() - next(behaviour)))
        r = np.concatenate(ratios) if ratios else np.zeros(0)
        eps = CONFIG.clip_eps
        expected.append(
            (float(r.mean()), float(((r < 1 - eps) | (r > 1 + eps)).mean())) if r.size else (0, 0)
        )
        return samples

    trainer.sampler.sample = sample  # type: ignore[method-assign]
    seen = 0
    for _ in range(8):
        metrics = trainer.step()
        mean, clipped = expected[-1]
        if metrics["backfill/replayed_groups"]:
            seen += 1
            assert mean != 1.0  # the policy moved since they were sampled
            assert metrics["backfill/is_weight_mean"] == pytest.approx(mean, rel=1e-5)
            assert metrics["backfill/clipped_share"] == pytest.approx(clipped)
    assert seen


def test_the_dual_clip_loss_on_a_tiny_case() -> None:
    """One replayed row of three tokens, A = -1, eps 0.2, cap 3, ratios 0.5, 1.1, 5: the terms
    are max(min(r, 3), clip(r, 0.8, 1.2)) = 0.8, 1.1, 3 (a fresh row, cap inf: 0.8, 1.1, 5)."""
    ratios = torch.tensor([[0.5, 1.1, 5.0]])
    old = torch.zeros(1, 3)
    scores = TokenScores(logprobs=torch.log(ratios), mask=torch.ones(1, 3), entropy=None)
    config = dataclasses.replace(CONFIG, clip_eps=0.2, backfill_is_cap=3.0)
    adv = torch.tensor([-1.0])
    capped = policy_loss(scores, adv, old, None, config, caps=torch.tensor([3.0]))
    assert float(capped.total) == pytest.approx((0.8 + 1.1 + 3.0) / 3)
    fresh = policy_loss(scores, adv, old, None, config, caps=torch.tensor([float("inf")]))
    plain = policy_loss(scores, adv, old, None, config)
    assert float(fresh.total) == float(plain.total) == pytest.approx((0.8 + 1.1 + 5.0) / 3)


def _trace(trainer: Trainer, steps: int) -> list[Any]:
    out = []
    for _ in range(steps):
        m = trainer.step()
        out.append(
            (
                trainer.last["ids"].tolist(),
                trainer.last["rewards"].tolist(),
                {k: v for k, v in m.items() if k.startswith("backfill/")},
            )
        )
    return out


EXACT = ("backfill/replayed_groups", "backfill/replayed_rows", "backfill/staleness_mean")


def test_resume_is_exact_with_groups_in_the_buffer(sft_dir: Path, tmp_path: Path) -> None:
    """The buffer (the sampler's state) comes back bit for bit (completions, rewards, float32
    behaviour log-probs, uses), and the resumed run draws and replays what the straight one
    did. (Two straight runs of this kept config already differ in the last bits of their
    weights on this CPU, backfill off included, and the drift grows with the steps: a fresh
    clone's run under load saw 2.6e-5 relative at step 9, so the IS weight is compared to 1e-4.)"""
    config = dataclasses.replace(CONFIG, steps=9)
    straight = Trainer(config, sft_dir, tmp_path / "a", log=lambda _: None)
    expected = _trace(straight, 9)
    assert sum(m["backfill/replayed_groups"] for *_, m in expected[5:]) > 0
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    got = _trace(first, 5)
    assert first.sampler.replays and first.sampler.store.size  # type: ignore[attr-defined]
    saved = first.sampler.state_dict(with_inner=False)
    first.save()
    del first
    resumed = Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert resumed.sampler.replays
    assert_state_equal(resumed.sampler.state_dict(with_inner=False), saved)
    got += _trace(resumed, 4)
    assert [(i, r) for i, r, _ in got] == [(i, r) for i, r, _ in expected]
    for (*_, m), (*_, e) in zip(got, expected, strict=True):
        assert {k: m[k] for k in EXACT} == {k: e[k] for k in EXACT}
        assert m["backfill/buffer_groups"] == e["backfill/buffer_groups"]
        assert m["backfill/is_weight_mean"] == pytest.approx(e["backfill/is_weight_mean"], 1e-4)


def test_a_damaged_buffer_refuses_the_resume_in_one_line(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(CONFIG, steps=5)
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    _trace(first, 5)
    ckpt = first.save()
    state = first.sampler.state_dict(with_inner=False)
    state["backfill"]["behaviour"] = state["backfill"]["behaviour"][:-1]  # one token short
    write_state_file(ckpt / SAMPLER_FILE, first.sampler.kind, {"state": state})
    before = sorted(p.name for p in (tmp_path / "b").rglob("*"))
    with pytest.raises(ValueError, match="log-probs do not match the held completions") as err:
        Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert "\n" not in str(err.value) and str(err.value).endswith("start a new --out")
    assert sorted(p.name for p in (tmp_path / "b").rglob("*")) == before


def test_a_checkpoint_with_the_buffer_in_trainer_json_is_refused(
    sft_dir: Path, tmp_path: Path
) -> None:
    """An earlier frontier_rft kept the buffer in trainer.json: refused in one line, the fix
    named, before anything is loaded or written."""
    config = dataclasses.replace(CONFIG, steps=2)
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    _trace(first, 2)
    ckpt = first.save()
    saved = json.loads((ckpt / "trainer.json").read_text())
    (ckpt / "trainer.json").write_text(json.dumps({**saved, "backfill": []}))
    before = sorted(p.name for p in (tmp_path / "b").rglob("*"))
    with pytest.raises(ValueError, match=r"keeps backfill's replay buffer in trainer.json") as err:
        Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert "\n" not in str(err.value) and str(err.value).endswith("start a new --out")
    assert sorted(p.name for p in (tmp_path / "b").rglob("*")) == before


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backfill": "replay"}, "fills the group slots a step frees, which sampler 'passthrough'"),
        ({"backfill": "yes"}, "backfill"),
        ({"backfill_is_cap": 1.0}, "backfill_is_cap must be a finite number > 1"),
        ({"backfill_max_uses": 0}, "backfill_max_uses must be a positive int"),
        ({"backfill_max_age": 0}, "backfill_max_age must be a positive int"),
        ({"backfill_buffer": -1}, "backfill_buffer must be a positive int"),
    ],
)
def test_bad_settings_are_refused_by_name(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        train_config(fields)


def test_the_cli_refuses_backfill_without_kept_rollouts_in_one_line(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["train", "--model", str(sft_dir), "--out", str(out), "--backfill", "replay"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--rollouts kept" in err and "Traceback" not in err
    assert not out.exists()  # refused before anything is written


def test_the_page_documents_every_backfill_field_with_its_default() -> None:
    from frontier_rft.training.config import TrainConfig

    page = (Path(__file__).parent.parent / "docs/selectors/fewer_rollouts.md").read_text()
    section = page[page.index("### Backfill") :]
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[2].strip(" `")
        for line in section.splitlines()
        if line.startswith("| `backfill")
    }
    fields = [f for f in dataclasses.fields(TrainConfig) if f.name.startswith("backfill")]
    assert rows == {f.name: str(f.default) for f in fields}
    for metric in ("replayed_groups", "replayed_rows", "staleness_mean", "is_weight_mean"):
        assert f"backfill/{metric}" in section
