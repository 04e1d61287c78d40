"""Which currency a run pays in, from its step's shape and device, and what saves there.

`run_currency` places a run's generation step against a knee: the measured CPU curve for a
CPU run; for a GPU run, the roofline projection for the run's model (read from its local
config.json) on a named GPU (default H100) under its engine (vLLM: `graphs`, else `eager`),
or, without a readable model config, the measured H200 curve of SmolLM2-135M. `currency_line`
says it in one line for `frontier check-config` and the adapters' start-up lines, with what
reached uniform's final score soonest in that currency on our evidence (`EVIDENCE`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_rft.step_cost.curve import load_curve
from frontier_rft.step_cost.roofline import ENGINES, GPUS, ModelSpec, project_knee

__all__ = [
    "EVIDENCE",
    "Currency",
    "currency_line",
    "model_spec_from_config",
    "model_spec_from_dict",
    "run_currency",
]

PROMPT_TOKENS = 256
"""Prompt tokens assumed where a run's prompts are not read (the projection's context)."""

EVIDENCE = {
    "steps": (
        "on our evidence a larger step of uniform reached uniform's final held-out pass@1 "
        "soonest in steps (2x the prompts: {steps_b32} of uniform's steps, {h200_b32} of its "
        "H200 seconds, projected from CPU runs of the fast-format-lr4 regime, {pairs_ff} "
        "pairs); no selection beat uniform at the same rows a step: raise the prompts a step "
        "toward the knee before selecting (docs/results/device_cost.md)"
    ),
    "rows": (
        "rows are the cost: fewer rollouts save seconds here (rollouts: kept spends 0.78-0.84x "
        "uniform's rollouts at uniform's steps, at a held-out cost on a pretrained LM; "
        "docs/results/bill.md), and a larger step still "
        "reached uniform's final pass@1 in fewer rollouts on the fast-format-lr4 CPU regime "
        "(2x the prompts: {rollouts_b32} of uniform's rollouts; not on the slower standard "
        "testbed; docs/results/device_cost.md)"
    ),
}
"""What saves in each currency, the figures filled from `FIGURES` (docs/results/device_cost.md
quotes the same report; a test checks the two agree)."""

FIGURES = {
    "steps_b32": "0.24x",
    "h200_b32": "0.25x",
    "rollouts_b32": "0.49x",
    "pairs_ff": "10",
}
"""The figures EVIDENCE quotes, from benchmarks/results/real_rl_format_lr4_step_size.md."""


@dataclass(frozen=True)
class Currency:
    """Where a run's step lies against the knee that applies to it."""

    currency: str
    """'steps' (below the knee: latency-bound) or 'rows' (beyond it)."""
    rows: int
    """Rows a generation call of the run makes (per process)."""
    knee: float
    """The knee in rows."""
    censored: bool
    """The knee is at least `knee` (beyond a measured curve)."""
    basis: str
    """Where the knee comes from: measured curve or projection, with what."""


def model_spec_from_config(path: str | Path) -> ModelSpec | None:
    """A model's size from a local Hugging Face directory's config.json; None when it is not
    one or lacks the fields (a hub id is never fetched)."""
    file = Path(path) / "config.json"
    try:
        if not file.is_file() or file.stat().st_size > 1 << 20:
            return None
        cfg: Any = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return model_spec_from_dict(cfg, Path(path).name) if isinstance(cfg, dict) else None


def model_spec_from_dict(cfg: dict[str, Any], name: str) -> ModelSpec | None:
    """A model's size from its config's fields (a loaded model's `config.to_dict()`), the
    parameters counted from the layer shapes; None when a field is missing."""
    try:
        h, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or h // heads)
        inter, vocab = int(cfg["intermediate_size"]), int(cfg["vocab_size"])
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    if min(h, layers, heads, kv, head_dim, inter, vocab) <= 0:
        return None
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    embed = vocab * h * (1 if cfg.get("tie_word_embeddings", True) else 2)
    params = layers * (attention + 3 * h * inter) + embed
    return ModelSpec(name, float(params), layers, kv, head_dim)


def run_currency(
    rows: int,
    completion_tokens: int,
    *,
    device: str,
    vllm: bool = False,
    model: ModelSpec | None = None,
    gpu: str = "h100",
) -> Currency:
    """The currency of a run whose generation calls make `rows` rows of up to
    `completion_tokens` tokens on `device` ('cpu' or 'gpu')."""
    if rows < 1 or completion_tokens < 1:
        raise ValueError(f"need rows and completion_tokens >= 1, got {rows}, {completion_tokens}")
    if device == "cpu":
        curve = load_curve("cpu")
        knee = curve.knee(completion_tokens)
        basis = f"measured on 2 CPU cores ({curve.model_name})"
        censored = knee.censored
        point = knee.rows
    elif model is not None:
        engine = "graphs" if vllm else "eager"
        point = project_knee(GPUS[gpu], model, ENGINES[engine], PROMPT_TOKENS, completion_tokens)
        censored = False
        basis = (
            f"projected from datasheets for {model.name} on an {GPUS[gpu].name}, {engine} "
            "generation (measure yours: benchmarks/step_cost.py)"
        )
    else:
        curve = load_curve("h200")
        knee = curve.knee(completion_tokens)
        point, censored = knee.rows, knee.censored
        basis = f"measured for {curve.model_name} on an {curve.device_name} (model size unread)"
    below = rows < point or (censored and rows <= point)
    return Currency("steps" if below else "rows", rows, point, censored, basis)


def currency_line(c: Currency) -> str:
    """One line: the currency, the knee and its basis, and what saves there."""
    knee = f">= {c.knee:,.0f}" if c.censored else f"~{c.knee:,.0f}"
    where = "below" if c.currency == "steps" else "beyond"
    return (
        f"{c.currency} (a generation call of {c.rows:,} rows lies {where} the knee, "
        f"{knee} rows, {c.basis}); " + EVIDENCE[c.currency].format(**FIGURES)
    )
