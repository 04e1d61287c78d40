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
    gpu_key,
    kv_capacity_rows,
    project_knee,
    ridge_rows,
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


def test_knee_of_an_affine_cost_is_the_fixed_vs_per_row_crossover() -> None:
    """Issue 91 item 14: the rule as computed is the crossover a / b (it was a / b plus twice
    the smallest measured rows, which moved the CPU knees)."""
    a, b = 1.0, 0.004  # a / b = 250 rows
    knee = affine(a, b).knee(10)
    assert not knee.censored
    assert knee.rows == pytest.approx(a / b, rel=1e-9)
    assert knee.fixed_s == pytest.approx(a)  # the line through the two smallest, at zero rows
    # smallest measured rows 100: the crossover at 250 lies on the measured curve all the same
    assert affine(a, b, (100, 200, 400, 800)).knee(10).rows == pytest.approx(250)
    # the crossover below the smallest measured call: read on the line, and said so
    below = affine(a, b, (400, 800)).knee(10)
    assert below.rows == pytest.approx(250) and "below the smallest measured call" in (
        below.describe()
    )
    # no fixed cost: every row costs its share from the first
    assert affine(0.0, b).knee(10).rows == 0.0


def test_knee_beyond_the_measured_rows_is_censored() -> None:
    knee = affine(1.0, 1e-5).knee(10)
    assert knee.censored and knee.rows == 1000
    assert knee.describe().startswith(">= 1,000 rows (censored")


def test_knee_and_currency_of_the_shipped_curves() -> None:
    """The knees the rule computes on the shipped curves, by hand from their generation cells."""
    cpu, h200 = load_curve("cpu"), load_curve("h200")
    # CPU, 24 tokens: generation 0.042319 s at 8 rows, 0.049276 at 16: 0.00086963 s a row,
    # fixed 0.042319 - 8 x 0.00086963 = 0.035362 s; twice it, 0.070724, lies between 32 rows
    # (0.06866) and 64 (0.104013): 32 + (0.070724 - 0.06866) / (0.104013 - 0.06866) x 32 = 33.9
    k = cpu.knee(24)
    assert not k.censored and k.fixed_s == pytest.approx(0.035362, abs=1e-6)
    assert k.rows == pytest.approx(32 + (0.070724 - 0.06866) / (0.104013 - 0.06866) * 32, rel=1e-4)
    # 256 tokens: 0.470962 at 8, 0.681785 at 16: 0.026353 a row, fixed 0.260139 s, knee on that
    # line at 0.260139 / 0.026353 = 9.87 rows (the old rule said 23); 1,024 tokens: 8.15 (was 20)
    assert cpu.knee(256).rows == pytest.approx(0.260139 / 0.02635288, rel=1e-4)
    assert cpu.knee(1024).rows == pytest.approx(1.437456 / 0.17634162, rel=1e-4)
    assert cpu.currency(128, 24) == "rows" and cpu.currency(16, 24) == "steps"
    # H200, SmolLM2, 24 tokens: 0.583769 s at 16 rows, 0.775048 at 64: fixed 0.520009 s; the
    # largest measured call, 1,024 rows, costs 0.906351 = 1.74x it: the knee lies beyond it
    k = h200.knee(24)
    assert k.censored and k.rows == 1024
    verdict = h200.verdict(1024, 24)
    assert verdict.currency == "steps" and not verdict.extrapolated
    assert verdict.ratio == pytest.approx(0.906351 / 0.520009, rel=1e-5)
    assert "H200" in h200.device_name and "ebc64f4" in h200.provenance


def test_a_call_beyond_a_censored_knee_is_judged_by_the_rule_not_taken_to_lie_beyond() -> None:
    """Issue 91 item 18: 512 rows at 256 tokens on the H200 curve. Its generation cells (7.771 s
    at 16 rows, 7.646 at 64, 7.605 at 256, made non-decreasing: 7.771 throughout) are flat, so
    the call's fixed cost is 7.771 s and the extrapolation past 256 rows (the last segment's
    slope, 0) puts 512 rows at 1.00x it: under the rule's 2x, `steps`, said to be extrapolated.
    (The old rule called any call past a censored knee `rows`.) A planted curve whose last
    segment climbs is judged `rows` past the rows where its extrapolation reaches 2x."""
    h200 = load_curve("h200")
    assert h200.knee(256).censored and h200.knee(256).rows == 256
    verdict = h200.verdict(512, 256)
    assert verdict.currency == "steps" and verdict.extrapolated
    assert verdict.ratio == pytest.approx(1.0)
    assert h200.currency(512, 256) == "steps"
    # fixed 1.0 s, 1e-4 s a row up to 1,000 rows (1.1 s), extrapolated on: 2.0 s at 10,000 rows
    planted = affine(1.0, 1e-4)
    assert planted.knee(10).censored
    assert planted.verdict(9_000, 10).currency == "steps"
    assert planted.verdict(10_000, 10).currency == "rows"
    assert planted.verdict(10_000, 10).extrapolated


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
    gpu = Gpu("g", 1e12, 1e15, 80e9)
    model = ModelSpec("m", 1e9, 10, 2, 64)  # kv: 2 x 10 x 2 x 64 x 2 = 5,120 bytes a token
    engine = Engine("e", 1e-4, 1e-6, "test")
    assert model.kv_bytes_per_token() == 5120
    rows, context = 100, 1000
    memory = (2e9 + rows * context * 5120) / 1e12
    compute = 2 * 1e9 * rows / 1e15
    expected = 1e-3 + 1e-6 * rows + max(memory, compute)
    assert decode_s(rows, context, gpu, model, engine) == pytest.approx(expected)


def test_roofline_knee_solves_twice_the_fixed_cost_and_follows_context() -> None:
    gpu, model, engine = GPUS["h100"], MODELS["llama-3.1-8b"], ENGINES["graphs"]
    knee = project_knee(gpu, model, engine, 256, 1024)
    context = 256 + 512
    assert decode_s(knee, context, gpu, model, engine) == pytest.approx(
        2 * decode_s(0, context, gpu, model, engine), rel=1e-6
    )
    # longer completions fill memory with KV cache sooner: a smaller knee
    assert (
        project_knee(gpu, model, engine, 256, 4096)
        < knee
        < project_knee(gpu, model, engine, 256, 24)
    )
    with pytest.raises(ValueError):
        project_knee(gpu, model, engine, 0, 0)


def test_the_knee_is_not_the_ridge_point_by_hand() -> None:
    """Issue 91 item 16: Qwen2.5-7B, CUDA graphs, 256 prompt + 24 completion tokens (mean context
    268). Weights 15.2 GB; KV 57,344 B a token. H100 (3.35 TB/s, 989 TFLOP/s): ridge where
    2 x 7.6e9 r / 989e12 = (15.2e9 + 268 x 57,344 r) / 3.35e12, r = 4.537 ms / (15.369 - 4.587)
    us = 420.8 rows; knee where 1.4 ms + 15.369 us r = 2 x (1.4 + 4.537) ms, r = 681.5. A100
    (2.039 TB/s, 312 TFLOP/s): ridge 7.455 ms / (48.72 - 7.537) us = 181.0; knee 334.8. At 4,096
    tokens a row's KV read (39.4 us on the H100) outweighs its FLOPs (15.4 us): no ridge; knee
    5.937 ms / 39.44 us = 150.5."""
    qwen = MODELS["qwen2.5-7b"]
    graphs = ENGINES["graphs"]
    assert ridge_rows(GPUS["h100"], qwen, 256, 24) == pytest.approx(420.8, abs=0.1)
    assert project_knee(GPUS["h100"], qwen, graphs, 256, 24) == pytest.approx(681.5, abs=0.1)
    assert ridge_rows(GPUS["a100"], qwen, 256, 24) == pytest.approx(181.0, abs=0.1)
    assert project_knee(GPUS["a100"], qwen, graphs, 256, 24) == pytest.approx(334.8, abs=0.1)
    assert ridge_rows(GPUS["h100"], qwen, 256, 4096) is None
    assert project_knee(GPUS["h100"], qwen, graphs, 256, 4096) == pytest.approx(150.5, abs=0.1)


def test_kv_capacity_and_gpu_names_by_hand() -> None:
    """A colocated engine at TRL's 0.3 on one 80 GB H100: 24 GB less Qwen2.5-7B's 15.2 GB of
    weights leaves 8.8 GB, over 57,344 B x 4,352 tokens = 249.6 MB a full sequence: 35.3."""
    qwen = MODELS["qwen2.5-7b"]
    cap = kv_capacity_rows(GPUS["h100"], qwen, utilization=0.3, gpus=1, tokens=4352)
    assert cap == pytest.approx(8.8e9 / (57_344 * 4_352))
    assert 35 < cap < 36
    assert kv_capacity_rows(GPUS["h100"], qwen, utilization=0.1, gpus=1, tokens=10) == 0.0
    assert gpu_key("NVIDIA H100 80GB HBM3") == "h100"
    assert gpu_key("NVIDIA H200") == "h200"
    assert gpu_key("NVIDIA A100-SXM4-80GB") == "a100"
    assert gpu_key("NVIDIA A100-SXM4-40GB") is None  # another memory and bandwidth
    assert gpu_key("NVIDIA H100 PCIe") is None
    assert gpu_key("NVIDIA GeForce RTX 4090") is None


def test_the_eager_engine_reproduces_the_measured_h200_point() -> None:
    """Its two costs were calibrated on the H200 curve: the projected 16-row x 24-token call
    and the knee land where that measurement puts them (>= 1,024 rows)."""
    gpu, model, engine = GPUS["h200"], MODELS["smollm2-135m"], ENGINES["eager"]
    call_16 = 24 * decode_s(16, 32 + 12, gpu, model, engine)
    assert call_16 == pytest.approx(0.58, rel=0.1)
    assert project_knee(gpu, model, engine, 32, 24) >= 1024
    assert math.isfinite(project_knee(gpu, model, engine, 32, 24))


def test_the_committed_knee_projection_is_what_the_code_computes() -> None:
    """benchmarks/results/knee_projection.json holds the knees and ridges the code computes
    now (rebuilt with its command when the rule or a datasheet changes)."""
    root = Path(__file__).resolve().parents[1]
    page = json.loads((root / "benchmarks/results/knee_projection.json").read_text())
    lengths = (24, 256, 1024, 4096)
    for key, knees in page["projected"].items():
        m, g, e = key.split(":")
        computed = [project_knee(GPUS[g], MODELS[m], ENGINES[e], 256, n) for n in lengths]
        assert knees == pytest.approx(computed), key
    for key, ridges in page["ridge"].items():
        m, g = key.split(":")
        assert ridges == [ridge_rows(GPUS[g], MODELS[m], 256, n) for n in lengths], key
    for key, knee in page["measured"].items():
        name, length = key.split(":")
        k = load_curve(name).knee(int(length))
        assert (knee["rows"], knee["censored"]) == (pytest.approx(k.rows), k.censored), key


def test_the_b128_entry_is_the_largest_measured_h200_step_not_its_knee() -> None:
    """Issue 91 item 14: uniform-b128's 1,024 rows are the largest measured H200 call at 24
    tokens, under a knee censored there; its note called them "the H200 knee"."""
    from frontier_rft.bench.real_rl.entries import STEP_SIZE_ENTRIES

    h200 = load_curve("h200")
    assert h200.rows_at(24)[-1] == 1024 and h200.knee(24).censored
    note = {e.label: e.note for e in STEP_SIZE_ENTRIES}["uniform-b128"]
    assert "the largest measured H200 step" in note and "knee of" not in note
