"""The noise meter in TRL's GRPOTrainer: the gradient noise scale read from the micro-batches
of gradient accumulation, each process's own, before any all-reduce.

A hook on every trainable parameter sees each micro-batch's gradient m_i as the backward
makes it, before it is added to `.grad`, which then holds the sum of the step's earlier
micro-batches: the hook adds |m_i|^2 and m_i . (m_1 + ... + m_{i-1}) to two running sums and
changes nothing. At the optimizer step those inner products, with each micro-batch's rows
(prompt and completion length, from TRL's buffered inputs) and TRL's loss normaliser, are
solved for |G|^2 and the inter- and intra-prompt noise (core/noise_scale.py,
`accumulated_estimate`), smoothed apart, and logged as `noise/...` through TRL's own metrics
(every `report_to` backend). No extra forward or backward pass: the cost is two inner products
a parameter a micro-batch. Every `noise_every`-th optimizer step (FrontierConfig); every
`plan_every`-th, the batch plan from the smoothed terms is said (`_frontier_batch_plan`).

Where TRL's hooks do not allow it, the meter stays off and says why once (`why_off`):

- one micro-batch an optimizer step (gradient_accumulation_steps 1): a single gradient has no
  second batch size (halve per_device_train_batch_size and double the accumulation: the same
  rows a step);
- DeepSpeed or FSDP: they shard or reduce gradients in hooks of their own, so a parameter's
  hook does not see this process's whole micro-batch gradient;
- a loss whose rows are not weighed by a normaliser TRL 1.16 documents per micro-batch
  (`LOSS_UNITS`), the entropy bonus or a router aux loss (normalised apart from the rows),
  and the Liger loss (computed outside `_compute_loss`);
- RLOOTrainer (its own loss; GRPO only here).

Multi-process (DDP): each process meters its own micro-batches (its rows of the step), and the
main process's estimate is the one TRL logs. The smoothed state restarts on resume.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from transformers import TrainerCallback
from trl.trainer import grpo_trainer

from frontier_rft.core.noise_scale import NoiseEma, accumulated_estimate

__all__ = ["LOSS_UNITS", "NoiseCallback", "micro_batch_coefficients", "why_off"]

_log = logging.getLogger(__name__)

LOSS_UNITS = {
    **dict.fromkeys(("grpo", "sapo"), ("row", "rows")),
    "luspo": ("tokens", "rows"),
    "bnpo": ("tokens", "tokens"),
    "dr_grpo": ("tokens", "rows_x_max_length"),
    **dict.fromkeys(("dapo", "cispo", "vespo"), ("tokens", "generation_tokens")),
}
"""TRL 1.16's GRPO loss types as a sum over a micro-batch's rows of c_r f_r (f_r the row's
token mean): c_r = u_r / N, u_r one a row or its tokens, N the normaliser (the micro-batch's
rows or tokens, rows x max_completion_length, or the generation batch's tokens over the
processes), each also divided by the accumulation steps (grpo_trainer.py, `_compute_loss`)."""
_Base: Any = TrainerCallback


def why_off(trainer: Any) -> str | None:
    """Why this trainer's micro-batch gradients cannot be metered (None: they can)."""
    args = trainer.args
    if not isinstance(trainer, grpo_trainer.GRPOTrainer):
        return f"{type(trainer).__name__}: the meter reads GRPOTrainer's loss only"
    if not hasattr(trainer, "_buffered_inputs"):
        return "this TRL keeps no buffered micro-batches (the meter reads TRL 1.16's)"
    if int(args.gradient_accumulation_steps) < 2:
        return (
            "gradient_accumulation_steps is 1: one micro-batch a step has no second batch size "
            "(halve per_device_train_batch_size and set gradient_accumulation_steps 2: the same "
            "rows a step)"
        )
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(
        trainer, "is_fsdp_enabled", False
    ):
        return "DeepSpeed and FSDP reduce or shard gradients in hooks of their own"
    loss_type = getattr(trainer, "loss_type", None)
    if loss_type not in LOSS_UNITS:
        return (
            f"loss_type {loss_type!r} is not a documented sum over rows ({', '.join(LOSS_UNITS)})"
        )
    if getattr(trainer, "_entropy_bonus_enabled", False):
        return "the entropy bonus is normalised per micro-batch apart from the rows' loss"
    if getattr(trainer, "aux_loss_enabled", False):
        return "a router aux loss is not a sum over rows"
    if getattr(args, "use_liger_kernel", False) or getattr(trainer, "use_liger_loss", False):
        return "the Liger loss is computed outside _compute_loss"
    return None


def micro_batch_coefficients(
    trainer: Any, inputs: dict[str, Any]
) -> tuple[list[bytes], NDArray[np.float64]]:
    """A micro-batch's rows: each one's prompt (its tokens, as bytes) and its coefficient c_r
    in the loss TRL computes on it (LOSS_UNITS, the accumulation steps, and the adapter's
    kept-step factor)."""
    prompt_ids = inputs["prompt_ids"].detach().cpu().numpy()
    prompt_mask = inputs["prompt_mask"].detach().cpu().numpy().astype(bool)
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:
        mask = mask * inputs["tool_mask"]
    lengths = mask.detach().float().sum(-1).cpu().numpy().astype(np.float64)
    keys = [ids[m].tobytes() for ids, m in zip(prompt_ids, prompt_mask, strict=True)]
    unit, norm = LOSS_UNITS[trainer.loss_type]
    u = np.ones_like(lengths) if unit == "row" else lengths.copy()
    u[lengths == 0] = 0.0  # a row all masked trains nothing
    rows = float(lengths.size)
    if norm == "rows":
        n = rows
    elif norm == "tokens":
        n = max(float(lengths.sum()), 1.0)
    elif norm == "rows_x_max_length":
        n = rows * float(trainer.max_completion_length)
    else:  # the generation batch's tokens, over the processes, for one accumulation window
        n = max(float(inputs["num_items_in_batch"]), 1.0) / trainer.accelerator.num_processes
        n /= float(trainer.args.steps_per_generation)
    n *= float(trainer.current_gradient_accumulation_steps)
    driver = getattr(trainer, "frontier_driver", None)
    factor = 1.0 if driver is None else float(driver.loss_factor)
    return keys, factor * u / n


class NoiseCallback(_Base):  # type: ignore[misc]
    """The meter on a FrontierGRPOTrainer: its gradient hooks and its step boundaries."""

    def __init__(self, trainer: Any, every: int, decay: float, plan_every: int = 0):
        self.trainer = trainer
        self.every = every
        self.plan_every = plan_every
        """Say the batch plan every this many optimizer steps (0: the run's end only)."""
        self.ema = NoiseEma(decay)
        self.armed = False
        self.batches: list[tuple[list[bytes], NDArray[np.float64]]] = []
        self.sums: list[list[Any]] = []
        """Each micro-batch's [|m_i|^2, m_i . earlier], as device scalars."""
        self._at = -1
        self._hooks: list[Any] = []
        self.seconds = 0.0
        """Seconds spent metering this step (hooks and solve; on a GPU, what the host waited)."""

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.every <= 0 or self._hooks:
            return
        reason = why_off(self.trainer)
        if reason is not None:
            if self.trainer.accelerator.is_main_process:
                _log.info("frontier-rft: noise meter off: %s", reason)
            return
        for param in self.trainer.model.parameters():
            if param.requires_grad:
                self._hooks.append(param.register_hook(self._hook(param)))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.armed = bool(self._hooks) and int(state.global_step) % self.every == 0
        self.batches, self.sums, self._at, self.seconds = [], [], -1, 0.0

    def _hook(self, param: Any) -> Any:
        def seen(grad: Any) -> None:
            if not self.armed:
                return
            start = time.perf_counter()
            self._micro_batch()
            g = grad.detach().float()  # float32 products (a no-op copy for float32 grads),
            square = torch.sum(g * g, dtype=torch.float64)  # summed in float64
            held = param.grad
            cross = (
                square.new_zeros(())
                if held is None
                else torch.sum(g * held.detach().float(), dtype=torch.float64)
            )
            self.sums[-1][0] += square
            self.sums[-1][1] += cross
            self.seconds += time.perf_counter() - start

        return seen

    def _micro_batch(self) -> None:
        """On a micro-batch's first hook call: its rows, from the inputs TRL trains on now."""
        trainer = self.trainer
        at = int(trainer._step)
        if at == self._at:
            return
        self._at = at
        inputs = trainer._buffered_inputs[at % trainer.args.steps_per_generation]
        self.batches.append(micro_batch_coefficients(trainer, inputs))
        self.sums.append([0.0, 0.0])

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._meter()
        step = int(state.global_step)
        # the plan so far, from the EMA just updated; the run's last step is said at its end
        due = self.plan_every > 0 and step % self.plan_every == 0 and step < int(state.max_steps)
        if due and self.trainer.accelerator.is_main_process:
            for line in self.trainer._frontier_batch_plan():
                _log.info("frontier-rft: at step %d: %s", step, line)

    def _meter(self) -> None:
        """This step's estimate, where it was metered, into the EMA and TRL's metrics."""
        if not self.armed or len(self.batches) < 2:
            return
        self.armed = False
        start = time.perf_counter()
        prompts = _prompt_ids([keys for keys, _ in self.batches])
        coefs = [c for _, c in self.batches]
        squares = [float(s[0]) for s in self.sums]
        crosses = [float(s[1]) for s in self.sums]
        try:
            est = accumulated_estimate(prompts, coefs, squares, crosses)
        except ValueError:  # these micro-batches share no prompt: the terms are not told apart
            return
        kept = self.trainer._metrics["train"]
        for name, value in self.ema.update(est).items():
            kept[name].append(value)
        kept["perf/noise_s"].append(self.seconds + time.perf_counter() - start)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks = []


def _prompt_ids(keys: Sequence[list[bytes]]) -> list[NDArray[np.int64]]:
    """Each micro-batch's rows' prompts as ids shared across the step's micro-batches."""
    index: dict[bytes, int] = {}
    return [np.array([index.setdefault(k, len(index)) for k in batch]) for batch in keys]
