"""The reference trainer on a really tiny model: parameters move, the selector receives every
reward, advantages come from the shared estimators, clipping is real, resume is exact."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from frontier_rft.core.advantages import group_advantages
from frontier_rft.lm.rollout import TokenScores
from frontier_rft.training.grpo import Trainer
from frontier_rft.training.policy_loss import PolicyLoss, aggregate, policy_loss
from frontier_rft.training.run_files import truncate_logs
from test_training_model import TEST_TRAIN

pytestmark = pytest.mark.integration


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _mixed_step(trainer: Trainer, tries: int = 6) -> dict[str, float]:
    """Steps until one has a non-zero advantage (sampling may give all-equal groups)."""
    for _ in range(tries):
        metrics = trainer.step()
        if np.any(trainer.last["advantages"] != 0):
            return metrics
    pytest.fail("no step with reward variance: the tiny SFT model no longer gives mixed groups")


def test_step_updates_parameters_and_feeds_every_reward(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector="prioritized")
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    before = _params(trainer.model)
    metrics = _mixed_step(trainer)
    after = _params(trainer.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    # Every rollout's reward reached the selector, one group per selected task.
    trainer.selector.flush()
    sel = trainer.selector.metrics()
    steps = trainer.step_count
    assert sel["feedback/rollouts"] == steps * cfg.batch_size * cfg.group_size
    assert sel["feedback/groups"] == steps * cfg.batch_size
    last = trainer.last
    assert len(last["ids"]) == cfg.batch_size and last["rewards"].shape == (12,)
    groups = last["rewards"].reshape(cfg.batch_size, cfg.group_size)
    assert sel["feedback/effective_task_ratio"] == pytest.approx(
        float((groups.var(axis=1) > 0).mean())
    )
    assert metrics["train/effective_task_ratio"] == pytest.approx(
        float((groups.var(axis=1) > 0).mean())
    )
    # The rewards are the verifier's: recompute them for the logged step is not possible
    # without the texts, but they lie on Countdown's reward grid {0, 0.1, 1}.
    assert set(np.round(last["rewards"], 6)) <= {0.0, 0.1, 1.0}
    for key in (
        "train/reward_mean",
        "train/mean_abs_advantage",
        "perf/select_ms",
        "perf/tokens_per_s",
        "loss/policy",
        "loss/total",
        "policy/entropy",
        "curriculum/prioritized/heap_size",
    ):
        assert key in metrics, key


@pytest.mark.parametrize("estimator", ["grpo", "drgrpo", "rloo"])
def test_advantages_are_the_shared_estimators(
    sft_dir: Path, tmp_path: Path, estimator: str
) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, estimator=estimator)
    trainer = Trainer(cfg, sft_dir, tmp_path / estimator, log=lambda _: None)
    metrics = trainer.step()
    rewards, adv = trainer.last["rewards"], trainer.last["advantages"]
    offsets = np.arange(0, rewards.size + 1, cfg.group_size)
    np.testing.assert_array_equal(adv, group_advantages(rewards, offsets, estimator))
    flat = rewards.reshape(-1, cfg.group_size)
    same = np.repeat(flat.var(axis=1) == 0, cfg.group_size)
    assert np.all(adv[same] == 0.0)  # an all-equal group carries no signal
    assert metrics["train/mean_abs_advantage"] == pytest.approx(float(np.abs(adv).mean()))


def test_policy_loss_clips_and_aggregates() -> None:
    cfg = dataclasses.replace(TEST_TRAIN, clip_eps=0.2, max_new_tokens=4)
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    old = torch.zeros(2, 4)
    # Ratio exp(0.5) = 1.65 > 1.2 with positive advantage: clipped, no gradient.
    logp = torch.full((2, 4), 0.5, requires_grad=True)
    loss = policy_loss(TokenScores(logp, mask, None), torch.tensor([1.0, 1.0]), old, None, cfg)
    loss.total.backward()
    assert logp.grad is not None and torch.all(logp.grad == 0)
    assert loss.parts["policy/clip_fraction"] == 1.0
    # With negative advantage the unclipped (pessimistic) branch keeps the gradient.
    logp2 = torch.full((2, 4), 0.5, requires_grad=True)
    loss2 = policy_loss(TokenScores(logp2, mask, None), torch.tensor([-1.0, -1.0]), old, None, cfg)
    loss2.total.backward()
    assert logp2.grad is not None and torch.all(logp2.grad[mask > 0] > 0)
    # At ratio 1 the loss is -mean(A) over tokens; the three aggregations differ as specified.
    values = torch.tensor([[2.0, 4.0, 9.0, 9.0], [1.0, 1.0, 1.0, 1.0]])
    assert float(aggregate(values, mask, "token_mean", 4)) == pytest.approx(10 / 6)
    assert float(aggregate(values, mask, "sequence_mean", 4)) == pytest.approx((3 + 1) / 2)
    assert float(aggregate(values, mask, "constant", 4)) == pytest.approx(10 / 8)


def test_kl_entropy_and_ppo_epochs(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, kl_coef=0.1, entropy_coef=0.01, ppo_epochs=3)
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    first = trainer.step()
    assert first["loss/kl"] == pytest.approx(0.0, abs=1e-6)  # policy == reference at start
    assert first["policy/entropy"] > 0
    assert first["policy/ratio_mean"] == pytest.approx(1.0)
    mixed = _mixed_step(trainer)
    assert mixed["policy/clip_fraction_last_epoch"] > 0  # later epochs clip for real
    assert mixed["policy/ratio_mean_last_epoch"] != pytest.approx(1.0, abs=1e-6)
    later = trainer.step()
    assert later["loss/kl"] > 0  # the policy has moved away from the frozen start model


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_precision_sets_the_forward_dtype_and_weights_stay_float32(
    sft_dir: Path, tmp_path: Path, precision: str
) -> None:
    cfg = dataclasses.replace(
        TEST_TRAIN, precision=precision, temperature=0.7, top_p=0.9, kl_coef=0.1, ppo_epochs=2
    )
    trainer = Trainer(cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    seen: list[torch.dtype] = []
    hook = trainer.model.lm_head.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    before = _params(trainer.model)
    metrics = _mixed_step(trainer)
    result = trainer.evaluate()
    hook.remove()
    want = torch.bfloat16 if precision == "bf16" else torch.float32
    assert seen and set(seen) == {want}  # rollouts, scoring and evaluation alike
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    after = _params(trainer.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    for key in ("loss/total", "loss/kl", "policy/entropy", "policy/ratio_mean_last_epoch"):
        assert np.isfinite(metrics[key]), key
    assert 0.0 <= result.pass_at[1] <= 1.0
    assert "perf/gpu_peak_gb" not in metrics  # a CUDA-only metric


def _history(run: Path) -> list[dict[str, float]]:
    drop = ("time", "perf/", "curriculum/select/overhead_ms", "curriculum/metis/judge_ms")
    out = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out.append({k: v for k, v in rec.items() if not k.startswith(drop)})
    return out


@pytest.mark.parametrize("selector", ["bots", "metis"])
def test_resume_is_exact(sft_dir: Path, tmp_path: Path, selector: str) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector=selector, steps=4, eval_every=0)
    straight = Trainer(cfg, sft_dir, tmp_path / "a", log=lambda _: None)
    ids_a = []
    while straight.step_count < 4:  # the loop of Trainer.train, recording selected ids
        straight.sink.log(straight.step(), straight.step_count)
        ids_a.append(straight.last["ids"].tolist())
    straight.sink.close()

    first = Trainer(cfg, sft_dir, tmp_path / "b", log=lambda _: None)
    ids_b = []
    for _ in range(2):
        first.sink.log(first.step(), first.step_count)
        ids_b.append(first.last["ids"].tolist())
    first.save()
    first.step()  # work after the checkpoint that a crash loses
    first.sink.log({"train/reward_mean": -1.0}, 3)
    first.sink.close()
    with open(tmp_path / "b" / "metrics.jsonl", "a") as fh:  # killed while writing a line
        fh.write('{"step": 4, "train/rew')
    del first

    resumed = Trainer(cfg, sft_dir, tmp_path / "b", resume=True, log=lambda _: None)
    assert resumed.step_count == 2
    while resumed.step_count < 4:
        resumed.sink.log(resumed.step(), resumed.step_count)
        ids_b.append(resumed.last["ids"].tolist())
    resumed.sink.close()

    assert ids_a == ids_b
    hist_a, hist_b = _history(tmp_path / "a"), _history(tmp_path / "b")
    assert len(hist_a) == len(hist_b) == 4
    for rec_a, rec_b in zip(hist_a, hist_b, strict=True):
        assert rec_a.keys() == rec_b.keys()
        for key in rec_a:
            if rec_a[key] is None:
                assert rec_b[key] is None, key
            else:
                assert rec_b[key] == pytest.approx(rec_a[key], rel=1e-6, abs=1e-7), key
    pa, pb = _params(straight.model), _params(resumed.model)
    assert all(torch.allclose(pa[k], pb[k], rtol=0, atol=1e-6) for k in pa)


def test_resume_purges_tensorboard_steps_after_the_checkpoint(
    sft_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = dataclasses.replace(TEST_TRAIN, steps=3, eval_every=0, tensorboard=True)
    first = Trainer(cfg, sft_dir, tmp_path, log=lambda _: None)
    for _ in range(2):
        first.sink.log(first.step(), first.step_count)
    first.save()
    first.sink.log(first.step(), first.step_count)  # step 3: lost by a crash
    first.sink.close()
    resumed = Trainer(cfg, sft_dir, tmp_path, resume=True, log=lambda _: None)
    resumed.sink.log(resumed.step(), resumed.step_count)  # step 3 again
    resumed.sink.close()
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    steps = [e.step for e in events.Scalars("train/reward_mean")]
    assert steps == [1, 2, 3]  # as metrics.jsonl: no step twice
    assert [r["step"] for r in _history(tmp_path)] == [1, 2, 3]


def test_resume_names_a_deeply_nested_metrics_line_not_a_recursion_error(
    sft_dir: Path, tmp_path: Path
) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, steps=2, eval_every=0)
    first = Trainer(cfg, sft_dir, tmp_path, log=lambda _: None)
    first.sink.log(first.step(), first.step_count)
    first.save()
    first.sink.close()
    metrics = tmp_path / "metrics.jsonl"
    text = metrics.read_text() + "[" * 100_000 + "]" * 100_000 + "\n" + '{"step": 2}\n'
    metrics.write_text(text)
    with pytest.raises(ValueError, match=r"metrics.jsonl: line 2 is not a metrics record .*depth"):
        Trainer(cfg, sft_dir, tmp_path, resume=True, log=lambda _: None)
    assert metrics.read_text() == text


def test_resume_drops_a_torn_last_metrics_line_and_refuses_a_corrupt_one(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    records = [json.dumps({"step": s, "train/reward_mean": 0.5}) for s in (1, 2, 3)]
    path.write_text("\n".join(records) + '\n{"step": 4, "train/rew')  # killed mid-write
    said: list[str] = []
    truncate_logs(tmp_path, 2, said.append)
    assert path.read_text() == "\n".join(records[:2]) + "\n"
    assert said == ["metrics.jsonl ended in a torn line (a crash mid-write): dropped it"]
    truncate_logs(tmp_path, 2, said.append)  # idempotent: nothing torn any more
    assert len(said) == 1 and path.read_text() == "\n".join(records[:2]) + "\n"
    path.write_text(records[0] + "\n{garbage\n" + records[1] + "\n")
    with pytest.raises(ValueError, match="line 2 is not a metrics record"):
        truncate_logs(tmp_path, 2, said.append)


def test_fresh_run_refuses_to_overwrite_and_resume_needs_a_checkpoint(
    sft_dir: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="no checkpoint"):
        Trainer(TEST_TRAIN, sft_dir, tmp_path / "x", resume=True, log=lambda _: None)
    trainer = Trainer(TEST_TRAIN, sft_dir, tmp_path / "x", log=lambda _: None)
    trainer.step()
    trainer.save()
    with pytest.raises(ValueError, match="--resume"):
        Trainer(TEST_TRAIN, sft_dir, tmp_path / "x", log=lambda _: None)
    latest = (tmp_path / "x" / "checkpoints" / "latest").read_text()
    assert latest == "step_000001"
    assert (tmp_path / "x" / "checkpoints" / latest / "model" / "config.json").exists()


def _one_step_checkpoint(sft_dir: Path, run: Path) -> Path:
    """A run trained one step and saved; returns its checkpoint directory."""
    trainer = Trainer(TEST_TRAIN, sft_dir, run, log=lambda _: None)
    trainer.step()
    trainer.save()
    return run / "checkpoints" / "step_000001"


def test_checkpoint_files_follow_the_umask(sft_dir: Path, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        ckpt = _one_step_checkpoint(sft_dir, tmp_path / "x")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (ckpt / "model").iterdir()}
    assert modes["model.safetensors"] == 0o644, modes  # not safetensors' 0600


@pytest.mark.parametrize(
    ("name", "content", "phrase"),
    [
        ("rng.pt", b"not a torch file", "rng.pt: damaged checkpoint file"),
        ("optimizer.pt", b"\x80\x04garbage", "optimizer.pt: damaged checkpoint file"),
        ("trainer.json", b"[]", "a JSON object expected"),
        ("trainer.json", b"[" * 100_000 + b"]" * 100_000, "nesting depth"),
        ("trainer.json", b'{"step": "x"}', "'step' must be an int"),
        ("trainer.json", b'{"step": 1, "trained_tasks": [-1]}', "trainer.json: damaged"),
        ("model/model.safetensors", b"garbage", "model: damaged checkpoint file"),
        ("rng.pt", b"\0" * (2 << 20), "rng.pt: 2,097,152 bytes, more than this run's state"),
    ],
)
def test_a_damaged_checkpoint_is_a_clear_error_naming_the_file(
    sft_dir: Path, tmp_path: Path, name: str, content: bytes, phrase: str
) -> None:
    run = tmp_path / "x"
    (_one_step_checkpoint(sft_dir, run) / name).write_bytes(content)
    with pytest.raises(ValueError, match=phrase):
        Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None)


def test_an_optimizer_file_larger_than_the_model_allows_is_refused_unread(
    sft_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "x"
    path = _one_step_checkpoint(sft_dir, run) / "optimizer.pt"
    size = path.stat().st_size
    with open(path, "r+b") as fh:  # sparse: 1 GiB on paper, nothing written
        fh.truncate(1 << 30)
    with pytest.raises(ValueError, match=r"optimizer\.pt: 1,073,741,824 bytes, more than"):
        Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None)
    with open(path, "r+b") as fh:
        fh.truncate(size)
    Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None)  # the real one fits


def test_resume_refuses_a_foreign_selector_and_a_pointer_outside_the_run(
    sft_dir: Path, tmp_path: Path
) -> None:
    from frontier_rft import TaskPool, make_selector
    from frontier_rft.selectors.persistence import save_selector

    run = tmp_path / "x"
    ckpt = _one_step_checkpoint(sft_dir, run)
    kept = (ckpt / "selector.npz").read_bytes()
    foreign = make_selector(TEST_TRAIN.selector, TaskPool(num_tasks=3, prompts=list("abc")))
    save_selector(foreign, ckpt / "selector.npz")
    with pytest.raises(ValueError, match="the checkpoint is not this run's"):
        Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None)
    (ckpt / "selector.npz").write_bytes(kept)
    (run / "checkpoints" / "latest").write_text("../../elsewhere/checkpoints/step_000001")
    with pytest.raises(ValueError, match="does not name a checkpoint"):
        Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None)
    (run / "checkpoints" / "latest").write_text("step_000001")
    assert Trainer(TEST_TRAIN, sft_dir, run, resume=True, log=lambda _: None).step_count == 1


@pytest.mark.parametrize("selector", ["uniform", "prioritized", "bots", "sec", "frontier", "pcl"])
def test_experiment_selectors_run_on_the_countdown_pool(
    sft_dir: Path, tmp_path: Path, selector: str
) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, selector=selector)
    trainer = Trainer(cfg, sft_dir, tmp_path / selector, log=lambda _: None)
    for _ in range(2):
        metrics = trainer.step()
    assert len(set(trainer.last["ids"].tolist())) == cfg.batch_size
    assert metrics["curriculum/select/calls"] == 2.0
    assert any(k.startswith(f"curriculum/{selector}/") for k in metrics) or selector == "uniform"


def test_bots_uses_measured_reference_pass_rates(sft_dir: Path, tmp_path: Path) -> None:
    from frontier_rft.training.references import (
        load_references,
        measure_references,
        write_references,
    )

    cfg = dataclasses.replace(TEST_TRAIN, selector="bots")
    init_dir = sft_dir.parent / "init"
    data = measure_references(init_dir, sft_dir, cfg, samples=2)
    assert len(data["keys"]) == cfg.train_size
    assert all(0.0 <= r <= 1.0 for r in data["weak"] + data["strong"])
    assert (data["temperature"], data["top_p"]) == (cfg.temperature, cfg.top_p)
    path = tmp_path / "refs.json"
    write_references(path, data)
    run_cfg = dataclasses.replace(cfg, reference_pass_rates=str(path))
    trainer = Trainer(run_cfg, sft_dir, tmp_path / "run", log=lambda _: None)
    ref = trainer.pool.reference_pass_rates
    assert ref is not None and ref.shape == (cfg.train_size, 2)
    np.testing.assert_allclose(ref[:, 1], data["strong"])
    assert trainer.selector.plugin == "interpolation"
    trainer.step()
    # A file measured on another pool is refused, naming the fix.
    other = dataclasses.replace(cfg, train_seed=7)
    from frontier_rft.tasks.suite import load_task, train_split

    items = train_split(load_task("countdown"), other.train_size, 7, other.levels)
    with pytest.raises(ValueError, match="measure it again"):
        load_references(path, items)
    with pytest.raises(ValueError, match="measure-references"):
        load_references(tmp_path / "missing.json", items)
    # A damaged or foreign file is one ValueError naming it, never a crash inside.
    fmt = json.loads(path.read_text())["format"]
    for text, phrase in [
        ("[1]", "not a reference pass-rate file"),
        (json.dumps({"format": fmt}), "no 'keys' list"),
        ("[" * 100_000 + "]" * 100_000, "nesting depth"),
        ("", "not readable as a reference pass-rate file"),
    ]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=phrase):
            load_references(bad, items)


def test_non_finite_settings_are_refused() -> None:
    from frontier_rft.training.config import TrainConfig

    for field in ("lr", "kl_coef", "entropy_coef", "weight_decay"):
        with pytest.raises(ValueError, match=f"{field} must be a finite number"):
            TrainConfig(**{field: float("inf")})


def test_a_non_finite_loss_stops_the_run_before_the_update(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from frontier_rft.training import policy_update

    real = policy_update.policy_loss

    def exploding(*args, **kwargs):  # type: ignore[no-untyped-def]
        loss = real(*args, **kwargs)
        return PolicyLoss(loss.total * float("nan"), loss.parts)

    trainer = Trainer(TEST_TRAIN, sft_dir, tmp_path / "x", log=lambda _: None)
    before = _params(trainer.model)
    monkeypatch.setattr(policy_update, "policy_loss", exploding)
    with pytest.raises(ValueError, match="non-finite loss"):
        _mixed_step(trainer)
    for name, value in _params(trainer.model).items():
        assert torch.equal(value, before[name]), name  # the model was not updated


def test_resume_refuses_to_redo_a_finished_run_or_go_back(sft_dir: Path, tmp_path: Path) -> None:
    cfg = dataclasses.replace(TEST_TRAIN, steps=2, eval_every=0, checkpoint_every=1)
    Trainer(cfg, sft_dir, tmp_path / "r", log=lambda _: None).train()
    run_json = (tmp_path / "r" / "run.json").read_bytes()
    metrics = (tmp_path / "r" / "metrics.jsonl").read_bytes()
    with pytest.raises(ValueError, match="already finished at step 2"):
        Trainer(cfg, sft_dir, tmp_path / "r", resume=True, log=lambda _: None)
    with pytest.raises(ValueError, match="--steps 1 is below the step this run reached"):
        Trainer(dataclasses.replace(cfg, steps=1), sft_dir, tmp_path / "r", resume=True)
    assert (tmp_path / "r" / "run.json").read_bytes() == run_json  # nothing was rewritten
    assert (tmp_path / "r" / "metrics.jsonl").read_bytes() == metrics
    longer = Trainer(dataclasses.replace(cfg, steps=3), sft_dir, tmp_path / "r", resume=True)
    assert longer.step_count == 2  # extending is what --steps is for
