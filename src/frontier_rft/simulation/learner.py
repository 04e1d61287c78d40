"""A vectorised simulated learner whose per-task success probabilities move as it trains.

Model (docs/simulation.md has the derivation, the calibration and what it reproduces):

- Skills. One skill per (domain, level) plus one general skill; theta[k] is the policy's
  level in skill k (logit units). Task i of domain D and level L uses skill (D, L) with
  weight 1, the previous level's skill (D, L-1) with weight `prereq_weight` and the
  general skill with weight `general_weight`: a weight vector w_i.
- Success. p_i = sigmoid(slope * (w_i . theta + m_i + mu * c_i - d_i - kappa * |c|^2 + z_i - R)),
  with d_i the task's true difficulty, m_i a task-specific memorisation term, c the
  accumulated task-specific displacement below (m = c = 0 for held-out tasks; the
  interference kappa |c|^2 reaches every task), z_i the task's drift and R what quick
  repeats have cost every task.
- Rollouts. Binary: r ~ Bernoulli(p_i). Continuous: r ~ Binomial(unit_tests, p_i) /
  unit_tests (the fraction of unit tests passed). With `rollout_noise` tau > 0 each group
  draws its own logit shift tau * N(0, 1) first (a prompt's pass rate moves between visits).
- Training. One GRPO step on the selected groups g (A_g the group's mean |GRPO advantage|,
  std-normalised, so a group with no reward spread changes nothing; B the number of groups):
      u = (1/B) sum_g A_g * w_g                    (the transferring skill update)
      s_g = eta * A_g / B                          (each task's own, non-transferring part)
      theta += lr * scale * h(theta) * u,          c = (1 - gamma) * c;  c_g += lr * scale * s_g
      m_g += memory_rate * A_g
  with h(theta_k) = (ceiling - theta_k) / (ceiling - theta0_k) the room left below the
  policy's capacity. The step's scale: optimizer 'sgd', scale = 1 (the 1/B makes a batch
  of mostly zero-spread groups a small step); optimizer 'adam', scale = 1 / sqrt(v_hat)
  with v the running mean (beta2 = 0.999, bias-corrected) of
  |u|^2 + sum_g s_g^2 + sigma^2 sum_g A_g^2 / B^2, the update's squared norm, as AdamW
  normalises it: every step then has about the same size, and what a batch changes is the
  update's direction, i.e. how much of it transfers.
  Skills shared between tasks transfer; prerequisites make higher levels learnable once
  lower ones are.
- Task-specific part (eta > 0). Each task's update carries a component along the task's
  own direction (orthogonal across tasks): it adds up coherently when the same task is
  revisited and averages out when spread over many tasks. Along its own task it helps
  (mu * c_i, memorisation); its squared norm costs every task kappa * |c|^2 (interference:
  the policy drifts away from what generalises); later updates overwrite it at rate gamma.
- Gradient noise (sigma > 0, 'adam'). Each group's policy-gradient estimate carries noise
  independent of the other groups', sigma * A_g / B in norm: it adds up as the square root
  of the number of groups while their signal adds up linearly, takes its share of the
  normalised step and moves no skill (it lands in directions no task measures). A batch
  with more groups with reward spread therefore moves skills further per step. With
  `noise_group_size` n0 > 0 a group of n rollouts carries sigma * A_g * sqrt(n0 / n) / B:
  its estimate is a mean over n independent rollouts (groups of different sizes, a rollout
  allocation); at n = n0 nothing changes.
- Drift (`task_drift` delta > 0). Every step, each training and held-out task's z_i takes a
  random step delta * N(0, 1): a real update moves each prompt's pass rate a little in its
  own way, so a pass rate measured on one visit predicts the next one less well.
- Quick repeats (`repeat_cost` rho > 0). A group with reward spread whose task had one on
  the step before costs every task R += rho * lr * scale * A_g / B logits: what separates
  the selectors real RL found harmful at both pool sizes (they retrain most prompts on the
  next step) from those it did not. A hypothesis fitted to real results, not measured: a
  prompt retrained right after its update is sampled from a policy already pushed toward
  the solutions just rewarded, and the second update mostly sharpens those.
- Forgetting (optional). Skills not exercised in a step relax toward their initial
  value: theta_k -= forgetting * (theta_k - theta0_k).
- Fading transfer (optional, `transfer_halflife` H > 0). A task trained c_g times before
  (groups with reward spread) moves skills by A_g / (1 + c_g / H) instead of A_g.
- Score. The expected pass rate over held-out tasks drawn from the same distribution
  (m = c = 0): generalisation, not memorisation, and noise-free so curves are smooth.

With optimizer 'sgd', eta = 0, no drift and no repeat cost (the defaults) this is the
original learner, which transfers skill by construction (scenarios hard, easy, multidomain,
continuous); the calibrated scenarios (small-pool, large-pool) use 'adam', eta > 0,
sigma > 0, drift and rho > 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.simulation.prompts import task_prompts
from frontier_rft.simulation.scenario import ScenarioConfig

__all__ = ["SimulatedLearner", "TaskSet"]


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


ADAM_BETA2 = 0.999
"""Decay of the running mean of squared update norms (AdamW's default beta2)."""
_ADAM_EPS = 1e-12


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
        self.specific = np.zeros(cfg.num_tasks)
        """c: each task's accumulated task-specific (non-transferring) displacement."""
        self.update_sq = 0.0
        """Running mean of squared update norms (optimizer 'adam'), before bias correction."""
        self.times_trained = np.zeros(cfg.num_tasks)
        """Groups with reward spread trained per task (fading transfer counts them)."""
        self.drift = np.zeros(cfg.num_tasks)
        """Each training task's accumulated random logit drift (`task_drift`)."""
        self.eval_drift = np.zeros(cfg.eval_tasks)
        self.last_trained = np.full(cfg.num_tasks, -2, dtype=np.int64)
        """Step at which each task last had a group with reward spread (-2: never)."""
        self.repeat_harm = 0.0
        """Logits every task has lost to quick repeats (`repeat_cost`)."""
        self.steps_trained = 0
        self.pool = self._build_pool(world)

    # ------------------------------------------------------------------ the world
    def interference(self) -> float:
        """kappa * |c|^2: the logits every task loses to accumulated task-specific updates."""
        if self.cfg.interference == 0:
            return 0.0
        return self.cfg.interference * float(self.specific @ self.specific)

    def pass_rates(self) -> F64:
        """True current success probability of every training task."""
        return _sigmoid(self.cfg.slope * self._train_margins())

    def _train_margins(self) -> F64:
        t, cfg = self.train_tasks, self.cfg
        margin: F64 = t.weights @ self.theta + self.memory - t.difficulty + self.drift
        if cfg.specific_share > 0:
            margin = margin + cfg.specific_gain * self.specific - self.interference()
        return margin - self.repeat_harm

    def score(self) -> float:
        """Expected pass rate on the held-out tasks (the learning-curve y-axis)."""
        t = self.eval_tasks
        margin = (
            t.weights @ self.theta
            - t.difficulty
            - self.interference()
            + self.eval_drift
            - self.repeat_harm
        )
        return float(_sigmoid(self.cfg.slope * margin).mean())

    def rollout(self, ids: I64, n: int | I64) -> F64:
        """Rewards of n sampled rollouts per task (n an int, or one count per task), laid out
        as np.repeat(ids, n)."""
        cfg = self.cfg
        if cfg.rollout_noise > 0:  # each group's pass rate, shifted by its own logit noise
            margin = self._train_margins()[ids]
            shift = cfg.rollout_noise * self.rng.standard_normal(margin.shape[0])
            p = np.repeat(_sigmoid(cfg.slope * margin + shift), n)
        else:
            p = np.repeat(self.pass_rates()[ids], n)
        if cfg.reward == "continuous":
            return self.rng.binomial(cfg.unit_tests, p) / cfg.unit_tests
        return (self.rng.random(p.shape[0]) < p).astype(np.float64)

    def train(self, batch: GroupBatch, loss_scale: float = 1.0) -> None:
        """One GRPO-like update from this step's groups (zero-spread groups change nothing);
        `loss_scale` multiplies the step's loss (StepSamples.loss_scale: FewerRollouts'
        'batch' scaling of a step that trains fewer groups than uniform's)."""
        cfg = self.cfg
        signal = batch.mean_abs_advantage("grpo")
        grad = signal * loss_scale  # a factor on the loss scales the gradient, noise included
        weights = self.train_tasks.weights[batch.task_ids]
        groups = max(batch.num_groups, 1)
        room = np.clip((cfg.skill_ceiling - self.theta) / (cfg.skill_ceiling - self.theta0), 0, 1)
        transfer = grad
        if cfg.transfer_halflife > 0:
            transfer = grad / (1.0 + self.times_trained[batch.task_ids] / cfg.transfer_halflife)
        own = cfg.specific_share * grad / groups
        scale = 1.0
        if cfg.optimizer == "sgd":  # the original learner's expression, bit for bit
            step = cfg.learning_rate * room * (transfer @ weights) / groups
        else:
            update = (transfer @ weights) / groups
            # the policy-gradient estimate's noise: independent per group, so its square adds
            # up over groups while the signal adds up coherently; it takes its share of each
            # normalised step in directions no task measures (a batch with more groups with
            # reward spread therefore moves skills further per step)
            # a group's estimate averages its n rollouts: its noise falls as 1/sqrt(n), from
            # sigma at the noise_group_size it was calibrated with (0: the same for any n)
            noisy = grad
            if cfg.noise_group_size:
                noisy = grad * np.sqrt(cfg.noise_group_size / batch.counts)
            noise_sq = cfg.gradient_noise**2 * float(noisy @ noisy) / groups**2
            scale = self._adam_scale(update, own, noise_sq)
            step = cfg.learning_rate * scale * room * update
        if cfg.forgetting > 0:
            unused = weights[signal > 0].sum(axis=0) == 0
            self.theta[unused] -= cfg.forgetting * (self.theta[unused] - self.theta0[unused])
        self.theta += step
        if cfg.specific_share > 0:
            if cfg.specific_decay > 0:
                self.specific *= 1.0 - cfg.specific_decay
            np.add.at(self.specific, batch.task_ids, cfg.learning_rate * scale * own)
        if cfg.task_drift > 0:  # every step moves every prompt a little, in its own way
            self.drift += cfg.task_drift * self.rng.standard_normal(self.drift.shape[0])
            self.eval_drift += cfg.task_drift * self.rng.standard_normal(self.eval_drift.shape[0])
        mixed = signal > 0
        if cfg.repeat_cost > 0:  # a group whose prompt was trained on the step before
            repeat = mixed & (self.last_trained[batch.task_ids] == self.steps_trained - 1)
            self.repeat_harm += (
                cfg.repeat_cost * cfg.learning_rate * scale * float(signal[repeat].sum()) / groups
            )
        self.last_trained[batch.task_ids[mixed]] = self.steps_trained
        np.add.at(self.memory, batch.task_ids, cfg.memory_rate * signal)
        np.add.at(self.times_trained, batch.task_ids, mixed.astype(np.float64))
        self.steps_trained += 1

    def _adam_scale(self, update: F64, own: F64, noise_sq: float) -> float:
        """One over the running (bias-corrected) RMS of the update's norm, as AdamW scales."""
        sq = float(update @ update + own @ own) + noise_sq
        self.update_sq = ADAM_BETA2 * self.update_sq + (1.0 - ADAM_BETA2) * sq
        v_hat = self.update_sq / (1.0 - ADAM_BETA2 ** (self.steps_trained + 1))
        return float(1.0 / (np.sqrt(v_hat) + _ADAM_EPS))

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
