"""Where a generation step turns throughput-bound, projected from public specs (not measured).

A decode step of r sequences reads the weights once and each sequence's KV cache, and does
2 x parameters x r floating-point operations. Its seconds, on a GPU of memory bandwidth BW and
dense bf16 throughput F, under an engine with a fixed cost a decode step (kernel launches,
Python) and a cost a row (sampling, bookkeeping):

    t(r) = engine_fixed + r * engine_per_row
           + max((P*w + r*c*kv) / BW, 2*P*r / F)

with P parameters of w bytes, c tokens of context and kv bytes of KV cache a token. The knee
is the rule of `StepCostCurve.knee` applied to it: the r at which t(r) reaches twice t(1).
Every number here is a projection from datasheets and model configs, labelled as such; the
`eager` engine's two costs are calibrated on the one GPU measurement this project holds
(SmolLM2-135M on an H200, the reference trainer's generate), the `graphs` engine's (vLLM or
SGLang with CUDA graphs) are assumed. Measure your own step with benchmarks/step_cost.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontier_rft.step_cost.curve import KNEE_FACTOR

__all__ = ["ENGINES", "GPUS", "MODELS", "Engine", "Gpu", "ModelSpec", "decode_s", "project_knee"]


@dataclass(frozen=True)
class Gpu:
    """A GPU's public datasheet figures."""

    name: str
    """Display name."""
    bandwidth: float
    """HBM bandwidth, bytes per second."""
    flops: float
    """Dense bf16 tensor throughput, FLOP per second (no sparsity)."""


@dataclass(frozen=True)
class ModelSpec:
    """A decoder's size, from its public config."""

    name: str
    """Display name."""
    params: float
    """Parameters."""
    layers: int
    """Transformer layers."""
    kv_heads: int
    """Key-value heads (grouped-query attention)."""
    head_dim: int
    """Width of one head."""

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> float:
        """KV-cache bytes one token of one sequence holds: keys and values of every layer."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class Engine:
    """What a generation engine adds to the roofline, a decode step."""

    name: str
    """Display name."""
    fixed_per_layer_s: float
    """Seconds a decode step costs a layer whatever the batch (launches, Python)."""
    per_row_s: float
    """Seconds a decode step costs a row beyond the roofline (sampling, bookkeeping)."""
    basis: str
    """Where the two numbers come from."""


GPUS = {
    "a100": Gpu("A100 80GB SXM", 2.039e12, 312e12),
    "l40s": Gpu("L40S", 0.864e12, 362e12),
    "h100": Gpu("H100 SXM", 3.35e12, 989e12),
    "h200": Gpu("H200 SXM", 4.8e12, 989e12),
    "b200": Gpu("B200", 8.0e12, 2250e12),
}
"""Datasheet figures (memory bandwidth; dense bf16 throughput without sparsity)."""

MODELS = {
    "smollm2-135m": ModelSpec("SmolLM2-135M", 1.35e8, 30, 3, 64),
    "qwen2.5-0.5b": ModelSpec("Qwen2.5-0.5B", 4.94e8, 24, 2, 64),
    "qwen2.5-1.5b": ModelSpec("Qwen2.5-1.5B", 1.54e9, 28, 2, 128),
    "qwen2.5-7b": ModelSpec("Qwen2.5-7B", 7.6e9, 28, 4, 128),
    "llama-3.1-8b": ModelSpec("Llama-3.1-8B", 8.0e9, 32, 8, 128),
}
"""Sizes from the models' public configs."""

ENGINES = {
    "eager": Engine(
        "eager (Hugging Face generate, the reference trainer)",
        0.81e-3,
        13e-6,
        "calibrated: SmolLM2-135M on an H200 generated 16 rows x 24 tokens in 0.58 s (24 ms a "
        "decode step over 30 layers) and 1,024 rows in 0.91 s (13 us a row a decode step)",
    ),
    "graphs": Engine(
        "graphs (vLLM or SGLang with CUDA graphs)",
        0.05e-3,
        0.0,
        "assumed: 0.05 ms a layer a decode step, no cost a row beyond the roofline",
    ),
}
"""Generation engines."""


def decode_s(
    rows: float, context: float, gpu: Gpu, model: ModelSpec, engine: Engine, dtype_bytes: int = 2
) -> float:
    """Projected seconds of one decode step of `rows` sequences at `context` tokens each."""
    weights = model.params * dtype_bytes
    kv = rows * context * model.kv_bytes_per_token(dtype_bytes)
    roof = max((weights + kv) / gpu.bandwidth, 2.0 * model.params * rows / gpu.flops)
    return engine.fixed_per_layer_s * model.layers + engine.per_row_s * rows + roof


def project_knee(
    gpu: Gpu,
    model: ModelSpec,
    engine: Engine,
    prompt_tokens: int,
    completion_tokens: int,
    *,
    max_rows: float = 1e7,
) -> float:
    """Projected knee in rows (sequences a generate call decodes together): the rows at which
    a decode step at the completion's mean context reaches KNEE_FACTOR x one row's."""
    if prompt_tokens < 0 or completion_tokens < 1:
        raise ValueError("need prompt_tokens >= 0 and completion_tokens >= 1")
    context = prompt_tokens + completion_tokens / 2.0
    target = KNEE_FACTOR * decode_s(1.0, context, gpu, model, engine)
    if decode_s(max_rows, context, gpu, model, engine) < target:
        return max_rows
    lo, hi = 1.0, max_rows
    for _ in range(200):  # t(r) is increasing in r: bisection
        mid = (lo + hi) / 2.0
        if decode_s(mid, context, gpu, model, engine) < target:
            lo = mid
        else:
            hi = mid
    return hi
