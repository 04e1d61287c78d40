"""Issue 89 item 3: the currency line on realistic TRL, verl and SkyRL configurations, each
verdict worked out by hand, as `frontier check-config` prints it.

The knee (step_cost.roofline): a call's decode step costs t(r) = fixed + r x (a row's cost),
with fixed = layers x the engine's cost a layer (graphs 0.05 ms, eager 0.81 ms) + the weights'
read (2 bytes a parameter over the bandwidth), and a row's cost its KV read (KV bytes a token x
the mean context, prompt + completion / 2, over the bandwidth) or its FLOPs (2 x parameters over
the dense bf16 throughput), whichever is larger (plus 13 us a row under eager). The knee is
where t(r) = 2 x fixed: r = fixed / (a row's cost). H100: 3.35 TB/s, 989 TFLOP/s, 80 GB.
Qwen2.5-7B: 7.6e9 parameters, 28 layers, KV 57,344 B a token. Qwen2.5-1.5B: 1.54e9, 28 layers,
28,672 B. Qwen2.5-0.5B: 4.94e8, 24 layers, 12,288 B.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import check_config

pytestmark = pytest.mark.usefixtures("no_accelerate_default")

ROOT = Path(__file__).resolve().parents[1]
VERL_SKIP = str(ROOT / "examples" / "verl" / "skip.yaml")
QWEN_05B_CONFIG = {
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
"""Qwen2.5-0.5B's public config.json sizes (counted: 493,961,216 parameters)."""


def currency(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, body: str, *argv: str
) -> str:
    """The one currency line `frontier check-config KIND FILE ARGV` prints."""
    path = tmp_path / "run.yaml"
    path.write_text(body, encoding="utf-8")
    _, text = check_config(capsys, kind, str(path), *argv)
    lines = [ln[len("  currency: ") :] for ln in text.splitlines() if ln.startswith("  currency: ")]
    assert len(lines) == 1, text
    return lines[0]


def trl(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, settings: dict[str, Any], *argv: str
) -> str:
    """The currency line of a TRL file of these top-level settings."""
    body = "".join(f"{key}: {value}\n" for key, value in settings.items())
    return currency(capsys, tmp_path, "trl", body, *argv)


VLLM_7B = {
    "model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
    "use_vllm": "true",
    "per_device_train_batch_size": 8,
}
"""Qwen2.5-7B (a hub id: sizes from roofline.MODELS) under vLLM, 8 prompts a process a step."""
ON_8_H100 = ("--processes", "8", "--gpu", "h100")


def test_trl_05b_on_one_gpu_pays_in_steps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen2.5-0.5B (a local directory), one process, Hugging Face generate: 16 x
    gradient_accumulation_steps 4 = 64 rows a call of 256 tokens. Eager: fixed = 24 x 0.81 ms +
    0.988 GB / 3.35 TB/s = 19.44 + 0.295 = 19.73 ms; a row: 13 us + max(KV 12,288 B x 384 /
    3.35e12 = 1.41 us, FLOPs 0.99 us) = 14.41 us; knee = 19.73 ms / 14.41 us = 1,370 rows.
    64 < 1,370: steps."""
    model = tmp_path / "qwen05"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN_05B_CONFIG))
    settings = {
        "model_name_or_path": model,
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 4,
        "max_completion_length": 256,
    }
    line = trl(capsys, tmp_path, settings, "--gpu", "h100")
    assert line.startswith("steps: an engine decodes 64 rows a call (generation_batch_size 64 ")
    assert "Hugging Face generate" in line and "below the knee" in line
    assert "~1,370 rows, projected from datasheets, not measured: qwen05" in line
    assert "on an H100 SXM (--gpu h100)" in line


def test_trl_7b_vllm_server_on_8_gpus_pays_in_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen2.5-7B (hub id, sizes from roofline.MODELS), vLLM server, 8 processes,
    generation_batch_size 512, 4,096 tokens. TRL gathers every process's prompts into one server
    call: 512 rows (the old line said 8 x ... for one process: 'steps, raise the batch').
    Graphs: fixed = 28 x 0.05 ms + 15.2 GB / 3.35 TB/s = 1.4 + 4.537 = 5.937 ms; a row: KV
    57,344 B x (256 + 2,048) / 3.35e12 = 39.44 us (FLOPs 15.37 us); knee = 150.5 rows. The
    server's KV cache at trl vllm-serve's 0.9 of one H100: (72 - 15.2) GB / (57,344 B x 4,352)
    = 227.6 sequences. 512 >= 151, and > 228: rows."""
    server = {"vllm_mode": "server", "generation_batch_size": 512}
    settings = {**VLLM_7B, **server, "max_completion_length": 4096}
    line = trl(capsys, tmp_path, settings, *ON_8_H100)
    assert line.startswith("rows: an engine decodes 512 rows a call (generation_batch_size 512 =")
    assert "per_device_train_batch_size 8 x 8 processes x steps_per_generation 8" in line
    assert "gathered from every process into one vLLM server call" in line
    assert "at or beyond the knee" in line and "~151 rows" in line
    assert "beyond the engine's KV cache, ~228 sequences of 4,352 tokens" in line
    assert "no ridge point" in line
    assert "Qwen2.5-7B (sizes from roofline.MODELS, by the hub id's name) on an H100" in line


def test_trl_colocate_tp4_gathers_four_processes_a_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen2.5-7B colocated, vllm_tensor_parallel_size 4 on 8 processes, 8 x steps_per_generation
    8 = 64 rows a process: each engine decodes 4 x 64 = 256 rows. 1,024 tokens: a row's KV read
    57,344 x (256 + 512) / 3.35e12 = 13.15 us, under its FLOPs 15.37 us only past the ridge
    (4.537 ms / (15.37 - 13.15) us = 2,041 rows); below it t(r) = 5.937 ms + 13.15 us r: knee =
    451.6 rows. KV cache: 0.3 x 4 x 80 GB - 15.2 GB = 80.8 GB / (57,344 B x 1,280) = 1,100.8.
    256 < 452 and within the cache: steps."""
    tp4 = {"vllm_tensor_parallel_size": 4, "steps_per_generation": 8}
    settings = {**VLLM_7B, **tp4, "max_completion_length": 1024}
    line = trl(capsys, tmp_path, settings, *ON_8_H100)
    assert line.startswith("steps: an engine decodes 256 rows a call")
    assert "tensor-parallel 4: each engine decodes 4 processes' 64 each" in line
    assert "~452 rows" in line and "compute-bound from the ridge point, ~2,041 rows" in line
    assert "within the engine's KV cache, ~1,101 sequences of 1,280 tokens" in line
    assert "vllm_gpu_memory_utilization 0.3 (TRL " in line  # TRL's default, read from its source


def test_trl_colocated_kv_cache_bounds_the_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen2.5-7B colocated at TP 1, 64 rows a process, 4,096 tokens: under the knee (151), but
    TRL's 0.3 of one H100 holds (24 - 15.2) GB / 249.6 MB = 35.3 full sequences: the rest decode
    in further waves: rows."""
    settings = {**VLLM_7B, "steps_per_generation": 8, "max_completion_length": 4096}
    line = trl(capsys, tmp_path, settings, *ON_8_H100)
    assert line.startswith("rows: an engine decodes 64 rows a call")
    assert "below the knee" in line and "beyond the engine's KV cache, ~35 sequences" in line


def test_verl_15b_256_by_8_pays_in_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """verl, Qwen2.5-1.5B, data.train_batch_size 256 x rollout.n 8 = 2,048 rows over 8 GPUs /
    verl's default tensor_model_parallel_size 2 = 4 engines: 512 rows an engine; 1,024 tokens,
    verl's default 512-token prompts. fixed = 1.4 ms + 3.08 GB / 3.35 TB/s = 2.319 ms; a row:
    KV 28,672 x (512 + 512) / 3.35e12 = 8.76 us (FLOPs 3.11 us): knee = 264.6 rows. 512 >= 265,
    and past verl's default max_num_seqs 256: rows. KV: 0.5 x 160 GB - 3.08 GB over 28,672 B x
    1,536 = 1,746.6 sequences: within."""
    line = currency(
        capsys,
        tmp_path,
        "verl",
        Path(VERL_SKIP).read_text(encoding="utf-8"),
        "data.train_batch_size=256",
        "actor_rollout_ref.rollout.n=8",
        "actor_rollout_ref.rollout.name=vllm",
        "data.max_response_length=1024",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct",
        "--gpu",
        "h100",
    )
    assert line.startswith("rows: an engine decodes 512 rows a call (data.train_batch_size 256 ")
    assert "= 2,048 rows over 4 engines" in line
    assert "tensor_model_parallel_size 2 (verl " in line  # verl's default, said to be
    assert "~265 rows" in line and "beyond max_num_seqs 256" in line
    assert "within the engine's KV cache, ~1,747 sequences of 1,536 tokens" in line


def test_skyrl_four_engines_pay_in_steps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """SkyRL, Qwen2.5-1.5B, trainer.train_batch_size 64 x n_samples_per_prompt 8 = 512 rows over
    num_engines 4 (TP 2): 128 rows an engine; SkyRL's default 1,024 tokens and 512-token
    prompts: knee 264.6 as for verl. 128 < 265; KV at SkyRL's 0.8 of 2 GPUs: 124.9 GB / 44.04 MB
    = 2,836 sequences; max_num_seqs 1,024: steps."""
    body = (
        "trainer:\n  train_batch_size: 64\n  policy:\n    model:\n"
        "      path: Qwen/Qwen2.5-1.5B-Instruct\n"
        "generator:\n  n_samples_per_prompt: 8\n  inference_engine:\n    num_engines: 4\n"
        "    tensor_parallel_size: 2\n"
    )
    line = currency(capsys, tmp_path, "skyrl", body, "--gpu", "h100")
    assert line.startswith("steps: an engine decodes 128 rows a call (trainer.train_batch_size 64")
    assert "max_generate_length 1,024 (SkyRL 0.3.0's default)" in line
    assert "~265 rows" in line and "~2,836 sequences" in line


def test_an_unread_hub_model_is_unknown_not_smollm2s_curve(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hub id with no local config.json, not in the (empty) Hugging Face cache and not one of
    roofline.MODELS: no size, so no knee (it fell back to SmolLM2-135M's H200 curve, labelled
    measured, at any completion length)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    body = "model_name_or_path: meta-llama/Llama-3.2-1B-Instruct\nmax_completion_length: 4096\n"
    line = currency(capsys, tmp_path, "trl", body, "--gpu", "h100")
    assert line.startswith("unknown: an engine decodes 8 rows a call")
    assert "'meta-llama/Llama-3.2-1B-Instruct' is no local directory" in line
    assert "SmolLM2" not in line and "H200" not in line


def test_a_long_completion_run_pays_in_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen2.5-1.5B on one GPU, colocated vLLM, 8 x gradient_accumulation_steps 8 = 64 rows,
    8,192 tokens: a row's KV read 28,672 x (256 + 4,096) / 3.35e12 = 37.25 us; knee = 2.319 ms /
    37.25 us = 62.3 rows. 64 >= 62: rows (the cache, 20.9 GB / 242.2 MB = 86.4, holds them)."""
    settings = {
        "model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct",
        "use_vllm": "true",
        "gradient_accumulation_steps": 8,
        "max_completion_length": 8192,
    }
    line = trl(capsys, tmp_path, settings, "--gpu", "h100")
    assert line.startswith("rows: an engine decodes 64 rows a call")
    assert "~62 rows" in line and "within the engine's KV cache, ~86 sequences" in line


def test_trls_own_default_completion_length_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unset max_completion_length is TRL's default as the installed TRL states it (1.16:
    512), not 256. Qwen2.5-0.5B eager at 512 tokens: a row 13 + 12,288 x 512 / 3.35e12 = 14.88
    us; knee 19.73 ms / 14.88 us = 1,326."""
    body = "model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\n"
    line = currency(capsys, tmp_path, "trl", body, "--gpu", "h100")
    assert "512-token completions (TRL " in line and "default)" in line
    assert "~1,326 rows" in line


def test_a_cpu_run_reads_the_cpu_curve(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """use_cpu, 16 rows of 256 tokens: the shipped cpu curve's knee at 256 tokens, 9.87 rows
    (fixed 0.2601 s, 0.02635 s a row): 16 >= 10: rows."""
    body = "use_cpu: true\nper_device_train_batch_size: 16\nmax_completion_length: 256\n"
    line = currency(capsys, tmp_path, "trl", body)
    assert line.startswith("rows: an engine decodes 16 rows a call")
    assert "~10 rows, the shipped cpu curve" in line


def test_a_censored_knee_is_a_bound_and_the_call_is_judged_by_the_rule(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """SmolLM2-135M under Hugging Face generate on an H200: the shipped h200 curve, whose
    256-token knee is censored at >= 256 rows. A call of 512 rows lies beyond the largest
    measured call: on the curve's extrapolation (flat) it costs 1.00x its fixed seconds, under
    the rule's 2x: steps, said to be extrapolated (the old line said 'beyond' the knee)."""
    settings = {
        "model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "per_device_train_batch_size": 512,
        "max_completion_length": 256,
    }
    line = trl(capsys, tmp_path, settings, "--gpu", "h200")
    assert line.startswith("steps: an engine decodes 512 rows a call")
    assert "beyond the largest measured call (256 rows)" in line
    assert "1.00x its fixed seconds, under the rule's 2x (extrapolated, not measured)" in line
    assert ">= 256 rows (censored" in line and "the shipped h200 curve" in line


def test_check_config_and_the_start_up_line_quote_the_same_knee(tmp_path: Path) -> None:
    """Issue 89 item 2: the trainer reads TRL's parsed GRPOConfig (generation_batch_size and
    steps_per_generation both set by TRL) and the loaded model's config; check-config reads the
    file as written and the hub id. Both give the same line."""
    import trl

    from frontier_rft.integrations.trl.config_check import check_trl_config
    from frontier_rft.integrations.trl.currency import trl_currency_line
    from frontier_rft.step_cost.advice import DeviceHint

    values: dict[str, Any] = {
        "use_vllm": True,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 8,
        "max_completion_length": 2048,
    }
    hint = DeviceHint("h100")
    checked = check_trl_config(
        {**values, "model_name_or_path": "Qwen/Qwen2.5-7B-Instruct"}, 1, hint
    ).currency
    args = trl.GRPOConfig(output_dir=str(tmp_path), bf16=False, **values)
    loaded = {"_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "hidden_size": 1}  # unread: by id
    started = trl_currency_line(vars(args), loaded, processes=1, hint=hint, on_cpu=False)
    assert checked == [started]
    assert started.startswith("steps: an engine decodes 64 rows a call")
