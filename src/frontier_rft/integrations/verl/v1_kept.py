"""verl's v1 sync trainer under `rollouts: kept`: a step trains its kept rows and little more.

`KeptStep` wraps four methods of the trainer (instance attributes, as FrontierReplayBuffer
wraps `_init_dataloader`): `_balance_batch` notes the step's kept rows, and
`_get_required_batch_multiple`, which verl's `_balance_batch` asks how far to pad
(`upsample_batch_to_divisible_size`), answers with `kept_step.kept_layout`'s padded size
instead of lcm(data-parallel size, ppo_mini_batch_size x n), so the old and reference
log-probs and the actor's (and critic's) updates run over the kept rows plus fewer than
k x q no-op rows, not up to uniform's batch. `_update_actor` and `_update_critic` hand the
worker group the layout's mini-batch size (verl's `train_mini_batch` splits each rank's
share by it) and, for the actor, `kept_step.kept_loss`'s global_batch_size and its factor on
the advantages (`loss_scale`), which are put back after the update so verl's advantage
metrics read as without it. Everything else is verl's.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from frontier_rft.integrations.verl.kept_step import (
    KeptLayout,
    KeptLoss,
    kept_layout,
    kept_loss,
    rows_quantum,
)

__all__ = ["KeptStep"]

tq: Any = importlib.import_module("transfer_queue")  # verl[verl-core]; untyped


class KeptStep:
    """The kept-step layout and loss of a verl v1 PPOTrainer (see the module)."""

    def __init__(self, trainer: Any, loss_scale: str, metrics_prefix: str) -> None:
        self.trainer = trainer
        self.loss_scale = loss_scale
        self.prefix = metrics_prefix
        self.layout: KeptLayout | None = None
        """The current step's layout (set when verl pads the step)."""
        self.loss: KeptLoss | None = None
        """The current step's loss normalisation."""
        self._rows = 0
        self._wrap("_balance_batch", self._balance_batch)
        self._wrap("_get_required_batch_multiple", self._required_multiple)
        self._wrap("_update_actor", self._update_actor)
        self._wrap("_update_critic", self._update_critic)

    def _wrap(self, name: str, method: Callable[..., Any]) -> None:
        original = getattr(self.trainer, name, None)
        if not callable(original):
            raise RuntimeError(
                f"rollouts: kept needs verl's v1 PPOTrainer.{name} (verl 0.9.x has it); this "
                "verl differs: set rollouts: full"
            )

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return method(original, *args, **kwargs)

        setattr(self.trainer, name, wrapped)

    def _nominal(self) -> tuple[int, ...]:
        """Rows of one of uniform's mini-batches: the actor's, then the critic's if any."""
        config = self.trainer.config
        n = int(config.actor_rollout_ref.rollout.n)
        rows = [int(config.actor_rollout_ref.actor.ppo_mini_batch_size) * n]
        if getattr(self.trainer, "use_critic", False):
            rows.append(int(config.critic.ppo_mini_batch_size) * n)
        return tuple(rows)

    def _balance_batch(
        self, original: Callable[..., Any], batch: Any, *args: Any, **kw: Any
    ) -> Any:
        self._rows = sum(not tag.get("is_padding", False) for tag in batch.tags)
        self.layout = self.loss = None
        out = original(batch, *args, **kw)
        if self.layout is None or self.loss is None:
            raise RuntimeError(
                "verl's _balance_batch no longer asks _get_required_batch_multiple how far to "
                "pad (verl 0.9.x does); rollouts: kept cannot size its step: set rollouts: full"
            )
        metrics = args[0] if args else kw.get("metrics")
        if isinstance(metrics, dict):
            metrics.update(self.metrics())
        return out

    def _required_multiple(self, original: Callable[..., Any], dp_size: int) -> int:
        nominal = self._nominal()
        quantum = rows_quantum(self.trainer.config, dp_size)
        verls = math.lcm(dp_size, *nominal)  # verl's _get_required_batch_multiple, every model
        layout = kept_layout(self._rows, nominal, quantum, verl_multiple=verls)
        actor = self.trainer.config.actor_rollout_ref.actor
        agg = actor.get("loss_agg_mode", "token-mean")
        policy_loss = actor.get("policy_loss", None)
        loss_mode = (policy_loss.get("loss_mode", None) if policy_loss else None) or "vanilla"
        self.layout = layout
        self.loss = kept_loss(self.loss_scale, agg, layout, nominal[0], loss_mode)
        return layout.padded

    def metrics(self) -> dict[str, float]:
        """The step's trained rows, padding rows and factor on the advantages."""
        if self.layout is None or self.loss is None:
            return {}
        key = self.prefix + "fewer_rollouts/"
        return {
            key + "trained_rows": float(self.layout.rows),
            key + "padding_rows": float(self.layout.padding),
            key + "updates": float(self.layout.updates[0]),
            key + "loss_scale": self.loss.advantage_factor,
        }

    def _step(self) -> tuple[KeptLayout, KeptLoss]:
        if self.layout is None or self.loss is None:
            raise RuntimeError("rollouts: kept: verl updated a model before padding the step")
        return self.layout, self.loss

    def _update_actor(self, original: Callable[..., Any], batch: Any, *args: Any, **kw: Any) -> Any:
        layout, loss = self._step()
        pins: dict[str, Any] = {"mini_batch_size": layout.mini_rows(0)}
        if loss.global_batch_size is not None:
            pins["global_batch_size"] = loss.global_batch_size
        with (
            _scaled_advantages(batch, loss.advantage_factor),
            _pinned(self.trainer.actor_rollout_wg, "update_actor", pins),
        ):
            return original(batch, *args, **kw)

    def _update_critic(
        self, original: Callable[..., Any], batch: Any, *args: Any, **kw: Any
    ) -> Any:
        layout, _ = self._step()
        pins = {"mini_batch_size": layout.mini_rows(len(layout.updates) - 1)}
        with _pinned(self.trainer.critic_wg, "train_mini_batch", pins):
            return original(batch, *args, **kw)


@contextmanager
def _pinned(group: Any, method: str, pins: dict[str, Any]) -> Iterator[None]:
    """`group.method` setting `pins` in the batch's extra_info after verl set its own (verl's
    `_update_actor` builds extra_info inside, with ppo_mini_batch_size x n rows)."""
    send = getattr(group, method)

    def call(batch: Any, *args: Any, **kwargs: Any) -> Any:
        batch.extra_info.update(pins)
        return send(batch, *args, **kwargs)

    setattr(group, method, call)
    try:
        yield
    finally:
        setattr(group, method, send)


@contextmanager
def _scaled_advantages(batch: Any, factor: float) -> Iterator[None]:
    """The step's advantages in TransferQueue times `factor` while inside, verl's after."""
    if factor == 1.0:
        yield
        return
    saved = tq.kv_batch_get(
        keys=batch.keys, partition_id=batch.partition_id, select_fields=["advantages"]
    )
    scaled = saved.clone()
    scaled["advantages"] = saved["advantages"] * factor
    tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=scaled)
    try:
        yield
    finally:
        tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=saved)
