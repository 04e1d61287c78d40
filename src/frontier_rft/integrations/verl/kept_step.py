"""A `rollouts: kept` step on verl's v1 sync trainer: how far it is padded, how its loss is scaled.

verl pads a step's batch to a multiple of lcm(data-parallel size, ppo_mini_batch_size x n)
(`_get_required_batch_multiple`), so that every mini-batch is full: a kept step of K < B
groups with ppo_mini_batch_size = train_batch_size would be padded back to uniform's B x n
rows, every one of them run through the old and reference log-probs and the actor's forward
and backward passes. `kept_layout` pads only as far as verl's workers need instead: the
step keeps verl's number of updates, k = ceil(R / M) for R kept rows and M rows per
mini-batch, each of m rows, m the smallest multiple of the row quantum q (the data-parallel
size times the micro-batch sizes that are fixed, `rows_quantum`) with k x m >= R: fewer than
k x q padding rows, not up to the full batch.

`kept_loss` is the step's loss normalisation (`loss_scale`, FewerRollouts' two): verl's loss
of a mini-batch is `agg_loss` over it, so the padded layout's base is the mean over the kept
rows (`token-mean`: verl divides by the mini-batch's loss tokens; `seq-mean-*`: this sets
global_batch_size to the kept rows per update) or their sum (`token-sum`); the mode that
counts is the one the policy loss really uses (`pg_agg_mode`: sapo's is always seq-mean,
geo_mean's a sum). `batch` scales the
policy-gradient term by c = R / (k x M), the share of its updates' nominal rows the step
trains (G / B, G groups kept of B, when ppo_mini_batch_size = train_batch_size), as if the
groups left out had been rolled out and come back all equal; `kept` leaves the mean. The
factor goes on the advantages, which every policy loss in `LINEAR_LOSS_MODES` is linear in
(for a positive factor), so the policy-gradient term is scaled exactly; the KL loss and the
entropy bonus stay means over the kept rows, near uniform's but not equal to it: the rows left
out are not a random sample (benchmarks/results/kept_kl.md).
`kept_loss_problems` refuses in one line what no factor fixes. Imports neither verl nor torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frontier_rft.integrations.preflight import dotted_get

__all__ = [
    "AGG_MODES",
    "GROUP_RELATIVE_ESTIMATORS",
    "LINEAR_LOSS_MODES",
    "KeptLayout",
    "KeptLoss",
    "kept_layout",
    "kept_loss",
    "kept_loss_problems",
    "pg_agg_mode",
    "rows_quantum",
]

AGG_MODES = (
    "token-mean",
    "token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)
"""verl 0.9.1's actor.loss_agg_mode values (core_algos.agg_loss)."""
LINEAR_LOSS_MODES = frozenset(
    {"vanilla", "dppo_tv", "dppo_kl", "gspo", "sapo", "gpg", "geo_mean", "cispo"}
)
GROUP_RELATIVE_ESTIMATORS = frozenset(
    {"grpo", "grpo_vectorized", "grpo_passk", "rloo", "rloo_vectorized", "opo"}
)
"""verl 0.9.1's algorithm.adv_estimator values that give a group whose rewards are all equal
zero advantage (read from its core_algos): only there is a prompt passed over for coming
back all equal a group that would have taught nothing. gae (verl's default: a critic's
values), reinforce_plus_plus(_baseline) (whitened over the batch), remax (a greedy
baseline) and the token-baseline estimators are not. Nor is gpg: its advantages are
group-centred, but scaled by a batch-wide alpha (the batch's groups over its groups that are
not all equal), which changes when all-equal groups are skipped."""
VERL_DEFAULT_ESTIMATOR = "gae"
"""verl's algorithm.adv_estimator when a config leaves it out (0.9.1's ppo_trainer)."""
"""verl's policy_loss.loss_mode values whose loss is c x itself when every advantage is c x
itself (c > 0): read from verl 0.9.1's core_algos. clip_cov (absolute covariance bounds),
kl_cov and dro (a term without the advantage) and bypass_mode are not."""

ACTOR = "actor_rollout_ref.actor"


@dataclass(frozen=True)
class KeptLayout:
    """How a kept step's R rows are laid out for verl's workers."""

    rows: int
    """Kept rows (K groups x n)."""
    updates: tuple[int, ...]
    """Mini-batches a PPO epoch, per trained model (actor, then critic if any)."""
    padded: int
    """Rows after padding: a multiple of every model's mini-batch and of the row quantum."""

    @property
    def padding(self) -> int:
        """No-op rows verl adds (response mask 0)."""
        return self.padded - self.rows

    def mini_rows(self, model: int = 0) -> int:
        """Rows in each of model `model`'s mini-batches, padding included."""
        return self.padded // self.updates[model]


def kept_layout(
    rows: int, nominal: tuple[int, ...], quantum: int, verl_multiple: int | None = None
) -> KeptLayout:
    """The layout of `rows` kept rows: each model keeps verl's ceil(rows / M) updates (M its
    rows per mini-batch in `nominal`), and the rows are padded to the smallest multiple of
    quantum x lcm(updates) at or above `rows`; never beyond verl's own padding to a multiple
    of `verl_multiple` (lcm of the ranks and every `nominal`), whose full mini-batches are
    used where they are no larger (a micro-batch size that does not divide a mini-batch)."""
    if rows < 1 or quantum < 1 or not nominal or min(nominal) < 1:
        raise ValueError(
            f"a kept step needs rows >= 1, quantum >= 1 and mini-batch rows >= 1, got "
            f"rows={rows}, quantum={quantum}, nominal={nominal}"
        )
    updates = tuple(math.ceil(rows / m) for m in nominal)
    unit = quantum * math.lcm(*updates)
    padded = unit * math.ceil(rows / unit)
    if verl_multiple is not None:
        verls = verl_multiple * math.ceil(rows / verl_multiple)
        if verls <= padded:
            return KeptLayout(rows, tuple(verls // m for m in nominal), verls)
    return KeptLayout(rows=rows, updates=updates, padded=padded)


def rows_quantum(config: Mapping[str, Any], dp_size: int) -> int:
    """The rows verl's workers need a step's mini-batches in multiples of: `dp_size` (equal
    shares per rank) times each fixed micro-batch size per GPU (the actor's update, its and
    the reference's log-probs, the critic's), which must divide a rank's share."""
    micro = [
        (f"{ACTOR}.use_dynamic_bsz", f"{ACTOR}.ppo_micro_batch_size_per_gpu"),
        (
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
        ),
        (
            "actor_rollout_ref.ref.log_prob_use_dynamic_bsz",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
        ),
        ("critic.use_dynamic_bsz", "critic.ppo_micro_batch_size_per_gpu"),
    ]
    sizes = [1]
    for dynamic, size in micro:
        value = dotted_get(config, size)
        if dotted_get(config, dynamic) is not True and isinstance(value, int) and value > 0:
            sizes.append(value)
    return dp_size * math.lcm(*sizes)


@dataclass(frozen=True)
class KeptLoss:
    """What a kept step changes in verl's actor loss."""

    advantage_factor: float
    """Factor on the step's advantages (the policy-gradient term)."""
    global_batch_size: float | None
    """Rows an update's seq-mean divides by (the kept rows per update); None: verl's own."""


def pg_agg_mode(loss_agg_mode: str, loss_mode: str = "vanilla") -> str:
    """How verl 0.9.1's policy loss `loss_mode` really aggregates its policy-gradient term
    under `loss_agg_mode`: `sapo` always calls `agg_loss` with seq-mean-token-mean (over
    global_batch_size); `geo_mean` takes `torch.mean` over each micro-batch's rows, which the
    engine backpropagates one micro-batch at a time, so an update's gradient is the sum over
    its rows / (ranks x micro-batch size): a sum, as token-sum (left-out groups count as 0)."""
    if loss_mode == "sapo":
        return "seq-mean-token-mean"
    if loss_mode == "geo_mean":
        return "token-sum"
    return loss_agg_mode


def kept_loss(
    loss_scale: str,
    loss_agg_mode: str,
    layout: KeptLayout,
    nominal_rows: int,
    loss_mode: str = "vanilla",
) -> KeptLoss:
    """The actor's loss of a kept step laid out as `layout` (`nominal_rows`: the rows of one
    of uniform's mini-batches, ppo_mini_batch_size x n), for `loss_scale` batch or kept and
    verl's policy loss `loss_mode` (`pg_agg_mode`: what its policy-gradient term divides by)."""
    updates = layout.updates[0]
    share = layout.rows / (updates * nominal_rows)  # c: G / B with one update a step
    pg_mode = pg_agg_mode(loss_agg_mode, loss_mode)
    # seq-mean divides by global_batch_size (the KL and entropy terms under a seq-mean mode,
    # sapo's policy-gradient term under any): the kept rows per update, not verl's nominal M.
    seq_mean = pg_mode.startswith("seq-mean") or loss_agg_mode.startswith("seq-mean")
    kept_rows = layout.rows / updates if seq_mean else None
    if pg_mode == "token-sum":
        # A sum already counts the left-out groups as zero: batch as it stands.
        return KeptLoss(1.0 if loss_scale == "batch" else 1.0 / share, kept_rows)
    # token-mean: verl divides by the update's real tokens; seq-mean: by the kept rows.
    return KeptLoss(share if loss_scale == "batch" else 1.0, kept_rows)


def kept_loss_problems(config: Mapping[str, Any], loss_scale: str) -> list[str]:
    """Why verl config `config` cannot train a kept step with `loss_scale`, one line each:
    an advantage estimator that is not group-relative (`GROUP_RELATIVE_ESTIMATORS`); an
    unknown loss_agg_mode; token-sum with a KL loss or an entropy bonus (the left-out
    groups' KL and entropy would be missing from the sum, which no factor restores);
    seq-mean-token-sum-norm without a loss_scale_factor (verl divides by a padded length
    that a kept step changes); geo_mean with dynamic batch sizes; a policy loss not linear
    in the advantages where the step's factor is not 1."""
    # verl's composed config always names it; a file that leaves it to verl's defaults (gae)
    # is told so by check-config, and the run itself is refused or made full here.
    estimator = dotted_get(config, "algorithm.adv_estimator")
    if estimator == "gpg":
        return [
            "rollouts: kept with algorithm.adv_estimator=gpg: gpg scales every advantage by a "
            "batch-wide alpha (groups / groups not all equal), which skipping all-equal groups "
            "changes; set algorithm.adv_estimator=grpo (or rloo), or rollouts: full"
        ]
    if isinstance(estimator, str) and estimator not in GROUP_RELATIVE_ESTIMATORS:
        return [
            f"rollouts: kept with algorithm.adv_estimator={estimator}: its advantages are not "
            "group-relative, so a prompt whose rollouts all score alike still trains and "
            "skipping it is not free; set algorithm.adv_estimator=grpo (or rloo), or "
            "rollouts: full"
        ]
    mode = dotted_get(config, f"{ACTOR}.loss_agg_mode") or "token-mean"
    if mode not in AGG_MODES:
        return [
            f"rollouts: kept with {ACTOR}.loss_agg_mode={mode}: not one of verl 0.9.1's "
            f"{list(AGG_MODES)}, so its kept step cannot be normalised; use one of them, or "
            "rollouts: full"
        ]
    out = []
    kl = dotted_get(config, f"{ACTOR}.use_kl_loss") is True
    entropy = dotted_get(config, f"{ACTOR}.entropy_coeff") or 0
    if mode == "token-sum" and (kl or entropy != 0):
        term = "use_kl_loss" if kl else "entropy_coeff"
        out.append(
            f"rollouts: kept with {ACTOR}.loss_agg_mode=token-sum and {term}: the sum would "
            "miss the left-out groups' KL and entropy terms, which no factor on the kept rows "
            "restores; use loss_agg_mode token-mean, or rollouts: full"
        )
    loss_mode = dotted_get(config, f"{ACTOR}.policy_loss.loss_mode") or "vanilla"
    if (
        mode == "seq-mean-token-sum-norm"
        and dotted_get(config, f"{ACTOR}.loss_scale_factor") is None
    ):
        out.append(
            f"rollouts: kept with {ACTOR}.loss_agg_mode=seq-mean-token-sum-norm and no "
            "loss_scale_factor: verl then divides by each micro-batch's padded length, which a "
            f"kept step changes; set {ACTOR}.loss_scale_factor (e.g. the max response length)"
        )
    dynamic = dotted_get(config, f"{ACTOR}.use_dynamic_bsz") is True
    if loss_mode == "geo_mean" and dynamic:
        out.append(
            f"rollouts: kept with {ACTOR}.policy_loss.loss_mode=geo_mean and use_dynamic_bsz: "
            "geo_mean averages over each micro-batch's rows, which dynamic batching sizes by "
            "tokens, so no factor normalises a kept step; set use_dynamic_bsz false"
        )
    scaled = (loss_scale == "batch") != (pg_agg_mode(mode, loss_mode) == "token-sum")
    if scaled and loss_mode not in LINEAR_LOSS_MODES:
        other = "kept" if loss_scale == "batch" else "batch"
        out.append(
            f"rollouts: kept with loss_scale: {loss_scale} and {ACTOR}.policy_loss.loss_mode="
            f"{loss_mode}: that loss is not linear in the advantages, so no factor on them "
            f"scales it; use loss_scale: {other}, or loss_mode vanilla"
        )
    return out
