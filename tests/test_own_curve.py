"""A run's own step cost (issue 89, item 2): the reference trainer logs each step's calls to
generate and its update (rows, decode steps, seconds), and step_cost/own_curve.py fits the
run's own curve from them where its shapes vary."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft.step_cost import StepShape
from frontier_rft.step_cost.own_curve import RUN_KEYS, fit_own_curve

GEN = (0.02, 0.003, 0.0004)
"""Planted: a call costs 0.02 s, a decode step 3 ms, a row's decode step 0.4 ms."""
UPD = (0.01, 0.002, 0.0001)


def _rows(calls_per_step: list[list[tuple[int, int]]], widths: list[int]) -> list[dict[str, float]]:
    """Logged step rows of a device that follows the planted model exactly."""
    out = []
    for calls, width in zip(calls_per_step, widths, strict=True):
        trained = sum(r for r, _ in calls)
        a, b, c = GEN
        d, e, z = UPD
        out.append(
            {
                "perf/generate_s": sum(a + b * n + c * r * n for r, n in calls),
                "perf/generate_calls": float(len(calls)),
                "perf/generate_rows": float(trained),
                "perf/decode_steps": float(sum(n for _, n in calls)),
                "perf/decode_row_steps": float(sum(r * n for r, n in calls)),
                "perf/update_s": d + e * trained + z * trained * width,
                "train/trained_rows": float(trained),
                "perf/update_width": float(width),
            }
        )
    return out


def test_the_fit_recovers_a_planted_device_and_its_curve_reads_it() -> None:
    """Steps of one call and of several (dynamic sampling's), rows and lengths varying: the
    coefficients are the planted ones, and the curve built from them prices a step as the
    device does; an evaluation row in the log is skipped."""
    steps = [[(64, 20)], [(32, 24), (16, 18)], [(96, 12)], [(8, 24)], [(48, 16), (48, 22)]]
    rows = _rows(steps, [20, 24, 12, 24, 22])
    rows.insert(2, {"eval/pass@1": 0.3})
    fit = fit_own_curve(rows)
    np.testing.assert_allclose(fit.generate, GEN, rtol=1e-6)
    np.testing.assert_allclose(fit.update, UPD, rtol=1e-6)
    assert fit.steps == 5 and fit.curve.name == "run"
    seconds = fit.curve.step_seconds(StepShape((64,), 16, 64))
    a, b, c = GEN
    d, e, z = UPD
    assert seconds == pytest.approx(a + b * 16 + c * 64 * 16 + d + e * 64 + z * 64 * 16)
    assert fit.curve.knee(16).rows > 8


def test_a_run_whose_calls_never_changed_rows_is_refused_in_one_line() -> None:
    rows = _rows([[(64, n)] for n in (10, 14, 18, 22, 24)], [10, 14, 18, 22, 24])
    with pytest.raises(ValueError, match="rows a call to generate never varied") as info:
        fit_own_curve(rows)
    assert "\n" not in str(info.value) and "shipped curve" in str(info.value)
    with pytest.raises(ValueError, match="fewer than 4"):
        fit_own_curve(_rows([[(8, 4)], [(16, 8)]], [4, 8]))


def test_one_length_throughout_folds_a_calls_cost_into_its_decode_steps() -> None:
    """The tiny model decodes to the cap every call: the rows still tell the curve how seconds
    follow them, at that length exactly, the call's own cost said to be folded in."""
    rows = _rows([[(r, 16)] for r in (8, 16, 32, 64, 96)], [16] * 5)
    fit = fit_own_curve(rows)
    a, b, c = GEN
    assert fit.generate[0] == 0.0 and "one length" in fit.curve.provenance
    assert fit.generate_seconds(40, 16) == pytest.approx(a + b * 16 + c * 40 * 16)


@pytest.mark.integration
def test_the_trainer_logs_every_call_and_a_kept_run_fits_its_own_curve(
    sft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step logs its calls' rows and decode steps as the calls had them (seen by a spy
    on generate), and a kept run, whose rows a call vary with the prompts kept, fits its own
    curve from metrics.jsonl."""
    grpo = pytest.importorskip("frontier_rft.training.grpo")
    from frontier_rft.metrics_log import read_metrics_jsonl
    from test_training_model import TEST_TRAIN

    seen: list[tuple[int, int]] = []
    real = grpo.generate_completions

    def spy(model: Any, prompts: Any, counts: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(model, prompts, counts, *args, **kwargs)
        seen.append((len(out), max(len(c) for c in out)))
        return out

    monkeypatch.setattr(grpo, "generate_completions", spy)
    # threads 0: torch's own (the Trainer leaves them as they are for the next test)
    config = dataclasses.replace(TEST_TRAIN, steps=8, batch_size=4, train_size=16, eval_every=0)
    config = dataclasses.replace(config, selector="skip", sampler="fewer_rollouts", noise_every=0)
    trainer = grpo.Trainer(config, sft_dir, tmp_path / "run", log=lambda _: None)
    logged = []
    for _ in range(config.steps):
        before = len(seen)
        metrics = trainer.step()
        trainer.sink.log(metrics, trainer.step_count)
        calls = seen[before:]
        assert set(RUN_KEYS) <= set(metrics)
        assert metrics["perf/generate_calls"] == len(calls)
        assert metrics["perf/generate_rows"] == sum(r for r, _ in calls)
        assert metrics["perf/decode_steps"] == sum(n for _, n in calls)
        assert metrics["perf/decode_row_steps"] == sum(r * n for r, n in calls)
        logged.append(metrics)
    assert len({m["perf/generate_rows"] / m["perf/generate_calls"] for m in logged}) >= 2
    trainer.sink.close()
    fit = fit_own_curve(read_metrics_jsonl(tmp_path / "run" / "metrics.jsonl"))
    assert fit.steps == config.steps and all(v >= 0 for v in (*fit.generate, *fit.update))
