"""The currency a SkyRL run pays in (`frontier_rft.step_cost.advice`), from its config: said by
`frontier check-config skyrl` and `python -m frontier_rft.integrations.skyrl.main` at start-up.

A step generates `trainer.train_batch_size` prompts x `generator.n_samples_per_prompt`
samples, spread over the inference engines (`generator.inference_engine.num_engines` x its
`data_parallel_size` decoding replicas, each over `tensor_parallel_size` GPUs). Each engine's
memory share (`gpu_memory_utilization`) and `max_num_seqs` bound what it decodes at once. An
unset key reads as SkyRL 0.3.0's default (SkyRL is not importable where check-config runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frontier_rft.integrations.batch_settings import start_for_call
from frontier_rft.integrations.currency import currency_for, read_fraction, read_int
from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.step_cost.advice import Currency, DeviceHint, EngineCall, KvBudget, currency_line

__all__ = [
    "SKYRL_DEFAULTS",
    "skyrl_currency",
    "skyrl_currency_line",
    "skyrl_engine_call",
    "skyrl_start_lines",
]

ENGINE = "generator.inference_engine"
SKYRL_DEFAULTS: dict[str, Any] = {
    "trainer.train_batch_size": 1024,
    "generator.n_samples_per_prompt": 5,
    f"{ENGINE}.num_engines": 1,
    f"{ENGINE}.data_parallel_size": 1,
    f"{ENGINE}.tensor_parallel_size": 1,
    f"{ENGINE}.gpu_memory_utilization": 0.8,
    f"{ENGINE}.max_num_seqs": 1024,
    "generator.sampling_params.max_generate_length": 1024,
    "trainer.max_prompt_length": 512,
}
"""SkyRL 0.3.0's defaults (skyrl/train/config/config.py) for the keys read; a tests_skyrl test
checks them against the installed SkyRL."""
WHOSE = "SkyRL 0.3.0's"


def skyrl_engine_call(config: Mapping[str, Any]) -> EngineCall:
    """The call one inference engine replica of this SkyRL run makes (see the module)."""

    def setting(key: str) -> Any:
        return read_int(config, key, SKYRL_DEFAULTS[key], WHOSE)

    batch, n = setting("trainer.train_batch_size"), setting("generator.n_samples_per_prompt")
    engines, dp, tp = (setting(f"{ENGINE}.{k}") for k in (
        "num_engines", "data_parallel_size", "tensor_parallel_size"))  # fmt: skip
    replicas = engines.value * dp.value
    total = batch.value * n.value
    counted = (
        f"{batch.named('trainer.train_batch_size')} x {n.named('n_samples_per_prompt')} = "
        f"{total:,} rows over {replicas} engine{'s' * (replicas > 1)} "
        f"({engines.named('num_engines')}"
        + (f" x {dp.named('data_parallel_size')}" if dp.value > 1 else "")
        + f"), each over {tp.named('tensor_parallel_size')} GPU{'s' * (tp.value > 1)}"
    )
    length = setting("generator.sampling_params.max_generate_length")
    key = f"{ENGINE}.gpu_memory_utilization"
    share = read_fraction(config, key, SKYRL_DEFAULTS[key], WHOSE)
    return EngineCall(
        -(-total // replicas),
        completion_tokens=length.value,
        prompt_tokens=setting("trainer.max_prompt_length").value,
        engine="graphs",  # SkyRL 0.3 generates with vLLM
        counted=counted,
        length_said=length.named("max_generate_length"),
        kv=KvBudget(share.value, tp.value, share.named("gpu_memory_utilization")),
        max_num_seqs=setting(f"{ENGINE}.max_num_seqs").value,
    )


def skyrl_currency(config: Mapping[str, Any], hint: DeviceHint | None = None) -> Currency:
    """The currency of this run's call (`skyrl_engine_call`), its model read from
    trainer.policy.model.path (`step_cost.advice.read_model`)."""
    return currency_for(
        skyrl_engine_call(config), dotted_get(config, "trainer.policy.model.path"), hint=hint
    )


def skyrl_currency_line(config: Mapping[str, Any], hint: DeviceHint | None = None) -> str:
    """One line: `skyrl_currency` said (`currency_line`)."""
    return currency_line(skyrl_currency(config, hint))


def skyrl_start_lines(
    config: Mapping[str, Any], hint: DeviceHint | None = None, currency: Currency | None = None
) -> list[str]:
    """The least-regret start from this run's step (`trainer.train_batch_size` x
    `n_samples_per_prompt`) in SkyRL's keys (`start_for_call`), on `currency` where the
    caller has read it."""

    def setting(key: str) -> int:
        return int(read_int(config, key, SKYRL_DEFAULTS[key], WHOSE).value)

    return start_for_call(
        "skyrl",
        currency or skyrl_currency(config, hint),
        prompts=setting("trainer.train_batch_size"),
        rollouts=setting("generator.n_samples_per_prompt"),
        lr=dotted_get(config, "trainer.policy.optimizer_config.lr"),
        hint=hint,
    )
