"""The currency a run pays in: which curve its knee was read from, the model and GPU read for a
projection, and the evidence each line quotes with its limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_rft.step_cost.advice import (
    EngineCall,
    NamedGpu,
    ReadModel,
    currency_line,
    model_spec_from_config,
    read_model,
    run_currency,
)
from frontier_rft.step_cost.curve import load_curve
from frontier_rft.step_cost.roofline import MODELS

QWEN_7B_CONFIG = {
    "hidden_size": 3584,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
}
"""Qwen2.5-7B's public config.json sizes."""


def call(rows: int, tokens: int, engine: str = "graphs") -> EngineCall:
    return EngineCall(rows, tokens, 256, engine, "planted", "planted")


H100 = NamedGpu("h100", "--gpu h100")


def test_a_cpu_run_reads_the_shipped_cpu_curve_and_says_so() -> None:
    unread = ReadModel(None, "unread")
    c = run_currency(call(128, 24, "eager"), device="cpu", model=unread, gpu=H100)
    assert (c.currency, c.source) == ("rows", "cpu")
    small = run_currency(call(16, 24, "eager"), device="cpu", model=unread, gpu=H100)
    assert small.currency == "steps" and small.knee == "~34 rows"
    assert "the shipped cpu curve" in small.basis and "measured at 24, 256, 1,024" in small.basis


def test_a_gpu_run_without_its_model_is_unknown_never_the_h200_curve() -> None:
    """Issue 89 item 2: a hub id with no size read fell back to SmolLM2's H200 curve, labelled
    measured, even for 4,096-token completions; now no knee applies and the line says why."""
    unread = read_model("someone/unknown-model-7b")
    assert unread.spec is None and "size is unread" in unread.said
    c = run_currency(call(128, 4096), device="gpu", model=unread, gpu=H100)
    assert (c.currency, c.source, c.knee) == ("unknown", "none", "")
    line = currency_line(c)
    assert line.startswith("unknown: an engine decodes 128 rows a call")
    assert "H200" not in line and "benchmarks/step_cost.py" in line
    # a GPU with no datasheet here: unknown too, naming the choices
    rtx = NamedGpu(None, "torch: NVIDIA GeForce RTX 4090")
    c = run_currency(call(128, 256), device="gpu", model=read_model("Qwen/Qwen2.5-7B"), gpu=rtx)
    assert c.currency == "unknown" and "--gpu names one of" in c.reason


def test_the_h200_curve_only_for_what_it_measured() -> None:
    smol = read_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    h200 = NamedGpu("h200", "--gpu h200")
    assert run_currency(call(64, 24, "eager"), device="gpu", model=smol, gpu=h200).source == "h200"
    # under vLLM, or on another GPU, it is a projection
    assert run_currency(call(64, 24), device="gpu", model=smol, gpu=h200).source == "projection"
    assert run_currency(call(64, 24, "eager"), device="gpu", model=smol, gpu=H100).source == (
        "projection"
    )


def test_a_users_own_curve_is_read_first_and_named(tmp_path: Path) -> None:
    cells = [
        {"rows": r, "length": 256, "generate_s": 1.0 + 0.01 * r, "update_s": 0.0}
        for r in (8, 64, 512)
    ]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"device_name": "My GPU", "model": "Mine", "cells": cells}))
    curve = load_curve(str(path))
    unread = ReadModel(None, "x")
    c = run_currency(call(200, 256), device="gpu", model=unread, gpu=H100, curve=curve)
    # fixed 1.0 s, 0.01 s a row: the knee at 100 rows
    assert (c.currency, c.source, c.knee) == ("rows", "own", "~100 rows")
    assert c.basis.startswith("measured on your device (mine)")


def test_the_model_is_read_from_a_directory_the_hub_cache_or_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "qwen"
    local.mkdir()
    (local / "config.json").write_text(json.dumps(QWEN_7B_CONFIG))
    found = read_model(str(local))
    assert found.spec is not None and found.spec.params == pytest.approx(7.615e9, rel=1e-3)
    assert found.said.startswith("read from ")
    by_name = read_model("Qwen/Qwen2.5-7B-Instruct")
    assert by_name.spec == MODELS["qwen2.5-7b"] and "by the hub id" in by_name.said
    # a hub id in the Hugging Face cache (never fetched): models--org--name/snapshots/<sha>
    import huggingface_hub.constants

    repo = tmp_path / "hub" / "models--someorg--tuned-7b"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text(json.dumps(QWEN_7B_CONFIG))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    cached = read_model("someorg/tuned-7b")
    assert cached.spec is not None and cached.said == "read from the Hugging Face cache"
    assert cached.spec.params == found.spec.params
    # a loaded model's config, only where nothing else reads (the start-up's last resort)
    loaded = read_model("elsewhere/unknown", {**QWEN_7B_CONFIG, "_name_or_path": "x"})
    assert loaded.said == "read from the loaded model's config"
    assert read_model(None).said == "model_name_or_path is not set here"
    for odd in ("~no-such-user-here/model", "a" * 5000, "bad\0path", "x/" * 3000):
        assert read_model(odd).spec is None  # unread, never a traceback


def test_model_size_from_a_local_config_by_hand(tmp_path: Path) -> None:
    cfg = {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = model_spec_from_config(tmp_path)
    assert spec is not None
    # attention: q and o 64 x 64 each, k and v 64 x (2 x 16) each; mlp 3 x 64 x 128
    per_layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128
    assert spec.params == 2 * per_layer + 2 * 100 * 64
    assert (spec.layers, spec.kv_heads, spec.head_dim) == (2, 2, 16)
    (tmp_path / "config.json").write_text("{not json")
    assert model_spec_from_config(tmp_path) is None
    assert model_spec_from_config(tmp_path / "absent") is None
    # issue 91 item 19: sizes that are no finite number, or a file nested deep, read as none
    for size in ("Infinity", "1e400", "9" * 401):
        (tmp_path / "config.json").write_text(json.dumps(cfg).replace("64", size, 1))
        assert model_spec_from_config(tmp_path) is None, size
    (tmp_path / "config.json").write_text("[" * 500_000 + "]" * 500_000)
    assert model_spec_from_config(tmp_path) is None


def test_each_advice_line_carries_its_evidence_limits() -> None:
    """Issue 91 item 3: `steps` says no CPU regime forecast the GPU for a mode that changes the
    number of steps; `rows` says its seconds were measured on CPUs only."""
    qwen = read_model("Qwen/Qwen2.5-7B")
    steps = currency_line(run_currency(call(16, 256), device="gpu", model=qwen, gpu=H100))
    assert steps.startswith("steps: ")
    assert "no CPU regime has yet forecast the GPU" in steps and "section 5" in steps
    assert "+0.023 forecast on fast-format-lr4, -0.030 measured on SmolLM2" in steps
    rows = currency_line(run_currency(call(4096, 4096), device="gpu", model=qwen, gpu=H100))
    assert rows.startswith("rows: ") and "measured on CPUs only" in rows


def test_the_figures_the_advice_quotes_are_the_committed_reports() -> None:
    """EVIDENCE quotes FIGURES; they must be what the committed reports say (one fact), as
    the evidence pages write them (page_figures)."""
    from frontier_rft.bench.real_rl.page_figures import FIGURES as PAGE
    from frontier_rft.step_cost.advice import FIGURES

    root = Path(__file__).resolve().parents[1]
    results = root / "benchmarks" / "results"

    def page(name: str) -> str:
        return PAGE[name].value(results).replace("\N{MINUS SIGN}", "-")

    assert FIGURES["h200_b128_std"] == page("std.uniform-b128.h200")
    assert FIGURES["h200_b128_ff"] == page("ffl4.uniform-b128.h200")
    assert FIGURES["passes_b128_std"] == page("std.uniform-b128.equal_passes")
    assert FIGURES["rollouts_b32_ff"] == page("ffl4.uniform-b32.rollouts_to")
    assert FIGURES["rollouts_b32_std"] == page("std.uniform-b32.rollouts_to")
    assert FIGURES["pairs_std"] == page("std.seeds")
    fewer = (root / "docs/results/fewer_steps.md").read_text()
    gpu = FIGURES["fewer_gpu"].replace("-", "\N{MINUS SIGN}")
    assert f"| {gpu} [" in fewer and f"({FIGURES['fewer_cpu']} [" in fewer
    assert FIGURES["kept_cpu_time"] == page("std1280.kept.cpu_timed").split(" ")[0]


def test_the_gpu_is_named_by_the_flag_the_machine_or_said_to_be_assumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--gpu first; else the NVIDIA driver's list (read without importing torch, as
    check-config runs); else an H100, labelled assumed. The driver's file as it writes it."""
    from frontier_rft.step_cost import advice
    from frontier_rft.step_cost.advice import DeviceHint, name_gpu

    monkeypatch.setattr(advice, "_torch_gpu", lambda: None)  # this machine's torch sees none
    monkeypatch.setattr(advice, "_DRIVER_GPUS", tmp_path / "none")
    assert name_gpu() == NamedGpu("h100", "assumed: no GPU visible here; --gpu names yours")
    gpu = tmp_path / "gpus" / "0000:18:00.0"
    gpu.mkdir(parents=True)
    (gpu / "information").write_text(
        "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t GPU-0\nBus Type: \t PCIe\n"
    )
    monkeypatch.setattr(advice, "_DRIVER_GPUS", tmp_path / "gpus")
    assert name_gpu() == NamedGpu("h200", "driver: NVIDIA H200")
    assert name_gpu(DeviceHint("a100")) == NamedGpu("a100", "--gpu a100")
    (gpu / "information").write_text("Model: \t\t NVIDIA GeForce RTX 4090\n")
    assert name_gpu().key is None  # no datasheet here: the currency is unknown, not an H100
