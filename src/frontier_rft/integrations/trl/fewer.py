"""Fewer rollouts on TRL's own schedule: one generation step as `FewerRollouts.sample`, and
the batch TRL trains on laid out from the trained groups' rows only.

With `rollouts: kept` or `screen: k`, the trainer's override of TRL's (private)
`_generate_and_score_completions` runs each generation step through
`frontier_rft.sampling.FewerRollouts`: the step's prompts are uniform's next B =
generation_batch_size / num_generations positions of the selector's walk, and only the
prompts it keeps are generated (`rollouts: kept`); with screening each is generated k times
first (one TRL call with k generations per prompt: TRL's `num_generations` is the call's),
and the other n - k only where the k rewards differ (a second call). Generation, rewards,
log-probabilities are TRL's (dynamic.py's rounds); the advantages of a group joined from
its k and n - k are TRL's formula over the whole group of n.

The batch TRL trains on is the trained groups' rows only, balanced across the processes
and padded with masked filler rows only to TRL's micro-batches (layout.plan_rows, through
DynamicGeneration._lay_out), so TRL's steps, epochs, learning-rate schedule and progress bar
are unchanged while fewer completions are generated and trained. The loss of a step that
trains G of its B groups is normalised by how TRL's `loss_type` normalises
(dynamic_config.LOSS_NORMALISATION; DynamicGeneration's `_normalise`, shared with a short
dynamic sampling step, always `kept`). First TRL's whole loss, policy gradient and `beta` x
KL, is made the mean over the trained groups, as a full batch's is over its B:

- per row (grpo, sapo, dr_grpo, luspo): TRL's loss is a mean over a micro-batch's rows, here
  R / S of them where uniform's has generation_batch_size / (P S): the factor
  (R / that) x (B / G) makes the step's loss the trained rows' mean
  (`FrontierGRPOTrainer._compute_loss`).
- per token of the generation batch (dapo, TRL's default; cispo, vespo): TRL divides by
  `num_items_in_batch`, which the adapter sets to the trained tokens: the mean over the
  trained groups' tokens.
- bnpo normalises each micro-batch by its own tokens, which fillers change at random: refused.

Then `loss_scale: batch` multiplies the advantages by G / B (`pg_scale`, in
`_compute_loss`): every policy loss of those types is linear in the advantages for a positive
factor (PPO's clipped minimum of c x A is c x that of A; SAPO's temperatures, VESPO's
weights and the off-policy mask read only the sign), so the policy gradient is G / B of
the trained groups' (the skipped groups as groups of zero advantage, as the reference
trainer's `pg_scale`), while the KL stays the trained rows' mean (the skipped groups' KL
counted at the kept ones' mean; benchmarks/results/kept_kl.md). `kept` leaves the
advantages as they are.

TRL's entropy bonus (`entropy_coef`) is a mean over each micro-batch's trained tokens, which
the fillers leave unweighted; the trainer weights it per micro-batch (`entropy_weight`) so
the step's bonus is the trained rows' mean under either `loss_scale`, as the KL is.
`use_adaptive_entropy` (TRL changes `entropy_coef` inside the loss) is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from frontier_rft.integrations.trl.dynamic import (
    AdapterSeam,
    DynamicGeneration,
)
from frontier_rft.sampling.fewer_rollouts import FewerRolloutsConfig
from frontier_rft.sampling.step import Sampler

__all__ = ["FEWER_COUNTERS", "FEWER_SUMMARY", "FewerGeneration", "check_screenable"]

FEWER_COUNTERS = (
    "fewer_rollouts",
    "fewer_filler_rollouts",
    "fewer_trained_groups",
    "fewer_empty_steps",
)
"""The adapter's fewer-rollouts counters (saved in checkpoints with the others)."""
FEWER_SUMMARY = (
    "fewer_rollouts/rollouts_step",
    "fewer_rollouts/groups_trained",
    "fewer_rollouts/loss_scale",
)
"""Fewer-rollouts keys in TRL's logs at metrics_verbosity: summary."""


class FewerGeneration(DynamicGeneration):
    """Runs one generation step of a FrontierGRPOTrainer through FewerRollouts (see module)."""

    SPENT = ("fewer_rollouts", "fewer_filler_rollouts")

    def __init__(
        self,
        trainer: Any,
        wrapper: Sampler,
        parent: Callable[[list[dict[str, Any]]], dict[str, Any]],
        seam: AdapterSeam,
    ):
        super().__init__(trainer, wrapper, parent, seam)
        self.config: FewerRolloutsConfig = wrapper.config
        self.loss_scale = self.config.loss_scale

    def optimizer_step_done(self) -> None:
        """Nothing: a generation with no trained group skips every optimizer step it feeds
        (set again at the next generation)."""

    def step(self) -> dict[str, Any]:
        """Sample this step's prompts through FewerRollouts and return TRL's training batch."""
        counters = self.seam.counters
        samples, rounds, batch, n, spent = self._sample()
        out = self._lay_out(samples.train, rounds, batch, n)
        trained = samples.train.num_groups
        counters["generations"] += 1
        counters["fewer_trained_groups"] += trained
        counters["fewer_empty_steps"] += int(trained == 0)
        self.skip_update = trained == 0  # every optimizer step of this generation
        self.last = {
            "rollouts": float(spent),
            "groups_trained": float(trained),
            "loss_scale": self._loss_scale(trained, batch),
            "rows_step": float(self.rows_laid_out),
        }
        return out

    def _loss_scale(self, trained: int, batch: int) -> float:
        """The factor on the loss over the trained groups: G / B ('batch'), 1 ('kept')."""
        if self.config.loss_scale == "kept":
            return 1.0
        return trained / batch

    def metrics(self) -> dict[str, float]:
        """The adapter's `fewer_rollouts/...` metrics (the wrapper adds `kept` and
        `screened_out`, the prompts rolled out and screened out this step)."""
        c = self.seam.counters
        return {
            "fewer_rollouts/rollouts": float(c["fewer_rollouts"]),
            "fewer_rollouts/rollouts_step": self.last.get("rollouts", math.nan),
            "fewer_rollouts/groups_trained": self.last.get("groups_trained", math.nan),
            "fewer_rollouts/trained_groups": float(c["fewer_trained_groups"]),
            "fewer_rollouts/loss_scale": self.last.get("loss_scale", math.nan),
            "fewer_rollouts/filler_rollouts": float(c["fewer_filler_rollouts"]),
            "fewer_rollouts/empty_steps": float(c["fewer_empty_steps"]),
            "fewer_rollouts/rows_step": self.last.get("rows_step", math.nan),
        }


def check_screenable(trainer_cls: type) -> None:
    """ValueError (one line) unless this TRL's GRPOTrainer reads its `num_generations` at
    each generation call (`_generate` and `_generate_and_score_completions`), which
    screening sets to k for its first call."""
    import inspect

    from frontier_rft.integrations.trl.dynamic import _trl_version
    from frontier_rft.integrations.trl.dynamic_config import TESTED_TRL

    sources = []
    # _generate draws k completions a prompt; _generate_and_score_completions groups the
    # rewards by self.num_generations for the screen's k-group advantages: both must read it.
    for name in ("_generate", "_generate_and_score_completions"):
        # TRL's own method, not an override (ours, or a user's subclass) that calls it
        owner = next(
            (
                c
                for c in trainer_cls.__mro__
                if c.__module__.split(".")[0] == "trl" and name in vars(c)
            ),
            trainer_cls,
        )
        method = getattr(owner, name, None)
        try:
            sources.append(inspect.getsource(method) if callable(method) else "")
        except (OSError, TypeError):  # no source (a frozen install): trust the tested release
            return
    if not all("self.num_generations" in source for source in sources):
        raise ValueError(
            f"TRL {_trl_version()}'s GRPOTrainer does not take the number of generations per "
            f"call from self.num_generations, which screening needs (tested with TRL "
            f"{', '.join(TESTED_TRL)}): install it, or set screen: 0"
        )
