"""The device cost model: a step's seconds from a measured curve, the knee rule, the roofline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frontier_rft.step_cost import Cell, StepCostCurve, StepShape, load_curve
from frontier_rft.step_cost.curve import curve_from_json
from frontier_rft.step_cost.roofline import (
    ENGINES,
    GPUS,
    MODELS,
    Engine,
    Gpu,
    ModelSpec,
    decode_s,
    project_knee,
)


def affine(a: float, b: float, rows: tuple[int, ...] = (1, 10, 100, 1000)) -> StepCostCurve:
    """A planted curve: generation a + b r, no update, one length."""
    cells = tuple(Cell(r, 10, a + b * r, 0.0) for r in rows)
    return StepCostCurve("planted", "cuda", "test", "test", "planted", cells)


def test_interpolation_between_rows_and_lengths_by_hand() -> None:
    cells = (
        Cell(10, 10, 1.0, 0.5),
        Cell(20, 10, 2.0, 1.0),
        Cell(10, 30, 3.0, 1.5),
        Cell(20, 30, 6.0, 3.0),
    )
    c = StepCostCurve("c", "cpu", "x", "m", "p", cells)
    assert c.seconds(15, 10, "generate_s") == pytest.approx(1.5)
    assert c.seconds(15, 20, "generate_s") == pytest.approx((1.5 + 4.5) / 2)
    assert c.seconds(15, 20, "update_s") == pytest.approx((0.75 + 2.25) / 2)
    # beyond the largest rows: the last segment's slope (0.1 s a row at length 10)
    assert c.seconds(40, 10, "generate_s") == pytest.approx(4.0)
    assert c.extrapolated(40, 10) and not c.extrapolated(15, 20)
    # below the smallest rows: the smallest cell's seconds; zero rows cost nothing
    assert c.seconds(5, 10, "generate_s") == pytest.approx(1.0)
    assert c.seconds(0, 10, "generate_s") == 0.0
    # a step: two calls of 10 rows at 10 tokens, 20 rows trained
    assert c.step_seconds(StepShape((10, 10), 10, 20)) == pytest.approx(1.0 + 1.0 + 1.0)


def test_noisy_cells_are_made_non_decreasing_in_rows() -> None:
    cells = (Cell(16, 24, 0.6, 0.1), Cell(64, 24, 0.8, 0.1), Cell(256, 24, 0.7, 0.1))
    c = StepCostCurve("c", "cuda", "x", "m", "p", cells)
    assert c.seconds(256, 24, "generate_s") == pytest.approx(0.8)
    assert c.seconds(160, 24, "generate_s") == pytest.approx(0.8)


def test_knee_of_an_affine_cost_is_a_over_b_plus_twice_the_smallest_step() -> None:
    a, b = 1.0, 0.004  # a / b = 250 rows
    knee = affine(a, b).knee(10)
    assert not knee.censored
    assert knee.rows == pytest.approx(a / b + 2 * 1, rel=1e-9)
    assert knee.floor_s == pytest.approx(a + b)


def test_knee_beyond_the_measured_rows_is_censored() -> None:
    knee = affine(1.0, 1e-5).knee(10)
    assert knee.censored and knee.rows == 1000
    assert knee.describe().startswith(">= 1000")


def test_knee_and_currency_of_the_shipped_curves() -> None:
    cpu, h200 = load_curve("cpu"), load_curve("h200")
    # CPU, 24 tokens: floor 0.0695 s at 8 rows; 2x it lies between 32 (0.127) and 64 (0.205)
    k = cpu.knee(24)
    assert not k.censored and 32 < k.rows < 64
    t8 = cpu.step_seconds(StepShape((8,), 24, 8))
    t32 = cpu.step_seconds(StepShape((32,), 24, 32))
    t64 = cpu.step_seconds(StepShape((64,), 24, 64))
    assert k.rows == pytest.approx(32 + (2 * t8 - t32) / (t64 - t32) * 32)
    assert cpu.currency(128, 24) == "rows"
    # H200, SmolLM2, 24 tokens: 1,024 rows cost 1.65x 16 rows: the knee lies beyond them
    k = h200.knee(24)
    assert k.censored and k.rows == 1024
    assert h200.currency(128, 24) == "steps" and h200.currency(1024, 24) == "steps"
    ratio = h200.step_seconds(StepShape((1024,), 24, 1024)) / h200.step_seconds(
        StepShape((16,), 24, 16)
    )
    assert 1.5 < ratio < 1.8
    assert "H200" in h200.device_name and "ebc64f4" in h200.provenance


def test_a_user_curve_file_is_read_bounded_and_checked(tmp_path: Path) -> None:
    cells = [
        {"rows": 8, "length": 24, "generate_s": {"median": 0.1}, "update_s": {"median": 0.05}},
        {"rows": 16, "length": 24, "generate_s": None, "update_s": None},  # cut by a limit
    ]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"device": "cuda:0", "device_name": "GPU", "cells": cells}))
    curve = load_curve(str(path))
    assert curve.name == "mine" and curve.device_class == "cuda" and len(curve.cells) == 1
    with pytest.raises(ValueError, match="neither a shipped curve"):
        load_curve(str(tmp_path / "absent.json"))
    for bad, match in (
        ({"cells": "x"}, "not a step-cost file"),
        ({"cells": [{"rows": 1.5, "length": 2, "generate_s": 1, "update_s": 1}]}, "integer"),
        ({"cells": [{"rows": 1, "length": 2, "generate_s": "1", "update_s": 1}]}, "number"),
        ({"cells": [{"rows": 1, "length": 2, "generate_s": -1.0, "update_s": 1}]}, "finite"),
        ({"cells": []}, "no cells"),
    ):
        with pytest.raises(ValueError, match=match):
            curve_from_json(bad, "bad")
    with pytest.raises(ValueError, match="length >= 1"):
        StepShape((8,), 0, 8)


def test_roofline_decode_step_by_hand() -> None:
    gpu = Gpu("g", 1e12, 1e15)
    model = ModelSpec("m", 1e9, 10, 2, 64)  # kv: 2 x 10 x 2 x 64 x 2 = 5,120 bytes a token
    engine = Engine("e", 1e-4, 1e-6, "test")
    assert model.kv_bytes_per_token() == 5120
    rows, context = 100, 1000
    memory = (2e9 + rows * context * 5120) / 1e12
    compute = 2 * 1e9 * rows / 1e15
    expected = 1e-3 + 1e-6 * rows + max(memory, compute)
    assert decode_s(rows, context, gpu, model, engine) == pytest.approx(expected)


def test_roofline_knee_solves_twice_one_row_and_follows_context() -> None:
    gpu, model, engine = GPUS["h100"], MODELS["llama-3.1-8b"], ENGINES["graphs"]
    knee = project_knee(gpu, model, engine, 256, 1024)
    context = 256 + 512
    assert decode_s(knee, context, gpu, model, engine) == pytest.approx(
        2 * decode_s(1, context, gpu, model, engine), rel=1e-6
    )
    # longer completions fill memory with KV cache sooner: a smaller knee
    assert (
        project_knee(gpu, model, engine, 256, 4096)
        < knee
        < project_knee(gpu, model, engine, 256, 24)
    )
    with pytest.raises(ValueError):
        project_knee(gpu, model, engine, 0, 0)


def test_the_eager_engine_reproduces_the_measured_h200_point() -> None:
    """Its two costs were calibrated on the H200 curve: the projected 16-row x 24-token call
    and the knee land where that measurement puts them (>= 1,024 rows)."""
    gpu, model, engine = GPUS["h200"], MODELS["smollm2-135m"], ENGINES["eager"]
    call_16 = 24 * decode_s(16, 32 + 12, gpu, model, engine)
    assert call_16 == pytest.approx(0.58, rel=0.1)
    assert project_knee(gpu, model, engine, 32, 24) >= 1024
    assert math.isfinite(project_knee(gpu, model, engine, 32, 24))
