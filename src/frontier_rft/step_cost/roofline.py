"""Where a generation call turns throughput-bound, projected from public specs (not measured).

A decode step of r sequences reads the weights once and each sequence's KV cache, and does
2 x parameters x r floating-point operations. Its seconds, on a GPU of memory bandwidth BW and
dense bf16 throughput F, under an engine with a fixed cost a decode step (kernel launches,
Python) and a cost a row (sampling, bookkeeping):

    t(r) = engine_fixed + r * engine_per_row
           + max((P*w + r*c*kv) / BW, 2*P*r / F)

with P parameters of w bytes, c tokens of context and kv bytes of KV cache a token.

**The knee** (`project_knee`) is the rule of `StepCostCurve.knee`, the one definition this
package uses for a measured curve and a projection alike: the rows at which a call's seconds
reach twice its fixed cost t(0) (the seconds of the weights' read and the engine's launches,
which a call pays whatever its rows), that is where the rows' own seconds equal the fixed
seconds. Below it most of a call's seconds are paid whatever its rows (the run pays in steps);
beyond it most follow the rows (it pays in rows).

**The ridge point** (`ridge_rows`), which practitioners quote, is another quantity: the rows at
which the compute term overtakes the memory term (the arithmetic intensity reaching F / BW).
It says where a row's marginal cost turns from its KV read to its full FLOPs, not where the
rows' seconds outweigh the fixed ones, and the two differ either way:

- where a row's KV read is cheap next to its FLOPs (a large model, a short context), the call
  costs about its floor up to the ridge and the rows' own seconds reach the fixed ones only
  beyond it: Qwen2.5-7B with CUDA graphs at 24 tokens, knee 682 rows against a ridge of 421 on
  an H100, 335 against 181 on an A100 (under a pure roofline, twice the weights-only ridge
  plus the engine's fixed cost over a row's FLOPs). Between the two each added row costs its
  full FLOPs while the call still costs under twice its floor;
- where the KV read is nearly as dear as the FLOPs (Qwen2.5-7B at 1,024 tokens: 13.1 us against
  15.4 us on an H100), the rows' seconds pass the fixed ones long before the ridge (knee 452,
  ridge 2,041); where it is dearer (4,096 tokens: 39.4 us) there is no ridge at all, and the
  call turns linear in rows while still memory-bound (knee 151).

The knee is the one used because the currency question is which part of a call's seconds
dominates, the fixed part (a saved step saves it, a saved row little) or the rows' (a saved
row saves its share), and because it is the one rule that reads a measured curve (which shows
no ridge: the CPU's is affine, the H200's flat) and a projection alike. Lines that quote a
projection name both.

Every number here is a projection from datasheets and model configs, labelled as such; the
`eager` engine's two costs are calibrated on the one GPU measurement this project holds
(SmolLM2-135M on an H200, the reference trainer's generate), the `graphs` engine's (vLLM or
SGLang with CUDA graphs) are assumed. Measure your own step with benchmarks/step_cost.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontier_rft.step_cost.curve import KNEE_FACTOR

__all__ = [
    "ENGINES",
    "GPUS",
    "MODELS",
    "Engine",
    "Gpu",
    "ModelSpec",
    "decode_s",
    "gpu_key",
    "kv_capacity_rows",
    "project_knee",
    "ridge_rows",
]


@dataclass(frozen=True)
class Gpu:
    """A GPU's public datasheet figures."""

    name: str
    """Display name."""
    bandwidth: float
    """HBM bandwidth, bytes per second."""
    flops: float
    """Dense bf16 tensor throughput, FLOP per second (no sparsity)."""
    memory: float
    """Memory, bytes (what a vLLM engine's gpu_memory_utilization is a fraction of)."""


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
    "a100": Gpu("A100 80GB SXM", 2.039e12, 312e12, 80e9),
    "l40s": Gpu("L40S", 0.864e12, 362e12, 48e9),
    "h100": Gpu("H100 SXM", 3.35e12, 989e12, 80e9),
    "h200": Gpu("H200 SXM", 4.8e12, 989e12, 141e9),
    "b200": Gpu("B200", 8.0e12, 2250e12, 180e9),
}
"""Datasheet figures (memory bandwidth; dense bf16 throughput without sparsity; memory, the
B200's as DGX B200 lists it, 1,440 GB over 8)."""

_GPU_NAMES = (
    ("h200", "h200"),
    ("h100", "h100"),
    ("a100", "a100"),
    ("l40s", "l40s"),
    ("b200", "b200"),
)
"""(a word in the name torch reports, the GPUS key) in the order they are tried."""
_OTHER_PARTS = ("pcie", "nvl", "40gb", "h100 mig", "h800", "a800")
"""Words naming a part whose bandwidth or memory differ from the GPUS entry of its family."""


def gpu_key(device_name: str) -> str | None:
    """The GPUS key of a GPU as torch names it ('NVIDIA H100 80GB HBM3' -> 'h100'); None for a
    GPU without a datasheet entry here (an H100 PCIe, an A100 40GB, an RTX card)."""
    name = device_name.lower()
    if any(part in name for part in _OTHER_PARTS):
        return None
    return next((key for word, key in _GPU_NAMES if word in name), None)


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


def _context(prompt_tokens: int, completion_tokens: int) -> float:
    """The mean context of a decode step over a completion (its prompt and half of it)."""
    if prompt_tokens < 0 or completion_tokens < 1:
        raise ValueError("need prompt_tokens >= 0 and completion_tokens >= 1")
    return prompt_tokens + completion_tokens / 2.0


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
    a decode step at the completion's mean context costs KNEE_FACTOR x its fixed cost, the
    step's seconds at zero rows (the module says why this and not the ridge point)."""
    context = _context(prompt_tokens, completion_tokens)
    target = KNEE_FACTOR * decode_s(0.0, context, gpu, model, engine)
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


def ridge_rows(
    gpu: Gpu, model: ModelSpec, prompt_tokens: int, completion_tokens: int, dtype_bytes: int = 2
) -> float | None:
    """The ridge point in rows: where a decode step's compute term, 2 P r / F, overtakes its
    memory term, (P w + r c kv) / BW; None where it never does (each row's KV-cache read
    costs more than its FLOPs: the step stays memory-bound at any rows)."""
    context = _context(prompt_tokens, completion_tokens)
    per_row = 2.0 * model.params / gpu.flops - context * model.kv_bytes_per_token(dtype_bytes) / (
        gpu.bandwidth
    )
    if per_row <= 0.0:
        return None
    return model.params * dtype_bytes / gpu.bandwidth / per_row


def kv_capacity_rows(
    gpu: Gpu,
    model: ModelSpec,
    *,
    utilization: float,
    gpus: int,
    tokens: int,
    dtype_bytes: int = 2,
) -> float:
    """Sequences of `tokens` tokens that a vLLM engine's KV cache holds at once: its share of
    memory (`utilization` x the memory of its `gpus`, tensor-parallel) less the weights, over
    one sequence's KV bytes. The activations' peak, which vLLM also reserves, is not
    subtracted: at most this many (0 where the weights do not fit)."""
    if tokens < 1 or gpus < 1:
        raise ValueError(f"need tokens and gpus >= 1, got {tokens}, {gpus}")
    free = utilization * gpu.memory * gpus - model.params * dtype_bytes
    return max(free, 0.0) / (model.kv_bytes_per_token(dtype_bytes) * tokens)
