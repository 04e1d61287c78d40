"""The reference trainer's noise meter: the gradient noise scale of its own steps, read live.

Every `noise_every`-th step (TrainConfig; 0 = off) the update measures, at the parameters the
step starts from, the gradients of its loss over two splits of the step's rows
(core/noise_scale.py has the estimator and its derivation):

- the prompt halves A, B (alternate groups, every rollout of each): two independent steps of
  B/2 prompts at the step's K;
- the rollout halves R1, R2 of A (alternate rows of each of A's groups): two steps of B/2
  prompts at K/2.

A half's gradient is the step's own loss restricted to its rows: the policy loss of
training/policy_loss.py over them, with the step's advantages, group weights, pi_old,
reference log-probs and caps, scaled so that the halves sum to the step's loss (its terms
`c_r f_r`, `row_units`). One pass each for R1 and R2 (forward and backward over a quarter of
the rows each); A is their sum and B the step's own gradient minus A, read from `.grad` after
the real backward and before clipping (computed by a pass of its own when the step also
trains METIS's judge loss, which is not a sum over rows). Cost: about half an update's forward
and backward per metered step; `perf/noise_s` logs it, apart from `perf/update_s`.

Every metered step after Adam's first also reads the same gradients in Adam's geometry
(`noise/adam/...`, core.noise_scale.ADAM_PREFIX): each inner product weighted by the
preconditioner the step's update will divide by, 1 / (sqrt(v_hat) + eps) from Adam's
second moments and the step's own clipped gradient (`adam_geometry`; read, never written).
The gradient's share of v is 1 - beta2 (0.001), so the weights barely depend on what they
weigh, except where a coordinate's history is near 0, where it bounds the weight as it
bounds Adam's step.

It never changes what is trained: its gradients come from `torch.autograd.grad` (never
`.grad`), nothing reaches the optimizer, its passes run inside `torch.random.fork_rng`, and
the smoothed state is saved in the checkpoint (exact resume). A step of fewer than two groups
(a kept step) is not metered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from frontier_rft.core.noise_scale import (
    ADAM_PREFIX,
    GEOMETRIES,
    NoiseEma,
    halves,
    halves_estimate,
)
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.micro_update import row_chunks, rows_policy_loss
from frontier_rft.training.policy_loss import row_units

__all__ = ["NoiseMeter", "RowsLoss", "adam_geometry", "rows_loss"]

RowsLoss = Callable[[NDArray[np.int64]], torch.Tensor]
"""The step's loss restricted to some rows: sum over them of c_r f_r (its gradient is theirs)."""


def rows_loss(
    model: Any,
    config: TrainConfig,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    tensors: dict[str, torch.Tensor | None],
    loss_scale: float,
    amp: Callable[[], Any],
) -> tuple[RowsLoss, NDArray[np.float64]]:
    """The step's loss over any subset of its rows, and each row's coefficient c_r in it.

    `tensors` holds the step's per-row inputs to `policy_loss` as the update's first pass
    used them: advantages, weights, old (pi_old), ref, caps (None where absent)."""
    lengths = np.array([len(c) for c in completions])
    how, max_tokens = config.loss_aggregation, config.max_new_tokens
    units, norm = row_units(lengths, how, max_tokens)
    weights = tensors["weights"]
    w = np.ones(len(lengths)) if weights is None else weights.detach().cpu().double().numpy()
    coef = w * units / norm

    inputs = {**tensors, "pg_scale": loss_scale}

    def loss_of(rows: NDArray[np.int64]) -> torch.Tensor:
        with amp():
            loss, _ = rows_policy_loss(
                model, config, prompts, completions, inputs, rows,
                with_entropy=config.entropy_coef > 0,
            )  # fmt: skip
        return loss.total * (row_units(lengths[rows], how, max_tokens)[1] / norm)

    return loss_of, coef


class NoiseMeter:
    """When to meter, the measurement itself and the smoothed state it carries across steps."""

    def __init__(self, every: int, decay: float, chunk_rows: int = 0):
        self.every = every
        """Meter every this many steps (0 = never)."""
        self.ema = NoiseEma(decay)
        """The smoothed terms in the parameters' own geometry (what the planner reads)."""
        self.adam_ema = NoiseEma(decay, ADAM_PREFIX)
        """The smoothed terms in Adam's geometry (steps where Adam has state)."""
        self.chunk_rows = chunk_rows
        """Most rows one of its passes holds (the trainer's update_rows; 0 = a half at once):
        a half's gradient is then the sum of its runs' (training/micro_update.py)."""

    def due(self, step: int, groups: int) -> bool:
        """Whether the update of 0-based `step`, training `groups` groups, is metered."""
        return self.every > 0 and step % self.every == 0 and groups >= 2

    def measure(
        self,
        model: Any,
        loss_of: RowsLoss,
        coef: NDArray[np.float64],
        sizes: Sequence[int],
        full: Sequence[torch.Tensor | None] | None,
        geometry: Sequence[torch.Tensor] | None = None,
    ) -> dict[str, float]:
        """The step's `noise/...` metrics and `perf/noise_s`: passes over the two rollout
        halves R1, R2 of prompt half A (core.noise_scale.halves; groups of `sizes` rows, in
        order), A = R1 + R2, and B = `full` (the step's gradient of the same loss) minus A, or
        a pass of its own where `full` is None; with `geometry` (a weight a coordinate, one
        tensor a parameter: `adam_geometry`) the same products weighted by it too, as
        `noise/adam/...`."""
        start = time.perf_counter()
        split = halves(sizes)
        params = [p for p in model.parameters() if p.requires_grad]
        device = params[0].device
        with torch.random.fork_rng(devices=[device.index] if device.type == "cuda" else []):
            p1 = self._grads_of(loss_of, split.rollout_1, params)
            p2 = self._grads_of(loss_of, split.rollout_2, params)
            weighings = [None] if geometry is None else [None, geometry]
            c1, c2 = coef[split.rollout_1].sum(), coef[split.rollout_2].sum()
            rollouts = [_products(p1, p2, c1, c2, w) for w in weighings]
            pa = [a + b for a, b in zip(p1, p2, strict=True)]
            del p1, p2
            if full is None:
                pb = self._grads_of(loss_of, split.prompt_b, params)
            else:  # the step's own gradient minus A's
                pb = [f - a for f, a in zip(_dense(full, params), pa, strict=True)]
            ca, cb = coef[split.prompt_a].sum(), coef[split.prompt_b].sum()
            prompts = [_products(pa, pb, ca, cb, w) for w in weighings]
        out: dict[str, float] = {}
        emas = (self.ema, self.adam_ema)[: len(weighings)]
        for ema, (cross, diff), (_, diff_r) in zip(emas, prompts, rollouts, strict=True):
            out.update(ema.update(halves_estimate(split, coef, cross, diff, diff_r)))
        return {**out, "perf/noise_s": time.perf_counter() - start}

    def _grads_of(
        self, loss_of: RowsLoss, rows: NDArray[np.int64], params: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """The gradient of the loss over `rows`, in runs of at most `chunk_rows` of them (the
        loss is a sum over rows, so the runs' gradients add up to it)."""
        total: list[torch.Tensor] = []
        for part in row_chunks(len(rows), self.chunk_rows):
            got = _grads(loss_of(rows[part]), params)
            total = got if not total else [a + b for a, b in zip(total, got, strict=True)]
        return total

    def measure_rows(
        self,
        model: Any,
        config: Any,
        batch: Any,
        inputs: dict[str, Any],
        amp: Any,
        judged: bool,
        optimizer: torch.optim.Optimizer | None = None,
    ) -> dict[str, float]:
        """`measure` on a trainer's step batch (its prompts, completions, loss scale and
        groups), the first pass's loss inputs (`inputs`: advantages, weights, old, ref, caps);
        the step's own gradient (`.grad`, read only) stands for the halves' complement unless
        the judge loss is in it (`judged`); the `optimizer`'s geometry read too where it has
        one (`adam_geometry`)."""
        loss_of, coef = rows_loss(
            model, config, batch.prompts, batch.completions, inputs, batch.loss_scale, amp
        )
        params = [p for p in model.parameters() if p.requires_grad]
        grads = [p.grad for p in params]  # what the optimizer will read (the judge's too)
        full = None if judged else grads
        geometry = None
        if optimizer is not None:
            geometry = adam_geometry(optimizer, params, grads, _clip_factor(grads, config))
        return self.measure(model, loss_of, coef, batch.group_sizes, full, geometry)

    def smoothed(self, geometry: str) -> NoiseEma:
        """The smoothed terms in `geometry` (core.noise_scale.GEOMETRIES: 'plain', the
        parameters', or 'adam')."""
        return {ema.prefix: ema for ema in (self.ema, self.adam_ema)}[GEOMETRIES[geometry]]

    def state_dict(self) -> dict[str, float]:
        adam = {_ADAM_KEY + k: v for k, v in self.adam_ema.state_dict().items()}
        return {**self.ema.state_dict(), **adam}

    def load_state_dict(self, state: dict[str, float] | None) -> None:
        """Restore the smoothed state (None: a checkpoint from before the meter: start afresh;
        no Adam terms: one from before them, which start afresh)."""
        if state:
            self.ema.load_state_dict(state)
            adam = {k[len(_ADAM_KEY) :]: v for k, v in state.items() if k.startswith(_ADAM_KEY)}
            if adam:
                self.adam_ema.load_state_dict(adam)


_ADAM_KEY = "adam_"
"""The prefix of the Adam-geometry terms' keys in the meter's saved state."""


def adam_geometry(
    optimizer: torch.optim.Optimizer,
    params: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor | None],
    clip: float = 1.0,
) -> list[torch.Tensor] | None:
    """The preconditioner Adam divides this step's update by, 1 / (sqrt(v_hat) + eps) a
    coordinate: v = beta2 v_prev + (1 - beta2) (clip g)^2 from its second moments before the
    step and the step's gradient `grads` scaled by the clipping factor `clip`, v_hat = v /
    (1 - beta2^t) (as torch's Adam and AdamW; AMSGrad: the running maximum). The current
    gradient's share (1 - beta2) is small, except where the history is near 0, where it bounds
    the weight as it bounds Adam's step (v_prev alone would give 1 / eps, 1e8, to a coordinate
    first moved now). None before Adam's first step (every weight would be the current
    gradient's own, 1 / |g|) or for an optimizer without second moments; a parameter it holds
    no state for starts from zero moments, as Adam does; a coordinate with v = 0 (no gradient
    yet) weighs 0."""
    group_of = {id(p): g for g in optimizer.param_groups for p in g["params"]}
    if not any("exp_avg_sq" in optimizer.state.get(p, {}) for p in params):
        return None
    out: list[torch.Tensor] = []
    for p, g in zip(params, grads, strict=True):
        state, group = optimizer.state.get(p, {}), group_of.get(id(p))
        if group is None:  # not optimized: its curvature is not Adam's
            out.append(torch.zeros_like(p))
            continue
        beta2, eps = float(group["betas"][1]), float(group["eps"])
        grad = torch.zeros_like(p) if g is None else g.detach() * clip
        v = beta2 * state.get("exp_avg_sq", torch.zeros_like(p)) + (1 - beta2) * grad**2
        if group.get("amsgrad"):
            v = torch.maximum(state.get("max_exp_avg_sq", torch.zeros_like(p)), v)
        correction = 1.0 - beta2 ** (float(state.get("step", 0.0)) + 1.0)
        weight = 1.0 / ((v / correction).sqrt() + eps)
        out.append(torch.where(v > 0, weight, torch.zeros_like(weight)))
    return out


def _clip_factor(grads: Sequence[torch.Tensor | None], config: Any) -> float:
    """The factor clip_grad_norm_ will scale these gradients by: max_grad_norm over their
    total norm (+ 1e-6, as torch adds), at most 1; 1 without clipping."""
    if config.max_grad_norm <= 0:
        return 1.0
    norm = float(torch.nn.utils.get_total_norm([g for g in grads if g is not None]))
    return min(1.0, float(config.max_grad_norm) / (norm + 1e-6))


def _products(
    first: list[torch.Tensor],
    second: list[torch.Tensor],
    c1: float,
    c2: float,
    weights: Sequence[torch.Tensor] | None = None,
) -> tuple[float, float]:
    """G_1 . G_2 and |G_1 - G_2|^2 of the mean gradients G_i = P_i / c_i, from the gradients
    P_i of the loss over two sets of rows and the sums c_i of their rows' coefficients; each
    product weighted coordinate by coordinate by `weights` where given."""
    cross = diff = 0.0
    ones = [None] * len(first) if weights is None else weights
    for a, b, w in zip(first, second, ones, strict=True):
        g1, g2 = a / float(c1), b / float(c2)
        prod, sq = g1 * g2, (g1 - g2) ** 2
        if w is not None:
            prod, sq = prod * w, sq * w
        cross += float(torch.sum(prod, dtype=torch.float64))
        diff += float(torch.sum(sq, dtype=torch.float64))
    return cross, diff


def _grads(loss: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    """d loss / d params through `torch.autograd.grad` (no `.grad` touched), zeros where a
    parameter takes no part."""
    got = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for g, p in zip(got, params, strict=True)]


def _dense(grads: Sequence[torch.Tensor | None] | None, params: list[torch.Tensor]) -> list[Any]:
    """`.grad`s read as tensors: zeros for a parameter the backward never reached."""
    assert grads is not None
    return [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)]
