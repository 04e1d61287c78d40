"""Shadows in the TRL adapter on the real tiny GRPOTrainer (CPU): the run is the same with and
without them, they see what the selector sees and each completion's generated tokens (so they
report tokens saved), their metrics reach TRL's logs and the JSONL file, and a resumed run
continues them exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from test_trl import NUM_GENERATIONS, LogRecorder, RecordingReward, UpdateSpy, grpo, pool

from frontier_rft import make_selector
from frontier_rft.integrations.trl import FrontierConfig
from frontier_rft.integrations.trl.state import state_digest
from frontier_rft.shadow.rule import Shadow, ShadowConfig

RULES = ["greso", "screen2", "greso+screen2"]
STEPS = 8


def _run(
    out: Path, shadows: list[str] | None, reward: RecordingReward | None = None, **kw: Any
) -> tuple[Any, UpdateSpy, LogRecorder]:
    selector = make_selector("uniform", pool(), seed=0)
    spy, recorder = UpdateSpy(selector), LogRecorder()
    trainer = grpo(
        out,
        selector,
        steps=STEPS,
        callbacks=[recorder],
        frontier=FrontierConfig(shadows=shadows),
        rewards=None if reward is None else [reward],
        **kw,
    )
    return trainer, spy, recorder


def _weights(trainer: Any) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in trainer.model.parameters()]


def test_shadows_change_nothing_and_see_what_the_selector_sees(tmp_path: Path) -> None:
    plain, plain_spy, _ = _run(tmp_path / "plain", None)
    plain.train()
    reward = RecordingReward()
    shadowed, spy, recorder = _run(tmp_path / "shadowed", RULES, reward)
    shadowed.train()
    # The same batches, rewards and weights: the shadows trained nothing and drew nothing.
    np.testing.assert_array_equal(spy.ids(), plain_spy.ids())
    np.testing.assert_array_equal(spy.rewards(), plain_spy.rewards())
    for a, b in zip(_weights(shadowed), _weights(plain), strict=True):
        np.testing.assert_array_equal(a, b)
    # Each completion's generated tokens, as the reward function was passed them: what TRL
    # counts in its own completions/mean_length (a generation a step, 4 prompts x 4).
    lengths = np.asarray(reward.lengths).reshape(STEPS, -1)
    trl_means = [c["completions/mean_length"] for c in recorder.logs if "loss" in c]
    np.testing.assert_allclose(lengths.mean(axis=1), trl_means)
    # Each shadow equals one fed by hand the selector's feedback and those lengths, group by
    # group: its token counts are the run's generated tokens.
    for shadow in shadowed.frontier_shadows.shadows:
        config = ShadowConfig.parse(shadow.name)
        inner = make_selector(config.selector, pool(), seed=0) if config.selector else None
        by_hand = Shadow(config, inner, pool().num_tasks, seed=0)
        for (ids, rewards, step), sizes in zip(spy.calls, lengths, strict=True):
            drawn = ids[::NUM_GENERATIONS]
            by_hand.observe(step, drawn, rewards, NUM_GENERATIONS, sizes)
        assert state_digest(by_hand.state_dict()) == state_digest(shadow.state_dict())
        assert shadow.passes()[-1]["tokens"] == lengths.sum()
    metrics = shadowed.frontier_metrics()
    assert metrics["shadow/screen2/rollouts_saved"] > 0  # always-0 and always-1 prompts
    assert metrics["shadow/screen2/tokens_saved"] > 0
    # In TRL's logs (what every report_to backend receives) and in the JSONL file.
    last = [c for c in recorder.logs if "loss" in c][-1]
    for rule in RULES:
        for key in ("rollouts_saved", "skip_precision", "informative_lost", "tokens_saved_share"):
            name = f"curriculum/shadow/{rule}/{key}"
            if np.isfinite(metrics[f"shadow/{rule}/{key}"]):
                assert last[name] == metrics[f"shadow/{rule}/{key}"], name
    lines = (tmp_path / "shadowed" / "frontier_metrics.jsonl").read_text().splitlines()
    logged = json.loads(lines[-2])  # the last: the shadows' end-of-run summary
    assert (
        logged["curriculum/shadow/greso+screen2/rollouts_saved"]
        == (metrics["shadow/greso+screen2/rollouts_saved"])
    )
    assert not any(k.startswith("curriculum/shadow/") for k in plain.frontier_metrics())


def test_resume_restores_the_shadows_exactly(tmp_path: Path) -> None:
    full, _, _ = _run(tmp_path / "full", RULES, save_strategy="steps", save_steps=4)
    full.train()
    ckpt = tmp_path / "full" / "checkpoint-4"
    assert (ckpt / "frontier_shadow2.npz").is_file()
    resumed, _, _ = _run(tmp_path / "resumed", RULES)
    resumed.train(resume_from_checkpoint=str(ckpt))
    for a, b in zip(resumed.frontier_shadows.shadows, full.frontier_shadows.shadows, strict=True):
        assert state_digest(a.state_dict()) == state_digest(b.state_dict()), a.name
    # A run with other shadows refuses the checkpoint, changing nothing.
    other, _, _ = _run(tmp_path / "other", ["greso", "screen3"])
    before = [state_digest(s.state_dict()) for s in other.frontier_shadows.shadows]
    with pytest.raises(ValueError, match="holds shadow 'screen2', not 'screen3'"):
        other.load_frontier_state(ckpt)
    assert [state_digest(s.state_dict()) for s in other.frontier_shadows.shadows] == before


def test_a_screen_not_below_num_generations_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs num_generations above 4"):
        _run(tmp_path / "bad", ["screen4"])


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
@pytest.mark.parametrize("rules", [["screen2", "greso"], ["skip"]])
def test_a_reward_a_shadow_refuses_changes_nothing_and_names_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: list[str]
) -> None:
    # sec reads any finite reward; greso's and skip's shadows read [0, 1]: a step's rewards
    # are refused before the selector or any shadow moves (screen2 no longer observes first).
    trainer = grpo(
        tmp_path,
        make_selector("sec", pool(), seed=0),
        steps=1,
        frontier=FrontierConfig(shadows=rules),
    )
    ids = np.repeat([3, 5], NUM_GENERATIONS)
    rewards = np.tile([0.0, 1.0, 0.0, 1.0], 2)
    rewards[5] = 1.5
    inputs = [{"task_id": int(t)} for t in ids]
    lengths = np.full(rewards.size, 3, dtype=np.int64)
    monkeypatch.setattr(
        trainer.frontier_run.tap, "take", lambda: (rewards[:, None].copy(), None, lengths)
    )

    def everything() -> list[Any]:
        readers = [trainer.frontier_selector] + [
            s.selector for s in trainer.frontier_shadows.shadows if s.selector is not None
        ]
        return [
            state_digest(trainer.frontier_selector.state_dict()),
            [state_digest(s.state_dict()) for s in trainer.frontier_shadows.shadows],
            [r.rng.bit_generator.state for r in readers],
            dict(trainer.frontier_run.counters),
        ]

    before = everything()
    who = "greso" if "greso" in rules else "skip"
    with pytest.raises(
        ValueError, match=rf"task 5 is 1.5, out of range: shadow '{who}' needs rewards in \[0, 1\]"
    ):
        trainer._frontier_deliver(inputs)
    assert everything() == before
    rewards[5] = 1.0
    trainer._frontier_deliver(inputs)  # the retry lands once, on the selector and every shadow
    assert all(s.metrics()["epoch"] == 1 for s in trainer.frontier_shadows.shadows)
    assert all(s.passes()[-1]["tokens"] == 3 * 8 for s in trainer.frontier_shadows.shadows)
