"""The currency a verl run pays in (`frontier_rft.step_cost.advice`), from its config: said by
`frontier check-config verl` and the Hydra pre-flight at start-up.

A step generates `data.gen_batch_size` (else `data.train_batch_size`) prompts x
`actor_rollout_ref.rollout.n` rollouts, spread over the rollout engines: the rollout GPUs
(`trainer.n_gpus_per_node` x `trainer.nnodes`, or the rollout's own where it has nodes) over
each engine's `tensor_model_parallel_size` x `pipeline_model_parallel_size`. Each engine's
memory share (`gpu_memory_utilization`) and `max_num_seqs` bound what it decodes at once. An
unset key reads as the installed verl's default (its generated trainer config), else verl
0.9.1's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from frontier_rft.integrations.batch_settings import start_for_call
from frontier_rft.integrations.currency import currency_for, read_fraction, read_int, read_str
from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.step_cost.advice import Currency, DeviceHint, EngineCall, KvBudget, currency_line

__all__ = [
    "VERL_DEFAULTS",
    "verl_currency",
    "verl_currency_line",
    "verl_engine_call",
    "verl_start_lines",
]

ROLLOUT = "actor_rollout_ref.rollout"
VERL_DEFAULTS: dict[str, Any] = {
    "data.train_batch_size": 1024,
    f"{ROLLOUT}.n": 1,
    f"{ROLLOUT}.tensor_model_parallel_size": 2,
    f"{ROLLOUT}.pipeline_model_parallel_size": 1,
    f"{ROLLOUT}.gpu_memory_utilization": 0.5,
    f"{ROLLOUT}.max_num_seqs": 256,
    f"{ROLLOUT}.nnodes": 0,
    "trainer.n_gpus_per_node": 8,
    "trainer.nnodes": 1,
    "data.max_response_length": 512,
    "data.max_prompt_length": 512,
}
"""verl 0.9.1's defaults (verl/trainer/config/_generated_ppo_trainer.yaml) for the keys read."""


@functools.cache
def _defaults(primary: str) -> tuple[dict[str, Any], str]:
    """The installed verl's defaults for VERL_DEFAULTS' keys, and whose they are."""
    from frontier_rft.integrations.verl.verl_keys import _schemas

    found = _schemas(primary)
    if isinstance(found, str):
        return dict(VERL_DEFAULTS), "verl 0.9.1's"
    version, _, _, configs = found
    out = dict(VERL_DEFAULTS)
    for key, fallback in VERL_DEFAULTS.items():
        value = dotted_get(configs[0], key) if configs else None
        if type(value) is type(fallback):
            out[key] = value
    return out, f"verl {version}'s"


def _run_defaults(config: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The defaults of the trainer config this run's `defaults` list names (else ppo_trainer)."""
    primary = "ppo_trainer"
    defaults_list = config.get("defaults")
    if isinstance(defaults_list, list):
        primary = next(
            (d for d in defaults_list if isinstance(d, str) and d.endswith("_trainer")), primary
        )
    return _defaults(primary)


def verl_engine_call(config: Mapping[str, Any]) -> EngineCall:
    """The call one rollout engine of this verl run makes (see the module)."""
    defaults, whose = _run_defaults(config)

    def setting(key: str) -> Any:
        return read_int(config, key, defaults[key], whose)

    generation = read_int(config, "data.gen_batch_size", 0, whose)
    batch = generation if generation.given else setting("data.train_batch_size")
    n, tp, pp = (setting(f"{ROLLOUT}.{k}") for k in (
        "n", "tensor_model_parallel_size", "pipeline_model_parallel_size"))  # fmt: skip
    rollout_nodes = read_int(config, f"{ROLLOUT}.nnodes", 0, whose)
    where = ROLLOUT if rollout_nodes.value > 0 else "trainer"
    nodes = rollout_nodes if rollout_nodes.value > 0 else setting("trainer.nnodes")
    per_node = read_int(config, f"{where}.n_gpus_per_node",
                        defaults["trainer.n_gpus_per_node"], whose)  # fmt: skip
    gpus = per_node.value * nodes.value
    engines = max(gpus // (tp.value * pp.value), 1)
    total = batch.value * n.value
    rows = -(-total // engines)
    batch_name = "data.gen_batch_size" if generation.given else "data.train_batch_size"
    counted = (
        f"{batch.named(batch_name)} x {n.named('rollout.n')} = "
        f"{total:,} rows over {engines} engine{'s' * (engines > 1)}: {gpus} GPUs "
        f"({per_node.named(where + '.n_gpus_per_node')} x {nodes.named('nnodes')}) over "
        f"{tp.named('tensor_model_parallel_size')}"
        + (f" x {pp.named('pipeline_model_parallel_size')}" if pp.value > 1 else "")
    )
    length = setting("data.max_response_length")
    key = f"{ROLLOUT}.gpu_memory_utilization"
    share = read_fraction(config, key, defaults[key], whose)
    name = read_str(config, f"{ROLLOUT}.name", "vllm")
    return EngineCall(
        rows,
        completion_tokens=length.value,
        prompt_tokens=setting("data.max_prompt_length").value,
        engine="eager" if name == "hf" else "graphs",
        counted=counted,
        length_said=length.named("data.max_response_length"),
        kv=KvBudget(share.value, tp.value, share.named("gpu_memory_utilization")),
        max_num_seqs=setting(f"{ROLLOUT}.max_num_seqs").value,
    )


def verl_currency(config: Mapping[str, Any], hint: DeviceHint | None = None) -> Currency:
    """The currency of this run's call (`verl_engine_call`), its model read from
    actor_rollout_ref.model.path (`step_cost.advice.read_model`)."""
    return currency_for(
        verl_engine_call(config), dotted_get(config, "actor_rollout_ref.model.path"), hint=hint
    )


def verl_currency_line(config: Mapping[str, Any], hint: DeviceHint | None = None) -> str:
    """One line: `verl_currency` said (`currency_line`)."""
    return currency_line(verl_currency(config, hint))


def verl_start_lines(
    config: Mapping[str, Any], hint: DeviceHint | None = None, currency: Currency | None = None
) -> list[str]:
    """The least-regret start from this run's step (`data.train_batch_size` x `rollout.n`) in
    verl's keys (`start_for_call`)."""
    defaults, whose = _run_defaults(config)

    def setting(key: str) -> int:
        return int(read_int(config, key, defaults[key], whose).value)

    return start_for_call(
        "verl",
        currency or verl_currency(config, hint),
        prompts=setting("data.train_batch_size"),
        rollouts=setting(f"{ROLLOUT}.n"),
        lr=dotted_get(config, "actor_rollout_ref.actor.optim.lr"),
        hint=hint,
    )
