"""Scenario configs for the simulated learner, and the named scenarios users compare on."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from frontier_rft.core.config import check, check_choice, check_field_types, config_from_dict

__all__ = ["SCENARIOS", "ScenarioConfig", "get_scenario"]

MAX_SCENARIO_VALUE = 1e12
"""Bound on every real-valued scenario field (logits, rates): beyond it nothing changes."""
MAX_SIMULATED_TASKS = 10_000_000
"""Most training plus held-out tasks a simulated learner holds (~100 bytes each)."""
MAX_SKILLS = 10_000
"""Most (domain, level) skills."""
MAX_COUNT = 100_000
"""Most unit tests per task and rollouts per reference pass rate."""


@dataclass(frozen=True)
class ScenarioConfig:
    """A task pool and a learner (equations in simulation/learner.py, docs/simulation.md)."""

    name: str = "custom"
    """Scenario name, as shown in reports."""
    description: str = ""
    """One line on what the scenario stands for."""
    num_tasks: int = 2000
    """Training tasks in the pool."""
    eval_tasks: int = 500
    """Held-out tasks the score is measured on."""
    num_domains: int = 1
    """Task types (domains); categories become (level, domain) when more than one."""
    domain_names: tuple[str, ...] = ("math",)
    """Display name of each domain (used in prompts)."""
    domain_offsets: tuple[float, ...] = (0.0,)
    """Extra difficulty of each domain, in logits."""
    num_levels: int = 5
    """Difficulty levels per domain."""
    level_mix: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0)
    """Relative share of tasks at each level."""
    level_step: float = 1.5
    """Difficulty added per level, in logits."""
    task_noise: float = 1.0
    """Std of a task's own difficulty around its level's."""
    prereq_weight: float = 0.5
    """Weight of the previous level's skill in a task (prerequisites, transfer)."""
    general_weight: float = 0.3
    """Weight of the general skill every task shares (transfer across domains)."""
    initial_skill: float = 0.0
    """Initial level of every skill, in logits."""
    slope: float = 1.0
    """Logistic slope from skill margin to success probability."""
    learning_rate: float = 1.0
    """Skill step per unit of batch-mean |advantage| (the policy's learning rate)."""
    skill_ceiling: float = 3.0
    """Skill level the policy cannot exceed (capacity); steps shrink linearly toward it."""
    memory_rate: float = 0.3
    """Per-task memorisation step per unit |advantage| (does not generalise)."""
    forgetting: float = 0.0
    """Per-step relaxation of unexercised skills toward their initial value."""
    transfer_halflife: float = 0.0
    """Trainings of one task after which its skill transfer halves (0 = it never fades)."""
    optimizer: str = "sgd"
    """'sgd': a step is lr x the batch-mean update; 'adam': normalised by its running RMS."""
    specific_share: float = 0.0
    """eta: size of each group's task-specific (non-transferring) update per unit of skill."""
    specific_gain: float = 0.0
    """mu: logits a task gains per unit of its own accumulated task-specific displacement."""
    interference: float = 0.0
    """kappa: logits every task loses per unit of squared task-specific displacement |c|^2."""
    specific_decay: float = 0.0
    """gamma: per-step decay of the task-specific displacement (later updates overwrite it)."""
    rollout_noise: float = 0.0
    """tau: std of each group's own logit shift at rollout (pass rates move between visits)."""
    gradient_noise: float = 0.0
    """sigma: std of each group's policy-gradient noise per unit |advantage| ('adam' only)."""
    noise_group_size: int = 0
    """Group size sigma holds at: a group of n rollouts carries sigma * sqrt(this / n), the
    noise of a mean over n rollouts (0: sigma at any n, the original learner)."""
    task_drift: float = 0.0
    """Per-step std of each task's random logit walk (single prompts move their own way)."""
    repeat_cost: float = 0.0
    """Logits every task loses per unit of step spent on a prompt trained the step before."""
    reward: str = "binary"
    """'binary' (pass/fail) or 'continuous' (fraction of unit tests passed)."""
    unit_tests: int = 5
    """Unit tests per task for continuous rewards."""
    metadata_noise: float = 0.3
    """Noise on offline difficulty and features (they are estimates, not the truth)."""
    weak_reference_shift: float = -1.0
    """Skill shift of the weak reference model (BOTS interpolation), in logits."""
    strong_reference_shift: float = 2.0
    """Skill shift of the strong reference model, in logits."""
    reference_rollouts: int = 8
    """Rollouts each reference pass rate is estimated from."""
    prompt_signal: float = 1.0
    """How much of a task's level its prompt text reveals (0: topic and numbers only)."""

    def __post_init__(self) -> None:
        check_field_types(self)  # a wrong type is named before a range check compares it
        check(self.num_tasks > 0 and self.eval_tasks > 0, "num_tasks and eval_tasks must be > 0")
        check(
            self.num_tasks + self.eval_tasks <= MAX_SIMULATED_TASKS,
            f"num_tasks + eval_tasks must be at most {MAX_SIMULATED_TASKS:,} (the simulator keeps "
            f"every task in memory), got {self.num_tasks + self.eval_tasks:,}",
        )
        check(self.num_domains >= 1 and self.num_levels >= 1, "need >= 1 domain and level")
        check(
            self.num_domains * self.num_levels <= MAX_SKILLS,
            f"num_domains x num_levels must be at most {MAX_SKILLS} skills",
        )
        check(
            len(self.domain_names) == self.num_domains
            and len(self.domain_offsets) == self.num_domains,
            f"domain_names and domain_offsets need {self.num_domains} entries (num_domains)",
        )
        check(
            len(self.level_mix) == self.num_levels and min(self.level_mix) >= 0,
            f"level_mix needs {self.num_levels} non-negative entries (num_levels)",
        )
        check(sum(self.level_mix) > 0, "level_mix must have a positive entry (tasks per level)")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, float):
                    check(
                        math.isfinite(v) and abs(v) <= MAX_SCENARIO_VALUE,
                        f"{f.name} must be a finite number within +-{MAX_SCENARIO_VALUE:g}, "
                        f"got {v!r}",
                    )
        check_choice("reward", self.reward, ("binary", "continuous"))
        check_choice("optimizer", self.optimizer, ("sgd", "adam"))
        for name in (
            "specific_share",
            "specific_gain",
            "interference",
            "rollout_noise",
            "gradient_noise",
            "task_drift",
            "repeat_cost",
        ):
            value = getattr(self, name)
            check(value >= 0, f"{name} must be >= 0, got {value!r}")
        check(
            self.gradient_noise == 0 or self.optimizer == "adam",
            "gradient_noise needs optimizer 'adam' (the noise takes its share of a normalised "
            "step; with 'sgd' it would change nothing)",
        )
        check(
            0 <= self.specific_decay < 1,
            f"specific_decay must be in [0, 1), got {self.specific_decay!r}",
        )
        check(0 <= self.prompt_signal <= 2.5, "prompt_signal must be in [0, 2.5]")
        check(self.unit_tests >= 1 and self.reference_rollouts >= 1, "counts must be >= 1")
        check(
            self.unit_tests <= MAX_COUNT and self.reference_rollouts <= MAX_COUNT,
            f"unit_tests and reference_rollouts must be at most {MAX_COUNT:,}",
        )
        check(
            0 <= self.noise_group_size <= MAX_COUNT,
            f"noise_group_size must be an int in [0, {MAX_COUNT:,}] (0 = noise independent of "
            f"the group size), got {self.noise_group_size!r}",
        )
        check(0 <= self.forgetting < 1, "forgetting must be in [0, 1)")
        check(self.learning_rate >= 0 and self.memory_rate >= 0, "rates must be >= 0")
        check(
            self.transfer_halflife >= 0,
            f"transfer_halflife must be >= 0 (0 = no fading), got {self.transfer_halflife!r}",
        )
        check(
            self.skill_ceiling > self.initial_skill,
            "skill_ceiling must exceed initial_skill (otherwise nothing can be learned)",
        )

    @property
    def num_skills(self) -> int:
        """One skill per (domain, level) plus the general skill."""
        return self.num_domains * self.num_levels + 1

    def replace(self, **overrides: Any) -> ScenarioConfig:
        """A copy with some fields changed (unknown names raise a ValueError)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values.update(overrides)
        return config_from_dict(ScenarioConfig, values, what="scenario")


_COUNTDOWN = ScenarioConfig(
    name="small-pool",
    description="calibrated on real GRPO (tiny Llama, Countdown); small pool, many epochs",
    num_tasks=512,
    eval_tasks=600,
    domain_names=("countdown",),
    domain_offsets=(1.75,),
    num_levels=2,
    level_mix=(2.0, 1.0),
    level_step=3.85,
    task_noise=1.075,
    initial_skill=0.0,
    skill_ceiling=6.0,
    learning_rate=0.01908,
    memory_rate=0.0,
    optimizer="adam",
    specific_share=2.0,
    specific_gain=240.0,
    interference=3.0,
    gradient_noise=4.0,
    noise_group_size=8,  # calibrated on groups of 8 rollouts
    task_drift=0.1,
    repeat_cost=0.75,
)
"""The real testbed's pool (2-number and 3-number Countdown tasks, two to one; start offset,
spread and level step fitted to its start histograms) and the learner calibrated on its
results at both pool sizes: the best point of `python benchmarks/sim_vs_real.py fit-joint`
(benchmarks/results/sim_calibration_joint.md; specific_share 2, memorise 480 = specific_gain x
specific_share, interfere 12 = interference x specific_share^2, gradient noise 4, drift 0.1
logits per step, quick-repeat cost 0.75, learning rate fitted to uniform's gain on 512
prompts, to 4 digits). docs/simulation.md explains the mechanism and the fit."""

SCENARIOS: dict[str, ScenarioConfig] = {  # calibrated first; then the original learner
    "small-pool": _COUNTDOWN,
    "large-pool": _COUNTDOWN.replace(
        name="large-pool",
        description="calibrated on real GRPO (tiny Llama, Countdown); large pool, few epochs",
        num_tasks=1280,
    ),
    "hard": ScenarioConfig(
        name="hard",
        description="transfer by construction: competition-math-like, most tasks start unsolved",
        level_mix=(0.6, 1.0, 1.2, 1.4, 1.6),
        initial_skill=-1.0,
        learning_rate=0.3,
    ),
    "easy": ScenarioConfig(
        name="easy",
        description="transfer by construction: a pool the policy masters quickly",
        level_mix=(1.6, 1.4, 1.0, 0.6, 0.4),
        level_step=1.0,
        initial_skill=1.5,
        learning_rate=0.3,
    ),
    "multidomain": ScenarioConfig(
        name="multidomain",
        description="transfer by construction: three task types of different difficulty (SEC)",
        num_domains=3,
        domain_names=("countdown", "zebra", "arc"),
        domain_offsets=(-1.0, 0.5, 2.0),
        initial_skill=0.0,
        learning_rate=0.3,
    ),
    "continuous": ScenarioConfig(
        name="continuous",
        description="transfer by construction: code-like tasks scored by unit tests passed",
        domain_names=("code",),
        reward="continuous",
        initial_skill=-0.5,
        learning_rate=0.3,
    ),
}


def get_scenario(name: str, **overrides: Any) -> ScenarioConfig:
    """A named scenario, optionally with some fields overridden."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name].replace(**overrides) if overrides else SCENARIOS[name]
