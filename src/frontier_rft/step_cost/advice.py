"""Which currency a run pays in, from the call its generation engine makes, and what saves there.

A run's generation engine decodes some rows in one call (`EngineCall`: the adapters count them
from their trainer's settings, `integrations/*/currency.py`). `run_currency` places that call
against a knee, and says which curve the knee was read from (`Currency.source`):

- `own`: a curve measured on the user's device (benchmarks/step_cost.py; `check-config
  --step-cost FILE`);
- `cpu`: the shipped CPU curve, for a CPU run (the testbed's tiny Llama, not the user's model);
- `h200`: the shipped H200 curve, only for the model and engine it measured (SmolLM2-135M under
  Hugging Face generate on an H200);
- `projection`: `roofline.project_knee` for the run's model (a local config.json; for a hub id,
  `roofline.MODELS` by its name, else the Hugging Face cache, never the network) on the GPU
  named (--gpu, else this machine's, torch's or the NVIDIA driver's, else an H100, said to be
  assumed), under its engine;
- `none`: no knee (the model's size or the GPU is unread): the currency is `unknown`, never a
  fallback onto another model's curve.

One rule decides everywhere (`curve.KNEE_FACTOR`): a call pays in rows where its seconds reach
twice its fixed cost. A censored knee (beyond a measured curve) is a bound: a call beyond the
largest measured one is judged on the curve's extrapolation and said to be. A vLLM engine's KV
cache and its `max_num_seqs` bound the rows it decodes at once: rows past either decode in
further waves, so a call past them pays in rows. `currency_line` says all of it in one line
for `frontier check-config` and the adapters' start-up lines, with what reached uniform's final
score soonest in that currency on our evidence, and that evidence's limits (`EVIDENCE`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.step_cost.curve import KNEE_FACTOR, StepCostCurve, load_curve
from frontier_rft.step_cost.roofline import (
    ENGINES,
    GPUS,
    MODELS,
    ModelSpec,
    gpu_key,
    kv_capacity_rows,
    project_knee,
    ridge_rows,
)

__all__ = [
    "EVIDENCE",
    "Currency",
    "DeviceHint",
    "EngineCall",
    "KvBudget",
    "NamedGpu",
    "ReadModel",
    "currency_line",
    "model_spec_from_config",
    "model_spec_from_dict",
    "name_gpu",
    "read_model",
    "run_currency",
]

EVIDENCE = {
    "steps": (
        "On our evidence a larger step of uniform reached uniform's plateau soonest in steps "
        "and seconds (8x the prompts: {h200_b128_std} of uniform's H200 seconds on the "
        "standard CPU testbed, {pairs_std} pairs, {h200_b128_ff} on the fast-format-lr4 regime, "
        "both CPU runs projected onto the H200's curve, every arm on one evaluation schedule), "
        "and no selection beat uniform at the same rows a step: raise the prompts a call toward "
        "the knee before selecting. What it buys is passes over the data in the same seconds "
        "(at equal passes it scored {passes_b128_std} on the standard testbed): it pays where "
        "GPU-hours, not epochs, are fixed. Its limit: a larger step changes the number of "
        "steps, and for such a mode no CPU regime has yet forecast the GPU (fewer_steps: "
        "{fewer_cpu} forecast on fast-format-lr4, {fewer_gpu} measured on SmolLM2 on an H200), "
        "so this is CPU evidence until a GPU run checks it (docs/results/device_cost.md, "
        "section 5)"
    ),
    "rows": (
        "Rows are the cost: fewer rollouts save seconds here (rollouts: kept spends 0.78-0.84x "
        "uniform's rollouts at uniform's steps, at a held-out cost on a pretrained LM; "
        "docs/results/bill.md); a larger step is not shown to save rollouts: it reached "
        "uniform's plateau in a median "
        "{rollouts_b32_ff} of uniform's rollouts on the fast-format-lr4 CPU regime (2x the "
        "prompts) and {rollouts_b32_std} on the slower standard testbed "
        "(docs/results/device_cost.md). Its limit: those seconds were measured on CPUs only "
        "(kept: {kept_cpu_time} of uniform's CPU time, timed side by side), none on a GPU"
    ),
    "unknown": (
        "Measure your step to know (benchmarks/step_cost.py, then check-config --step-cost "
        "FILE); what saves in each currency: docs/results/device_cost.md"
    ),
}
"""What saves in each currency and that evidence's limits, the figures filled from `FIGURES`
(docs/results quotes the same reports; a test checks the two agree)."""

FIGURES = {
    "h200_b128_std": "0.36x [0.29, 0.48]",
    "pairs_std": "10",
    "h200_b128_ff": "0.25x [0.10, 1.00]",
    "passes_b128_std": "-0.028 [-0.037, -0.017]",
    "rollouts_b32_ff": "0.88x [0.35, 3.75]",
    "rollouts_b32_std": "1.29x [1.08, 2.00] (9/10 reached)",
    "fewer_cpu": "+0.023",
    "fewer_gpu": "-0.030",
    "kept_cpu_time": "0.80x",
}
"""The figures EVIDENCE quotes, as frontier_rft.bench.real_rl.page_figures writes them (ASCII
minus): the step sizes from benchmarks/results/real_rl_std_step_size_e4.md and
real_rl_format_lr4_grid.md, fewer_steps' forecast and measurement from
docs/results/fewer_steps.md, kept's CPU time from docs/results/bill.md."""

PROMPT_TOKENS = 256
"""Prompt tokens assumed where a run's settings do not bound its prompts (TRL's)."""


@dataclass(frozen=True)
class KvBudget:
    """A vLLM engine's share of memory, which bounds the sequences its KV cache holds."""

    utilization: float
    """gpu_memory_utilization: the fraction of each GPU's memory the engine may take."""
    gpus: int
    """GPUs the engine spans (its tensor-parallel size)."""
    said: str
    """Where the two come from, in the trainer's keys (e.g. 'vllm_gpu_memory_utilization 0.3
    (TRL's default)')."""


@dataclass(frozen=True)
class EngineCall:
    """One call of one generation engine, counted from a trainer's settings."""

    rows: int
    """Sequences the engine decodes in the call."""
    completion_tokens: int
    """The completion cap (decode steps of a call whose rows all run to it)."""
    prompt_tokens: int
    """The prompt length the projection's context assumes."""
    engine: str
    """'graphs' (vLLM or SGLang) or 'eager' (Hugging Face generate): roofline.ENGINES."""
    counted: str
    """How the rows were counted, in the trainer's keys."""
    length_said: str
    """Where the completion length comes from (a key, or the trainer's default)."""
    kv: KvBudget | None = None
    """The engine's memory share, where it is a vLLM engine whose settings are read."""
    max_num_seqs: int | None = None
    """The engine's cap on sequences decoded at once, where set."""

    def __post_init__(self) -> None:
        if self.rows < 1 or self.completion_tokens < 1 or self.prompt_tokens < 0:
            raise ValueError(
                f"an engine call needs rows and completion tokens >= 1, got {self.rows} rows, "
                f"{self.completion_tokens} tokens"
            )
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")


@dataclass(frozen=True)
class DeviceHint:
    """What a user told `frontier check-config` of the device: none of it is required."""

    gpu: str | None = None
    """--gpu: a roofline.GPUS key (else torch's GPU, else an H100, said to be assumed)."""
    curve: str | None = None
    """--step-cost: a step_cost.py JSON file measured on the user's device."""


@dataclass(frozen=True)
class NamedGpu:
    """The GPU a projection is made for, and how it was named."""

    key: str | None
    """A roofline.GPUS key; None for a GPU without a datasheet entry here."""
    said: str
    """How it was named: '--gpu h100', 'torch: NVIDIA H100 80GB HBM3', 'assumed: ...'."""


@dataclass(frozen=True)
class ReadModel:
    """A model's size as read for a projection, or why it is unread."""

    spec: ModelSpec | None
    """The sizes; None when unread."""
    said: str
    """Where they were read from, or why not."""


@dataclass(frozen=True)
class Currency:
    """Where a run's generation call lies against the knee that applies to it."""

    currency: str
    """'steps' (below the knee: latency-bound), 'rows' (beyond it, or beyond what the engine
    decodes at once) or 'unknown' (no knee applies: the model or GPU is unread)."""
    call: EngineCall
    """The call judged."""
    source: str
    """The curve the knee was read from: 'own', 'cpu', 'h200', 'projection' or 'none'."""
    knee: str
    """The knee in words ('~151 rows', '>= 256 rows (censored: ...)'); '' when unknown."""
    basis: str
    """The curve named: measured or projected, from what, for what."""
    reason: str
    """Why this currency: the comparison that decided it."""


def name_gpu(hint: DeviceHint | None = None) -> NamedGpu:
    """The GPU a projection is made for: --gpu where given, else the one this machine has
    (torch's where torch is loaded and sees one, as at a trainer's start-up; else the NVIDIA
    driver's list, read without importing torch), else an H100, labelled as assumed."""
    if hint is not None and hint.gpu is not None:
        if hint.gpu not in GPUS:
            raise ValueError(f"--gpu {hint.gpu!r}: one of {', '.join(GPUS)}")
        return NamedGpu(hint.gpu, f"--gpu {hint.gpu}")
    seen = (_torch_gpu() if "torch" in sys.modules else None) or _driver_gpu()
    if seen is not None:
        return NamedGpu(gpu_key(seen), seen)
    return NamedGpu("h100", "assumed: no GPU visible here; --gpu names yours")


def _torch_gpu() -> str | None:
    """The name of the GPU torch uses ('torch: NVIDIA H100 80GB HBM3'), or None."""
    try:
        import torch

        if torch.cuda.is_available():
            return f"torch: {torch.cuda.get_device_name()}"
    except Exception:  # a broken CUDA install names no GPU, never a traceback
        pass
    return None


_DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")
"""Where the NVIDIA driver lists its GPUs, one folder each with an `information` file."""


def _driver_gpu() -> str | None:
    """The first GPU the NVIDIA driver lists ('driver: NVIDIA H100 80GB HBM3'), or None."""
    try:
        for info in sorted(_DRIVER_GPUS.glob("*/information")):
            for line in info.read_text(encoding="utf-8", errors="replace").splitlines()[:20]:
                key, _, value = line.partition(":")
                if key.strip() == "Model" and value.strip():
                    return f"driver: {value.strip()[:80]}"
    except OSError:
        pass
    return None


def model_spec_from_config(path: str | Path) -> ModelSpec | None:
    """A model's size from a local Hugging Face directory's config.json; None when it is not
    one or lacks the fields (a hub id is never fetched)."""
    file = Path(path) / "config.json"
    try:
        if not file.is_file() or file.stat().st_size > 1 << 20:
            return None
        cfg: Any = loads_bounded(file.read_text(encoding="utf-8"), max_chars=1 << 20, max_depth=32)
    except (OSError, ValueError):  # unreadable, not JSON, or nested too deep
        return None
    return model_spec_from_dict(cfg, Path(path).name) if isinstance(cfg, dict) else None


_MAX_SIZE = 10**8
"""The largest width, layer count or vocabulary read as a size (beyond: not a model config)."""


def model_spec_from_dict(cfg: dict[str, Any], name: str) -> ModelSpec | None:
    """A model's size from its config's fields (a loaded model's `config.to_dict()`), the
    parameters counted from the layer shapes; None when a field is missing."""
    try:
        h, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or h // heads)
        inter, vocab = int(cfg["intermediate_size"]), int(cfg["vocab_size"])
    except (ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError):
        return None  # missing, or not a finite size (Infinity, 1e400)
    sizes = (h, layers, heads, kv, head_dim, inter, vocab)
    if min(sizes) <= 0 or max(sizes) > _MAX_SIZE:
        return None
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    embed = vocab * h * (1 if cfg.get("tie_word_embeddings", True) else 2)
    params = layers * (attention + 3 * h * inter) + embed
    return ModelSpec(name, float(params), layers, kv, head_dim)


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_VARIANT = re.compile(r"-(instruct|it|chat|base)$")


def read_model(name_or_path: Any, loaded: Mapping[str, Any] | None = None) -> ReadModel:
    """A model's size, read the same way by check-config and at start-up: a local directory's
    config.json; else, for a hub id, `roofline.MODELS` by the id's name ('Qwen/Qwen2.5-7B-
    Instruct' -> Qwen2.5-7B), then the Hugging Face cache (never the network); else a loaded
    model's config (`loaded`, at start-up); else unread, saying why."""
    if not isinstance(name_or_path, str) or not name_or_path:
        if loaded is not None:
            return _from_loaded(loaded, "the model")
        return ReadModel(None, "model_name_or_path is not set here")
    local = _directory(name_or_path)
    if local is not None:
        spec = model_spec_from_config(local)
        if spec is not None:
            return ReadModel(spec, f"read from {local / 'config.json'}")
        return ReadModel(None, f"{local / 'config.json'} is missing or lacks the sizes")
    if _HUB_ID.match(name_or_path):
        key = _VARIANT.sub("", name_or_path.rsplit("/", 1)[1].lower())
        if key in MODELS:
            return ReadModel(MODELS[key], "sizes from roofline.MODELS, by the hub id's name")
        cached = _cached_config(name_or_path)
        if cached is not None:
            spec = model_spec_from_config(cached.parent)
            if spec is not None:
                named = ModelSpec(name_or_path, spec.params, spec.layers, spec.kv_heads,
                                  spec.head_dim)  # fmt: skip
                return ReadModel(named, "read from the Hugging Face cache")
    if loaded is not None:
        return _from_loaded(loaded, name_or_path)
    return ReadModel(
        None,
        f"{name_or_path!r} is no local directory, not in the Hugging Face cache and not one of "
        "roofline.MODELS: its size is unread (give a local directory, or download its "
        "config.json first)",
    )


def _directory(name: str) -> Path | None:
    """`name` as a local directory, if it is one (a name too long, with a NUL or a `~user`
    that does not exist is none, never a traceback)."""
    try:
        path = Path(name).expanduser()
        return path if path.is_dir() else None
    except (OSError, RuntimeError, ValueError):
        return None


def _from_loaded(config: Mapping[str, Any], name: str) -> ReadModel:
    spec = model_spec_from_dict(dict(config), name)
    if spec is None:
        return ReadModel(None, "the loaded model's config lacks the sizes")
    return ReadModel(spec, "read from the loaded model's config")


def _cached_config(repo_id: str) -> Path | None:
    """config.json of `repo_id` in the Hugging Face cache, if there (nothing is fetched)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # no hub library, a malformed cache: unread, never a traceback
        return None
    return Path(found) if isinstance(found, str) else None


def _shipped_h200(model: ReadModel, gpu: NamedGpu, engine: str) -> bool:
    """The shipped H200 curve applies: SmolLM2-135M, Hugging Face generate, an H200."""
    return (
        model.spec is not None
        and "smollm2-135m" in model.spec.name.lower()
        and gpu.key == "h200"
        and engine == "eager"
    )


def run_currency(
    call: EngineCall,
    *,
    device: str,
    model: ReadModel,
    gpu: NamedGpu,
    curve: StepCostCurve | None = None,
) -> Currency:
    """The currency of an engine call on `device` ('cpu' or 'gpu'): on `curve` (the user's
    own, where given), else on the shipped curve that measured this device and model, else
    projected from datasheets, else unknown (see the module)."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    if curve is not None:
        return _on_curve(call, curve, "own", f"measured on your device ({curve.name})")
    if device == "cpu":
        return _on_curve(call, load_curve("cpu"), "cpu", "the shipped cpu curve")
    if _shipped_h200(model, gpu, call.engine):
        return _on_curve(call, load_curve("h200"), "h200", "the shipped h200 curve")
    if model.spec is None or gpu.key is None:
        missing = (
            f"the model's size is unread ({model.said})"
            if model.spec is None
            else f"no datasheet here for that GPU ({gpu.said}; --gpu names one of "
            f"{', '.join(GPUS)})"
        )
        return Currency("unknown", call, "none", "", "", f"no knee applies: {missing}")
    return _projected(call, model.spec, model.said, gpu)


def _on_curve(call: EngineCall, curve: StepCostCurve, source: str, name: str) -> Currency:
    """A call judged on a measured curve by the knee's rule on its seconds."""
    lengths = ", ".join(f"{n:,}" for n in curve.lengths)
    basis = (
        f"{name}: {curve.model_name} on {curve.device_name or curve.device_class}, "
        f"measured at {lengths} tokens"
    )
    length = min(max(call.completion_tokens, curve.lengths[0]), curve.lengths[-1])
    if length != call.completion_tokens:  # no line through lengths beyond the measured ones
        basis += f" (read at {length:,}, the nearest measured length)"
    if source == "cpu":
        basis += "; your model and cores move it"
    knee = curve.knee(length)
    verdict = curve.verdict(call.rows, length)
    if knee.censored and call.rows > knee.rows:
        reason = (
            f"beyond the largest measured call ({knee.measured[1]:,} rows): on the curve's "
            f"extrapolation it costs {verdict.ratio:.2f}x its fixed seconds, "
            f"{'at or over' if verdict.currency == 'rows' else 'under'} the rule's "
            f"{KNEE_FACTOR:g}x (extrapolated, not measured)"
        )
    else:
        where = "below" if verdict.currency == "steps" else "at or beyond"
        reason = f"{where} the knee"
    return Currency(verdict.currency, call, source, knee.describe(), basis, reason)


def _projected(call: EngineCall, spec: ModelSpec, model_said: str, gpu: NamedGpu) -> Currency:
    """A call judged against the datasheet projection, bounded by the engine's KV cache and
    max_num_seqs."""
    assert gpu.key is not None
    sheet = GPUS[gpu.key]
    knee = project_knee(
        sheet, spec, ENGINES[call.engine], call.prompt_tokens, call.completion_tokens
    )
    ridge = ridge_rows(sheet, spec, call.prompt_tokens, call.completion_tokens)
    ridge_said = (
        f"compute-bound from the ridge point, ~{ridge:,.0f} rows"
        if ridge is not None
        else "no ridge point: each row's KV-cache read outweighs its FLOPs"
    )
    engine = "vLLM/SGLang with CUDA graphs" if call.engine == "graphs" else "Hugging Face generate"
    basis = (
        f"projected from datasheets, not measured: {spec.name} ({model_said}) on an "
        f"{sheet.name} ({gpu.said}), {engine}; {ridge_said} (why the knee is not the ridge: "
        "benchmarks/results/knee_projection.md)"
    )
    reasons = []
    currency = "rows" if call.rows >= knee else "steps"
    reasons.append(("below" if currency == "steps" else "at or beyond") + " the knee")
    if call.kv is not None:
        tokens = call.prompt_tokens + call.completion_tokens
        cap = kv_capacity_rows(
            sheet, spec, utilization=call.kv.utilization, gpus=call.kv.gpus, tokens=tokens
        )
        over = call.rows > cap
        currency = "rows" if over else currency
        reasons.append(
            f"{'beyond' if over else 'within'} the engine's KV cache, ~{cap:,.0f} sequences of "
            f"{tokens:,} tokens{': rows past it decode in further waves' if over else ''} "
            f"({call.kv.said}; {call.kv.gpus} GPU{'s' * (call.kv.gpus > 1)} less "
            f"{spec.params * 2 / 1e9:.1f} GB of weights)"
        )
    if call.max_num_seqs is not None and call.rows > call.max_num_seqs:
        currency = "rows"
        reasons.append(
            f"beyond max_num_seqs {call.max_num_seqs:,} (rows past it decode in further waves)"
        )
    return Currency(currency, call, "projection", f"~{knee:,.0f} rows", basis, "; ".join(reasons))


def currency_line(c: Currency) -> str:
    """One line: the currency, the call and how it was counted, the knee and which curve it was
    read from, and what saves there with its evidence's limits."""
    call = c.call
    head = (
        f"{c.currency}: an engine decodes {call.rows:,} rows a call ({call.counted}), "
        f"{call.completion_tokens:,}-token completions ({call.length_said})"
    )
    if c.currency == "unknown":
        return f"{head}; {c.reason}. " + EVIDENCE["unknown"]
    knee = (
        f"the knee (where a call's seconds reach {KNEE_FACTOR:g}x its fixed cost): {c.knee}, "
        f"{c.basis}"
    )
    return f"{head}; {c.reason}; {knee}. " + EVIDENCE[c.currency].format(**FIGURES)
