"""The currency a TRL run pays in (`frontier_rft.step_cost.advice`), from its GRPOConfig
values: `frontier check-config trl` and the trainer's start-up line say it the same way.

The rows an engine decodes in one call, as TRL 1.16 makes them: one generation batch of
`generation_batch_size` rows every `steps_per_generation` steps (TRL's own rule when either is
unset: per_device_train_batch_size x processes x steps_per_generation, the latter defaulting to
gradient_accumulation_steps), each process holding its share; Hugging Face generate decodes a
process's share; a vLLM server gathers every process's prompts into one call; colocated vLLM
with tensor parallelism k gathers k processes' shares into each engine. TRL's defaults for an
unset key (the completion cap, vLLM's mode and memory share) are read from the installed
TRL's source, without importing it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
from collections.abc import Mapping
from typing import Any

from frontier_rft.integrations.currency import currency_for, read_fraction, read_int, read_str
from frontier_rft.integrations.source_scan import module_file, parsed
from frontier_rft.step_cost.advice import (
    PROMPT_TOKENS,
    Currency,
    DeviceHint,
    EngineCall,
    KvBudget,
    currency_line,
)

__all__ = [
    "TRL_DEFAULTS",
    "trl_currency",
    "trl_currency_line",
    "trl_defaults",
    "trl_engine_call",
    "trl_generation_batch",
]

TRL_DEFAULTS = {
    "max_completion_length": 512,
    "vllm_mode": "colocate",
    "vllm_gpu_memory_utilization": 0.3,
    "vllm_tensor_parallel_size": 1,
}
"""TRL 1.16's defaults for the keys the line reads, where the installed TRL's cannot be read."""
TRAINING_ARGUMENTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
"""transformers' TrainingArguments defaults (GRPOConfig keeps them)."""
SERVER = KvBudget(
    0.9, 1, "trl vllm-serve's defaults, gpu_memory_utilization 0.9 on one GPU: the server's "
    "own flags, not read here"
)  # fmt: skip
"""A vLLM server's memory share as `trl vllm-serve` starts it without flags."""
_CONFIGS = {"grpo": ("trl.trainer.grpo_config", "GRPOConfig"),
            "rloo": ("trl.trainer.rloo_config", "RLOOConfig")}  # fmt: skip


@functools.cache
def trl_defaults(kind: str = "grpo") -> tuple[dict[str, Any], str]:
    """TRL's defaults for the keys of TRL_DEFAULTS, read from the installed TRL's config class
    source, and whose they are ('TRL 1.16.0's'); TRL_DEFAULTS where it cannot be read."""
    module, name = _CONFIGS.get(kind, _CONFIGS["grpo"])
    found: dict[str, Any] = {}
    path = module_file(module)
    try:
        tree = parsed(path) if path is not None else None
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        tree = None
    cls = next(
        (n for n in (tree.body if tree else []) if isinstance(n, ast.ClassDef) and n.name == name),
        None,
    )
    for node in cls.body if cls is not None else []:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            key = node.target.id
            if key in TRL_DEFAULTS and isinstance(node.value, ast.Call):
                for kw in node.value.keywords:
                    if kw.arg == "default":
                        with contextlib.suppress(ValueError):  # not a literal: not read
                            found[key] = ast.literal_eval(kw.value)
    if set(found) != set(TRL_DEFAULTS):
        return dict(TRL_DEFAULTS), "TRL 1.16's (TRL's own not read here)"
    try:
        version = importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        version = "(version unknown)"
    return found, f"TRL {version}'s"


def _flag(values: Mapping[str, Any], key: str) -> bool:
    value = values.get(key)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def trl_generation_batch(values: Mapping[str, Any], processes: int = 1) -> tuple[int, int, int]:
    """(per_device_train_batch_size, steps_per_generation, generation_batch_size) of these
    values, as TRL 1.16 counts them (see the module)."""
    per_device = read_int(values, "per_device_train_batch_size", 8, "transformers'").value
    accumulate = read_int(values, "gradient_accumulation_steps", 1, "transformers'").value
    set_gbs = values.get("generation_batch_size") is not None
    set_spg = values.get("steps_per_generation") is not None
    spg = read_int(values, "steps_per_generation", accumulate, "").value
    gbs = read_int(values, "generation_batch_size", per_device * processes * spg, "").value
    if set_gbs and not set_spg:
        spg = max(gbs // (per_device * processes), 1)
    return per_device, spg, gbs


def trl_engine_call(values: Mapping[str, Any], processes: int = 1) -> EngineCall:
    """The call one generation engine of this TRL run makes (see the module)."""
    defaults, whose = trl_defaults(str(values.get("trainer", "grpo")))
    per_device, spg, gbs = trl_generation_batch(values, processes)
    per_process = max(gbs // processes, 1)
    plural = "es" * (processes > 1)
    counted = (  # said alike from a file as written and from TRL's parsed GRPOConfig
        f"generation_batch_size {gbs:,} = per_device_train_batch_size {per_device} x "
        f"{processes} process{plural} x steps_per_generation {spg}"
    )
    length = read_int(values, "max_completion_length", defaults["max_completion_length"], whose)
    length_said = "max_completion_length" if length.given else f"{whose} default"
    common = {"completion_tokens": length.value, "prompt_tokens": PROMPT_TOKENS}
    if not _flag(values, "use_vllm"):
        counted += f"; each process decodes its {per_process:,} with Hugging Face generate"
        return EngineCall(per_process, engine="eager", counted=counted, length_said=length_said,
                          **common)  # fmt: skip
    mode = read_str(values, "vllm_mode", defaults["vllm_mode"])
    if mode == "server":
        counted += ", gathered from every process into one vLLM server call"
        return EngineCall(gbs, engine="graphs", counted=counted, length_said=length_said,
                          kv=SERVER, **common)  # fmt: skip
    tp = read_int(values, "vllm_tensor_parallel_size", defaults["vllm_tensor_parallel_size"],
                  whose).value  # fmt: skip
    share = read_fraction(
        values, "vllm_gpu_memory_utilization", defaults["vllm_gpu_memory_utilization"], whose
    )
    counted += (
        f"; colocated vLLM, tensor-parallel {tp}: each engine decodes {tp} processes' "
        f"{per_process:,} each"
        if tp > 1
        else f"; colocated vLLM: each process's engine decodes its {per_process:,}"
    )
    kv = KvBudget(share.value, tp, share.named("vllm_gpu_memory_utilization"))
    return EngineCall(per_process * tp, engine="graphs", counted=counted, length_said=length_said,
                      kv=kv, **common)  # fmt: skip


def trl_currency(
    values: Mapping[str, Any],
    model: Mapping[str, Any] | None = None,
    *,
    processes: int = 1,
    hint: DeviceHint | None = None,
    on_cpu: bool | None = None,
) -> Currency:
    """The currency of a run of these GRPOConfig values (TRL's defaults where unset) on
    `processes` processes, its model read from `model_name_or_path` (or `model`, a loaded
    model's config, where that cannot be read: `read_model`), on the GPU the hint or torch
    names; a CPU run (`use_cpu`, or `on_cpu` at start-up) on the shipped CPU curve."""
    call = trl_engine_call(values, processes)
    cpu = _flag(values, "use_cpu") if on_cpu is None else on_cpu
    name = values.get("model_name_or_path")
    if name is None and model is not None:
        name = model.get("_name_or_path")
    return currency_for(call, name, device="cpu" if cpu else "gpu", hint=hint, loaded=model)


def trl_currency_line(
    values: Mapping[str, Any],
    model: Mapping[str, Any] | None = None,
    *,
    processes: int = 1,
    hint: DeviceHint | None = None,
    on_cpu: bool | None = None,
) -> str:
    """One line: `trl_currency` said (`currency_line`)."""
    return currency_line(trl_currency(values, model, processes=processes, hint=hint, on_cpu=on_cpu))
