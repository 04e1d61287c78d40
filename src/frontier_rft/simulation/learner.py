"""A vectorised simulated learner whose per-task success probabilities move as it trains.

Model (docs/simulation.md has the derivation and what it reproduces):

- Skills. One skill per (domain, level) plus one general skill; theta[k] is the policy's
  level in skill k (logit units). Task i of domain D and level L uses skill (D, L) with
  weight 1, the previous level's skill (D, L-1) with weight `prereq_weight` and the
  general skill with weight `general_weight`: a weight vector w_i.
- Success. p_i = sigmoid(slope * (w_i . theta + m_i - d_i)), with d_i the task's true
  difficulty and m_i a task-specific memorisation term (0 for unseen and held-out tasks).
- Rollouts. Binary: r ~ Bernoulli(p_i). Continuous: r ~ Binomial(unit_tests, p_i) /
  unit_tests (the fraction of unit tests passed).
- Training. One GRPO step on the selected groups moves skills by
      theta += lr * h(theta) * (1/B) * sum_g A_g * w_g,      m_g += memory_rate * A_g,
  with h(theta_k) = (ceiling - theta_k) / (ceiling - theta0_k) the room left below the
  policy's capacity (diminishing returns; some tasks stay out of reach),
  where A_g is the group's mean |GRPO advantage| (std-normalised), so a group with no
  reward spread changes nothing and the change grows with the advantage magnitude; the
  1/B is the loss mean over the batch, so a batch of mostly zero-spread groups teaches
  little (the effect every curriculum in this library exploits). Skills shared between
  tasks transfer; prerequisites make higher levels learnable once lower ones are.
- Forgetting (optional). Skills not exercised in a step relax toward their initial
  value: theta_k -= forgetting * (theta_k - theta0_k).
- Fading transfer (optional, `transfer_halflife` H > 0). A task trained c_g times before
  (groups with reward spread) moves skills by A_g / (1 + c_g / H) instead of A_g: repeats
  of the same prompt teach the skill less and less (memorisation is unaffected), as a small
  real policy trained on a few hundred revisited prompts showed (docs/results/real_rl.md).
- Score. The expected pass rate over held-out tasks drawn from the same distribution
  (m = 0): generalisation, not memorisation, and noise-free so curves are smooth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.simulation.prompts import task_prompts
from frontier_rft.simulation.scenario import ScenarioConfig

__all__ = ["SimulatedLearner", "TaskSet"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _sigmoid(x: F64) -> F64:
    out: F64 = 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic
    return out


@dataclass(frozen=True)
class TaskSet:
    """Tasks as the learner sees them: domain, level, true difficulty, skill weights."""

    domain: I64
    level: I64
    difficulty: F64
    weights: F64
    """(N, K) skill weights w_i."""

    @classmethod
    def sample(cls, cfg: ScenarioConfig, n: int, rng: np.random.Generator) -> TaskSet:
        domain = rng.integers(0, cfg.num_domains, size=n)
        level = rng.choice(cfg.num_levels, size=n, p=np.asarray(cfg.level_mix) / sum(cfg.level_mix))
        offsets = np.asarray(cfg.domain_offsets, dtype=np.float64)
        difficulty = (
            cfg.level_step * level + offsets[domain] + cfg.task_noise * rng.standard_normal(n)
        )
        k = cfg.num_skills
        weights = np.zeros((n, k))
        rows = np.arange(n)
        weights[rows, domain * cfg.num_levels + level] = 1.0
        has_prereq = level > 0
        weights[rows[has_prereq], (domain * cfg.num_levels + level - 1)[has_prereq]] = (
            cfg.prereq_weight
        )
        weights[:, k - 1] = cfg.general_weight
        return cls(domain=domain, level=level, difficulty=difficulty, weights=weights)


class SimulatedLearner:
    """The policy being trained, as far as a task selector can tell (see module docstring)."""

    def __init__(self, cfg: ScenarioConfig, seed: int = 0):
        self.cfg = cfg
        world = np.random.default_rng([seed, 0])  # the task pool and metadata
        self.rng = np.random.default_rng([seed, 1])  # rollout noise
        self.train_tasks = TaskSet.sample(cfg, cfg.num_tasks, world)
        self.eval_tasks = TaskSet.sample(cfg, cfg.eval_tasks, world)
        self.theta0 = np.full(cfg.num_skills, cfg.initial_skill)
        self.theta = self.theta0.copy()
        self.memory = np.zeros(cfg.num_tasks)
        self.times_trained = np.zeros(cfg.num_tasks)
        """Groups with reward spread trained per task (fading transfer counts them)."""
        self.steps_trained = 0
        self.pool = self._build_pool(world)

    # ------------------------------------------------------------------ the world
    def pass_rates(self) -> F64:
        """True current success probability of every training task."""
        t = self.train_tasks
        return _sigmoid(self.cfg.slope * (t.weights @ self.theta + self.memory - t.difficulty))

    def score(self) -> float:
        """Expected pass rate on the held-out tasks (the learning-curve y-axis)."""
        t = self.eval_tasks
        return float(_sigmoid(self.cfg.slope * (t.weights @ self.theta - t.difficulty)).mean())

    def rollout(self, ids: I64, n: int) -> F64:
        """Rewards of n sampled rollouts per task, laid out as np.repeat(ids, n)."""
        p = np.repeat(self.pass_rates()[ids], n)
        if self.cfg.reward == "continuous":
            return self.rng.binomial(self.cfg.unit_tests, p) / self.cfg.unit_tests
        return (self.rng.random(p.shape[0]) < p).astype(np.float64)

    def train(self, batch: GroupBatch) -> None:
        """One GRPO-like update from this step's groups (zero-spread groups change nothing)."""
        cfg = self.cfg
        signal = batch.mean_abs_advantage("grpo")
        weights = self.train_tasks.weights[batch.task_ids]
        room = np.clip((cfg.skill_ceiling - self.theta) / (cfg.skill_ceiling - self.theta0), 0, 1)
        transfer = signal
        if cfg.transfer_halflife > 0:
            transfer = signal / (1.0 + self.times_trained[batch.task_ids] / cfg.transfer_halflife)
        step = cfg.learning_rate * room * (transfer @ weights) / max(batch.num_groups, 1)
        if cfg.forgetting > 0:
            unused = weights[signal > 0].sum(axis=0) == 0
            self.theta[unused] -= cfg.forgetting * (self.theta[unused] - self.theta0[unused])
        self.theta += step
        np.add.at(self.memory, batch.task_ids, cfg.memory_rate * signal)
        np.add.at(self.times_trained, batch.task_ids, (signal > 0).astype(np.float64))
        self.steps_trained += 1

    # ------------------------------------------------------------------ metadata
    def _build_pool(self, rng: np.random.Generator) -> TaskPool:
        """Everything any selector may need, with realistic noise (estimates, not truth)."""
        cfg, t = self.cfg, self.train_tasks
        n = cfg.num_tasks
        categories = t.level if cfg.num_domains == 1 else np.stack([t.level, t.domain], axis=1)
        offline_difficulty = t.difficulty + cfg.metadata_noise * rng.standard_normal(n)
        features = np.concatenate(
            [t.weights, (t.difficulty / cfg.level_step)[:, None]], axis=1
        ) + cfg.metadata_noise * rng.standard_normal((n, cfg.num_skills + 1))
        reference = np.stack(
            [
                self._reference_rate(cfg.weak_reference_shift, rng),
                self._reference_rate(cfg.strong_reference_shift, rng),
            ],
            axis=1,
        )
        prompts = task_prompts(
            t.domain,
            t.level,
            cfg.num_domains,
            cfg.num_levels,
            cfg.domain_names,
            cfg.prompt_signal,
            np.random.default_rng([int(rng.integers(2**32)), 2]),
        )
        return TaskPool(
            num_tasks=n,
            categories=categories,
            difficulty=offline_difficulty,
            features=features,
            reference_pass_rates=reference,
            prompts=prompts,
        )

    def _reference_rate(self, shift: float, rng: np.random.Generator) -> F64:
        """A reference model's pass rate per task, estimated from a few rollouts (noisy)."""
        t, cfg = self.train_tasks, self.cfg
        p = _sigmoid(cfg.slope * (t.weights @ (self.theta0 + shift) - t.difficulty))
        rate: F64 = rng.binomial(cfg.reference_rollouts, p) / cfg.reference_rollouts
        return rate
