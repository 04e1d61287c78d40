"""Rescue rollouts in the reference trainer (`rescue: N`): on a pool whose prompts are planted
solved, never solvable, solvable only by a rescue, or mixed, exactly the all-wrong groups of
prompts never solved get N more rollouts each, in the same step; the counters equal the hand
counts; a rescued group trains as one joined group of n + N with the advantages computed by
hand; a prompt once solved is never rescued; resume is exact; bad settings are refused in one
line, a damaged record refuses the resume with the run unchanged."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.bench.real_rl.device_seconds import step_shape
from frontier_rft.cli.main import main
from frontier_rft.core.advantages import GRPO_STD_EPS
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.training.config import train_config
from frontier_rft.training.grpo import Trainer
from test_kept_rows_training import CONFIG as KEPT

pytestmark = pytest.mark.integration

N = 2
"""Rescue rollouts a group gets (the planted rollout tells them from a group of n = 4 by size)."""
CONFIG = dataclasses.replace(KEPT, rescue=N, steps=8)
"""skip-kept over 12 planted prompts in batches of 3 (two of uniform's epochs), with rescue."""
PLAIN = dataclasses.replace(
    CONFIG, selector="uniform", sampler="passthrough", sampler_config={}, steps=4
)
"""The same pool with plain GRPO (every step B x n)."""
SOLVED, NEVER, RESCUABLE, MIXED = (set(range(a, a + 3)) for a in (0, 3, 6, 9))
"""Planted: 0-2 every rollout correct; 3-5 none ever (a rescue included); 6-8 every group of
n all-wrong, a rescue's first rollout correct; 9-11 half of each group."""


def planted(task: int, size: int) -> np.ndarray:
    if task in SOLVED:
        return np.ones(size)
    if task in MIXED:
        return np.arange(size) % 2 * 1.0
    if task in RESCUABLE and size == N:  # a rescue call: N rollouts
        return np.eye(1, size).ravel()
    return np.zeros(size)


def plant(trainer: Trainer) -> list[list[list[int]]]:
    """Plant the outcomes; per step, the prompts of each rollout call (the sampler's, then
    the rescue's)."""
    calls: list[list[list[int]]] = []
    original = trainer._rollout
    step_of = [-1]

    def rollout(ids: np.ndarray, counts: np.ndarray) -> Any:
        completions, _, seconds, padded = original(ids, counts)
        if step_of[0] != trainer.step_count:
            step_of[0] = trainer.step_count
            calls.append([])
        calls[-1].append(ids.tolist())
        rewards = np.concatenate(
            [planted(int(t), int(c)) for t, c in zip(ids, counts, strict=True)]
        )
        return completions, rewards, seconds, padded

    trainer._rollout = rollout  # type: ignore[method-assign]
    return calls


def rescue_of(trainer: Trainer) -> Rescue:
    """The trainer's sampler: Rescue around the config's sampler (built once, from the config)."""
    assert isinstance(trainer.sampler, Rescue)
    return trainer.sampler


def hand_advantages(groups: list[np.ndarray]) -> np.ndarray:
    """GRPO's (r - mean) / (std + eps) per group, by hand (population std)."""
    out = []
    for r in groups:
        std = math.sqrt(float(np.mean((r - r.mean()) ** 2)))
        out.append((r - r.mean()) / (std + GRPO_STD_EPS))
    return np.concatenate(out)


@pytest.mark.parametrize("config", [CONFIG, PLAIN], ids=["kept", "passthrough"])
def test_never_solved_all_wrong_groups_get_exactly_n_more(
    sft_dir: Path, tmp_path: Path, config: Any
) -> None:
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    calls = plant(trainer)
    n = config.group_size
    solved: set[int] = set()
    total = 0
    rescued_ever: list[int] = []
    for _ in range(config.steps):
        metrics = trainer.step()
        sampled, *rest = calls[-1]
        assert len(rest) <= 1
        # this step's own groups first: a prompt solved in them is not rescued
        solved |= {t for t in sampled if t in SOLVED | MIXED}
        tried = [t for t in sampled if t not in solved]
        rescued = [t for t in tried if t in RESCUABLE]
        assert (rest[0] if rest else []) == tried  # the all-wrong never-solved ones, in order
        assert not set(tried) & (SOLVED | MIXED), "a solved prompt was rescued"
        assert metrics["rescue/rollouts"] == N * len(tried)
        assert metrics["rescue/groups_tried"] == len(tried)
        assert metrics["rescue/groups_rescued"] == len(rescued)
        # the bill: the sampler's rollouts and the rescue's
        total += n * len(sampled) + N * len(tried)
        assert metrics["train/rollouts"] == n * len(sampled) + N * len(tried)
        assert metrics["train/rollouts_total"] == total
        # a rescued group trains its n + N rows; the others their n
        assert metrics["train/trained_rows"] == n * len(sampled) + N * len(rescued)
        assert metrics["train/groups_trained"] == len(sampled)
        # the device bill counts the rescue's call as a call of its own, rows as they were
        rescue_call = [N * len(tried)] if tried else []
        assert step_shape(metrics, 24).calls == (n * len(sampled), *rescue_call)
        solved |= set(rescued)
        rescued_ever += rescued
        assert metrics["rescue/prompts_solved"] == len(solved)
        assert set(np.flatnonzero(rescue_of(trainer).solved).tolist()) == solved
    assert rescued_ever, "no group was rescued"
    assert len(rescued_ever) == len(set(rescued_ever)), "a prompt was rescued after it was solved"


def test_a_rescued_group_trains_joined_with_hand_computed_advantages(
    sft_dir: Path, tmp_path: Path
) -> None:
    """A step of plain GRPO over [rescuable, solved, never]: the rescuable group (0, 0, 0, 0)
    joined to its rescue (1, 0) trains as one group of 6 with A = (r - 1/6) / (sqrt(5) / 6),
    the never-solved one stays flat (its rescue all-wrong), the solved one flat."""
    config = dataclasses.replace(PLAIN, steps=1)
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    calls = plant(trainer)
    trainer.selector.select = lambda k: np.array([6, 0, 3], dtype=np.int64)  # type: ignore[method-assign]
    metrics = trainer.step()
    assert calls == [[[6, 0, 3], [6, 3]]]
    joined = np.array([0, 0, 0, 0, 1, 0], dtype=np.float64)
    expected = hand_advantages([joined, np.ones(4), np.zeros(4)])
    assert expected[4] == pytest.approx(math.sqrt(5), rel=1e-5)  # the correct rescue rollout
    assert expected[0] == pytest.approx(-1 / math.sqrt(5), rel=1e-5)
    assert trainer.last["advantages"] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert metrics["rescue/groups_rescued"] == 1 and metrics["train/trained_rows"] == 14
    # what the sampler rolled out is what the step's reward metrics describe
    assert trainer.last["ids"].tolist() == [6, 0, 3]
    assert metrics["train/reward_mean"] == pytest.approx(4 / 12)
    assert metrics["train/distinct_prompts_trained"] == 1  # the rescued group is mixed


def _trace(trainer: Trainer, steps: int) -> list[Any]:
    out = []
    for _ in range(steps):
        m = trainer.step()
        rescue = {k: v for k, v in m.items() if k.startswith("rescue/") and "tokens" not in k}
        out.append((trainer.last["ids"].tolist(), m["train/rollouts"], rescue))
    return out


def test_resume_is_exact(sft_dir: Path, tmp_path: Path) -> None:
    """The solved record crosses the checkpoint: a rescuable prompt rescued before the save
    is not rescued again after the resume, as in the straight run."""
    straight = Trainer(CONFIG, sft_dir, tmp_path / "a", log=lambda _: None)
    plant(straight)
    expected = _trace(straight, 8)
    first = Trainer(CONFIG, sft_dir, tmp_path / "b", log=lambda _: None)
    plant(first)
    got = _trace(first, 4)
    assert rescue_of(first).solved[sorted(RESCUABLE)].all()
    saved = rescue_of(first).solved.copy()
    first.save()
    del first
    resumed = Trainer(CONFIG, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert np.array_equal(rescue_of(resumed).solved, saved)  # through the sampler's state
    plant(resumed)
    got += _trace(resumed, 4)
    assert got == expected


def test_an_earlier_record_in_trainer_json_refuses_the_resume_in_one_line(
    sft_dir: Path, tmp_path: Path
) -> None:
    """A checkpoint of an earlier frontier_rft kept the solved prompts in trainer.json; the
    sampler's state holds them now, so such a resume is refused, as Pilot-Commit's are."""
    config = dataclasses.replace(CONFIG, steps=2)
    first = Trainer(config, sft_dir, tmp_path / "b", log=lambda _: None)
    plant(first)
    _trace(first, 2)
    ckpt = first.save()
    saved = json.loads((ckpt / "trainer.json").read_text())
    assert "rescue_solved" not in saved
    saved["rescue_solved"] = [0, 6]
    (ckpt / "trainer.json").write_text(json.dumps(saved))
    before = sorted(p.name for p in (tmp_path / "b").rglob("*"))
    with pytest.raises(ValueError, match=r"rescue.s solved prompts in trainer\.json") as err:
        Trainer(config, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in (tmp_path / "b").rglob("*")) == before


def test_off_by_default_no_record_no_metrics(sft_dir: Path, tmp_path: Path) -> None:
    config = dataclasses.replace(PLAIN, rescue=0, steps=1)
    trainer = Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    calls = plant(trainer)
    metrics = trainer.step()
    assert not isinstance(trainer.sampler, Rescue) and len(calls[0]) == 1
    assert not any(k.startswith("rescue/") for k in metrics)
    ckpt = trainer.save()
    assert "rescue_solved" not in json.loads((ckpt / "trainer.json").read_text())
    assert "rescue" not in trainer.sampler.state_dict()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rescue": -1}, "rescue must be an int >= 0"),
        ({"rescue": True}, "rescue must be an int"),
        ({"rescue": 2.5}, "rescue must be an int"),
        ({"rescue": 8, "sampler": "dynamic_sampling"}, "set rescue 0"),
        ({"rescue": 8, "sampler": "pilot_commit"}, "set rescue 0"),
        (
            {"rescue": 8, "sampler": "fewer_rollouts", "sampler_config": {"screen": 4}},
            "with screening",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        train_config(fields)


def test_the_cli_refuses_rescue_with_dapo_in_one_line(
    sft_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["train", "--model", str(sft_dir), "--out", str(out), "--rescue", "8"]
    code = main([*argv, "--dynamic-sampling"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "set rescue 0" in err and "Traceback" not in err
    assert not out.exists()  # refused before anything is written


def test_the_page_documents_rescue_its_cost_and_its_metrics() -> None:
    from frontier_rft.training.config import TrainConfig

    page = (Path(__file__).parent.parent / "docs/selectors/fewer_rollouts.md").read_text()
    section = page[page.index("### Rescue") :]
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[2].strip(" `")
        for line in section.splitlines()
        if line.startswith("| `rescue")
    }
    default = next(f.default for f in dataclasses.fields(TrainConfig) if f.name == "rescue")
    assert rows == {"rescue": str(default)}
    for metric in (
        "rollouts",
        "groups_tried",
        "groups_rescued",
        "prompts_solved",
        "generated_tokens",
    ):
        assert f"rescue/{metric}" in section
    assert "skip-predict-kept-w50-rescue" in section
