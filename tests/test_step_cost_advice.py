"""The currency a run pays in, and the model size read from a local config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontier_rft.step_cost.advice import currency_line, model_spec_from_config, run_currency
from frontier_rft.step_cost.roofline import MODELS


def test_a_cpu_run_pays_in_rows_beyond_the_measured_knee() -> None:
    assert run_currency(128, 24, device="cpu").currency == "rows"
    small = run_currency(16, 24, device="cpu")  # the CPU knee at 24 tokens: ~37 rows
    assert small.currency == "steps" and 32 < small.knee < 64
    assert "measured on 2 CPU cores" in small.basis


def test_a_gpu_run_without_its_model_reads_the_measured_h200_curve() -> None:
    c = run_currency(128, 24, device="gpu")
    assert c.currency == "steps" and c.censored and c.knee == 1024
    assert "H200" in c.basis and "model size unread" in c.basis
    line = currency_line(c)
    assert line.startswith("steps (a generation call of 128 rows lies below the knee")
    assert "docs/results/device_cost.md" in line


def test_a_long_completion_of_a_large_model_pays_in_rows() -> None:
    model = MODELS["llama-3.1-8b"]
    assert run_currency(1024, 1024, device="gpu", vllm=True, model=model).currency == "rows"
    assert run_currency(64, 1024, device="gpu", vllm=True, model=model).currency == "steps"
    with pytest.raises(ValueError, match="rows and completion_tokens"):
        run_currency(0, 24, device="gpu")


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


def test_trl_values_give_the_rows_of_one_process_call(tmp_path: Path) -> None:
    from frontier_rft.integrations.trl.currency import trl_currency_line

    # TRL's defaults: 8 rows a process a call, 256 tokens, a GPU
    assert trl_currency_line({}).startswith("steps (a generation call of 8 rows")
    cpu = {"use_cpu": True, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 4}
    assert trl_currency_line(cpu).startswith("rows (a generation call of 64 rows lies beyond")
    cfg = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    values = {
        "model_name_or_path": str(tmp_path),
        "use_vllm": True,
        "per_device_train_batch_size": 64,
        "steps_per_generation": 16,
        "max_completion_length": 1024,
    }
    line = trl_currency_line(values)
    assert line.startswith("rows (a generation call of 1,024 rows lies beyond the knee")
    assert "projected from datasheets" in line and "graphs generation" in line


def test_check_config_trl_says_the_currency(tmp_path: Path) -> None:
    from frontier_rft.cli.main import main

    path = tmp_path / "run.yaml"
    path.write_text("per_device_train_batch_size: 64\nmax_completion_length: 24\nuse_cpu: true\n")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check-config", "trl", str(path)])
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("  currency: ")]
    assert len(lines) == 1 and lines[0].startswith("  currency: rows (a generation call of 64")


def test_the_figures_the_advice_quotes_are_the_committed_reports() -> None:
    """EVIDENCE quotes FIGURES; they must be what the committed report says (one fact)."""
    from frontier_rft.step_cost.advice import FIGURES

    root = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    full = json.loads((root / "real_rl_format_lr4_step_size_full.json").read_text())
    device = full["summary"]["labels"]["uniform-b32"]["device"]
    assert FIGURES["steps_b32"] == f"{device['to_final_steps']['mean']:.2f}x"
    assert FIGURES["h200_b32"] == f"{device['to_final_h200_projected_s']['mean']:.2f}x"
    assert FIGURES["rollouts_b32"] == f"{device['to_final_rollouts']['mean']:.2f}x"
    assert FIGURES["pairs_ff"] == str(len(device["seeds"]))
