"""Hyperparameters of the tiny model, the supervised warm start and the RL trainer.

Frozen dataclasses with a one-line docstring per field (the CLI help is built from them),
validated in `__post_init__` with messages that say how to fix the value. No torch here.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from frontier_rft.core.advantages import ESTIMATORS
from frontier_rft.core.config import check, check_choice, check_field_types
from frontier_rft.core.selector import Selector
from frontier_rft.lm.decoding import Sampling, temperature_problem
from frontier_rft.lm.device import DEVICE_HELP, valid_device_name
from frontier_rft.sampling.sampler_flags import (
    legacy_train_fields,
)
from frontier_rft.sampling.spec import SamplerSpec, kind_row
from frontier_rft.sampling.step import MAX_GROUP_SIZE, Sampler
from frontier_rft.sampling.step_plan import StepPlan, StepRows, Wrap
from frontier_rft.selectors.registry import RETIRED, SELECTORS
from frontier_rft.shadow.live import shadow_config
from frontier_rft.shadow.rule import ShadowConfig, check_shadow_rules
from frontier_rft.tasks.suite import TASKS
from frontier_rft.training.batch_auto import (
    BATCH_LR_RULES,
    BATCH_PLANS,
    BATCH_STARTS,
    PLAN_CURVES,
    PLAN_NOISES,
    auto_refusal,
)
from frontier_rft.training.eval_grid import parse_grid
from frontier_rft.training.given import parse_given

__all__ = [
    "BACKFILL_MODES",
    "DEFAULT_LEVELS",
    "FEWER_STEPS_REFUSALS",
    "GROUP_WEIGHTINGS",
    "LOSS_AGGREGATIONS",
    "PAD_ROWS",
    "PRECISIONS",
    "ModelConfig",
    "SFTConfig",
    "TrainConfig",
    "replace_config",
    "train_config",
]

DEFAULT_LEVELS = {
    "countdown": {"sft": "2x20,3x20", "train": "2x20,3x20,4x20"},
    "arithmetic": {"sft": "2,3,4,5,6,7", "train": "2,3,4,5,6,7"},
}
"""Levels a config uses when its `levels` is left empty: the warm start's and the RL pool's."""
LOSS_AGGREGATIONS = ("token_mean", "sequence_mean", "constant")
GROUP_WEIGHTINGS = ("prompt", "rollout")
"""TrainConfig.group_weighting: how groups of different sizes weigh in the loss."""
BACKFILL_MODES = ("off", "replay")
"""TrainConfig.backfill: a kept step's freed group slots left empty, or filled by replay."""
FEWER_STEPS_REFUSALS = {
    "selector": "fewer_steps ends the run by its passes over the prompts; {selector!r} does not "
    "walk the data: use greso, skip or uniform, or drop fewer_steps",
    "sampler": "fewer_steps trains whole batches of the prompts the selector keeps (plain GRPO "
    "steps); sampler {sampler!r} shapes the steps itself: drop --rollouts kept, --screen, "
    "dynamic sampling and the other step samplers, or drop fewer_steps",
    "rescue": "fewer_steps trains whole batches of the prompts the selector keeps (plain GRPO "
    "steps); rescue {rescue} adds rollouts to a step's all-wrong groups (a step sampler around "
    "the steps): set rescue 0, or drop fewer_steps",
}
"""TrainConfig.fewer_steps' refusals, by what clashes with it (the fields name its value), in
the reference trainer's words: its flags and fields (a plan ended by passes refuses the same
clashes in its own words: sampling/step_plan.py)."""
PAD_ROWS = ("auto", "off", "buckets")
"""TrainConfig.pad_rows: a kept step's generation padded to a few batch shapes, or not."""
PRECISIONS = ("fp32", "bf16")
"""TrainConfig.precision: float32 throughout, or bfloat16 autocast over float32 weights."""


def _pos_int(name: str, value: object, hint: str = "") -> None:
    check(
        isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        f"{name} must be a positive int{hint}, got {value!r}",
    )


def _nonneg(name: str, value: object, hint: str = "") -> None:
    check(
        isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
        f"{name} must be a number >= 0{hint}, got {value!r}",
    )


def _positive(name: str, value: object) -> None:
    check(
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0,
        f"{name} must be a number > 0, got {value!r}",
    )


def _device(value: object) -> None:
    check(valid_device_name(value), f"device must be {DEVICE_HELP}, got {value!r}")


def _levels(config: Any, stage: str) -> None:
    """Validate `config.levels`; an empty string becomes the task's default for `stage`."""
    levels = config.levels
    if levels == "":  # frozen dataclass: set once, during __post_init__
        object.__setattr__(config, "levels", DEFAULT_LEVELS[config.task][stage])
        return
    check(
        isinstance(levels, str) and all(p.strip() for p in levels.split(",")),
        "levels must be a comma-separated level list such as '2x20,3x20' "
        "(countdown: N numbers from 1..M, or N for the task's default ranges; arithmetic: D "
        f"for a sum of two D-digit operands, DxE, D-E or D*E), got {levels!r}",
    )


@dataclass(frozen=True)
class ModelConfig:
    """The tiny causal LM and its locally trained byte-level BPE tokenizer."""

    task: str = "countdown"
    """Task family whose prompts and demonstrations form the tokenizer corpus."""
    vocab_size: int = 1024
    """Largest BPE vocabulary, special tokens included (256 byte symbols + merges; training
    stops earlier when no pair occurs twice: 657 tokens with the default corpus)."""
    hidden_size: int = 128
    """Model width."""
    num_layers: int = 4
    """Decoder layers."""
    num_heads: int = 4
    """Attention heads (hidden_size must be divisible by it)."""
    intermediate_size: int = 384
    """MLP width (SwiGLU)."""
    max_positions: int = 1024
    """Longest sequence the model accepts; METIS judge prompts are the longest inputs."""
    corpus_tasks: int = 3000
    """Tasks (prompt + demonstration) in the tokenizer corpus, plus the METIS judge text."""
    seed: int = 0
    """Seed of the corpus and of the weight initialisation."""

    def __post_init__(self) -> None:
        check_field_types(self)  # a wrong type is named before a range check compares it
        check_choice("task", self.task, TASKS)
        check(
            isinstance(self.vocab_size, int) and 300 <= self.vocab_size <= 65536,
            f"vocab_size must be an int in [300, 65536] (256 bytes + specials + merges), "
            f"got {self.vocab_size!r}",
        )
        for name in ("hidden_size", "num_layers", "num_heads", "intermediate_size"):
            _pos_int(name, getattr(self, name))
        check(
            self.hidden_size % self.num_heads == 0
            and (self.hidden_size // self.num_heads) % 2 == 0,
            f"hidden_size ({self.hidden_size}) must be divisible by num_heads ({self.num_heads}) "
            "into an even head size (rotary embeddings)",
        )
        _pos_int("max_positions", self.max_positions)
        _pos_int("corpus_tasks", self.corpus_tasks)


@dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start on solver demonstrations (and, optionally, the judge format)."""

    task: str = "countdown"
    """Task family of the demonstrations."""
    levels: str = ""
    """Levels whose demonstrations are trained on ('' = the task's default: countdown
    '2x20,3x20', the easier ones; arithmetic '1,2,3,4,5,6')."""
    num_examples: int = 800
    """Demonstrations generated for training (seed `data_seed`)."""
    data_seed: int = 1000
    """Seed of the demonstration set (keep it apart from the RL pool and eval seeds)."""
    steps: int = 600
    """Optimizer steps (600 x 32 sequences: about 4 minutes on 2 cores for the default model)."""
    batch_size: int = 32
    """Sequences per step."""
    lr: float = 2e-3
    """Peak AdamW learning rate (linear warm-up, cosine decay)."""
    warmup_steps: int = 20
    """Linear warm-up steps."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    judge_format_share: float = 0.1
    """Share of steps' sequences that are METIS judge prompts answered with a random listed
    value: teaches the answer format only (a pretrained LLM would know it), no calibration."""
    seed: int = 0
    """Seed of batching and of the judge-format examples."""
    device: str = "cpu"
    """Torch device: 'cpu', 'cuda', 'cuda:N' or 'auto' (a GPU when torch sees one)."""
    unformatted_share: float = 0.0
    """Share of the tasks (a fixed, spread-out subset) whose demonstration is the bare answer,
    without the <answer> tags the reward needs: a warm start that knows answers but not the
    format, as a pretrained LM may (Countdown only; 0 = every demonstration formatted)."""

    def __post_init__(self) -> None:
        check_field_types(self)  # a wrong type is named before a range check compares it
        check_choice("task", self.task, TASKS)
        _levels(self, "sft")
        check(
            isinstance(self.unformatted_share, (int, float))
            and 0.0 <= self.unformatted_share < 1.0
            and (self.task == "countdown" or not self.unformatted_share),
            f"unformatted_share must lie in [0, 1) (Countdown only), got "
            f"{self.unformatted_share!r} for {self.task}",
        )
        for name in ("num_examples", "steps", "batch_size"):
            _pos_int(name, getattr(self, name))
        _positive("lr", self.lr)
        check(
            isinstance(self.warmup_steps, int) and 0 <= self.warmup_steps <= self.steps,
            f"warmup_steps must be an int in [0, steps={self.steps}], got {self.warmup_steps!r}",
        )
        _nonneg("weight_decay", self.weight_decay)
        _device(self.device)
        check(
            isinstance(self.judge_format_share, (int, float))
            and 0.0 <= self.judge_format_share < 1.0,
            f"judge_format_share must lie in [0, 1), got {self.judge_format_share!r}",
        )


@dataclass(frozen=True)
class TrainConfig:
    """Group-rollout RL (GRPO / Dr.GRPO / RLOO) with a selector choosing every batch."""

    task: str = "countdown"
    """Task family of the training pool and the held-out split."""
    selector: str = "uniform"
    """Registered selector name (`frontier selectors` lists them)."""
    selector_overrides: dict[str, Any] = field(default_factory=dict)
    """Selector config fields to override, e.g. {"tau": 0.5}; METIS lam/K/m live here."""
    steps: int = 300
    """Training steps (one selected batch and one optimizer update phase each)."""
    batch_size: int = 8
    """B: prompts selected per step."""
    group_size: int = 8
    """n: completions sampled per prompt."""
    format_reward: float | None = None
    """Reward of a well-formatted wrong answer (None = the task's own, 0.1 for Countdown;
    0 = binary success reward)."""
    max_new_tokens: int = 40
    """Longest completion; longer ones are cut (and usually score 0)."""
    temperature: float = 1.0
    """Sampling temperature of rollouts and held-out samples; the loss scores completions
    under the same temperature (logits / T, as TRL and verl do)."""
    top_p: float = 1.0
    """Nucleus sampling of rollouts, held-out samples and METIS's judge answers: keep the
    smallest set of tokens whose probability reaches top_p (1.0 = the full vocabulary)."""
    lr: float = 1e-4
    """AdamW learning rate (constant; 5e-4 collapses the default tiny model in ~40 steps)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 disables)."""
    estimator: str = "grpo"
    """Advantage: grpo (std-normalised), drgrpo (centred) or rloo (leave-one-out)."""
    loss_aggregation: str = "token_mean"
    """token_mean over all completion tokens; sequence_mean (GRPO paper: per-sequence mean,
    then mean); constant (Dr.GRPO: token sum / (B*n*max_new_tokens))."""
    clip_eps: float = 0.2
    """PPO clip range of the ratio pi/pi_old."""
    ppo_epochs: int = 1
    """Gradient passes per batch; with 1 the ratio is exactly 1 and clipping is inactive."""
    update_rows: int = 0
    """Most rows one forward and backward of the update holds (0 = the whole step at once): a
    larger step in memory bounded by this many rows, its gradient the same sum up to float
    rounding (gradient accumulation; training/micro_update.py). Not with backfill replay."""
    kl_coef: float = 0.0
    """Weight of the k3 KL estimator to the frozen start model (0 = no reference model)."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus (subtracted from the loss)."""
    train_size: int = 512
    """Tasks in the training pool."""
    levels: str = ""
    """Levels of the training pool and held-out split ('' = the task's default: countdown
    '2x20,3x20,4x20', arithmetic '1,2,3,4,5,6'); countdown: 'NxM' = N numbers from 1..M,
    'N' = the task's default ranges; arithmetic: 'D' = a sum of two D-digit operands, 'DxE'
    = D + E digits, 'D-E' a difference, 'D*E' a product; a task's level is its position in
    this list."""
    train_seed: int = 1
    """Seed of the training pool."""
    eval_size: int = 128
    """Tasks in the held-out split (separate seed; exact duplicates of training tasks removed)."""
    eval_seed: int = 2
    """Seed of the held-out split."""
    eval_samples: int = 8
    """Completions per held-out task (n of pass@k)."""
    eval_k: tuple[int, ...] = (1, 4, 8)
    """k values of pass@k reported (each <= eval_samples)."""
    eval_every: int = 100
    """Evaluate on the held-out split every this many steps (0 = only at start and end)."""
    eval_grid: tuple[str, ...] = ()
    """Also evaluate on a grid of cost, e.g. h200:3.5,passes:0.25: the state the run holds
    every SPACING units of an axis (passes, rollouts, or seconds projected on a shipped
    step-cost curve: cpu, h200), so arms that spend differently a step are read at the same
    points (training.eval_grid)."""
    checkpoint_every: int = 100
    """Save a checkpoint every this many steps (and always at the end)."""
    keep_checkpoints: int = 2
    """Most recent checkpoints kept on disk."""
    given: str = "self"
    """What the selector is given besides the prompt text: self (the policy's own
    self-embeddings as task features; what every user has), prompts (the text alone), rich
    (levels as categories, offline difficulty, task-structured features) or a comma list of
    prompts, self, categories, difficulty, task_features (frontier_rft.training.given)."""
    refresh_features_every: int = 0
    """With given 'self': re-embed the pool with the current policy every this many steps and
    hand it to selector.refresh_features (0 = embed once, before the first step)."""
    sampler: str = "passthrough"
    """The step sampler around the selector, by its kind: passthrough (plain GRPO: B prompts,
    n rollouts each), dynamic_sampling (DAPO: train only groups with reward spread),
    allocation (a step's rollouts spread over its prompts), fewer_rollouts (rollouts kept,
    screening), pilot_commit or cgrpo (C-GRPO's conformal stop rule; docs/training.md,
    "Configuration"; the flags --dynamic-sampling, --allocation, --rollouts, --screen and
    --pilot-commit set it)."""
    sampler_config: dict[str, Any] = field(default_factory=dict)
    """The sampler's config fields to set, e.g. {"budget": 0.5} for allocation (the others
    keep their defaults; DynamicSamplingConfig, AllocationConfig, FewerRolloutsConfig,
    PilotCommitConfig, ConformalStopConfig)."""
    backfill: str = "off"
    """'replay': the group slots a kept step frees (rollouts kept: fewer than B groups) are
    filled with recent informative groups of the run's own, replayed from a buffer with their
    stored completions, rewards and behaviour log-probs, no new rollouts (sampling/backfill.py;
    docs/selectors/fewer_rollouts.md, "Backfill"); 'off': a kept step trains its own groups."""
    backfill_buffer: int = 64
    """backfill: most groups the replay buffer holds (the oldest dropped first)."""
    backfill_max_age: int = 4
    """backfill: a stored group older than this many steps is dropped from the buffer."""
    backfill_max_uses: int = 1
    """backfill: times a stored group is replayed at most."""
    backfill_is_cap: float = 3.0
    """backfill: cap c on a replayed token's IS weight r in the unclipped branch, dual-clip PPO
    (arXiv 1912.09729): loss -min(min(r, c) A, clip(r, 1 - clip_eps, 1 + clip_eps) A);
    > 1 + clip_eps (below it the PPO clip binds first and the cap never acts)."""
    rescue: int = 0
    """Rescue rollouts: a trained group that comes back all-wrong, of a prompt never solved in
    this run, gets this many more rollouts in the same step, and trains joined to them when one
    is correct (0 = off; sampler passthrough or fewer_rollouts without screening;
    sampling/rescue.py; docs/selectors/fewer_rollouts.md, "Rescue")."""
    hard_groups: int = 0
    """Larger groups for prompts predicted hard: a prompt rolled out before and never solved
    gets this many more rollouts in the step's own generation call, joined to its group (0 =
    off; sampler passthrough or fewer_rollouts without screening; sampling/hard_groups.py)."""
    pad_rows: str = "auto"
    """Pad a kept step's generation to a few batch shapes: auto (buckets on CUDA, else off),
    buckets or off (training/pad_rows.py; docs/selectors/fewer_rollouts.md, "Padding")."""
    fewer_steps: bool = False
    """End the run by its passes over the prompts, not its steps: every step trains a full
    batch of the prompts the selector keeps (rollouts full), and the run ends once the
    selector's walk has walked uniform's steps x batch_size prompts (at most `steps` steps).
    A skip's saving then comes as fewer steps, each of B groups, instead of fewer rows a step
    (greso, skip or uniform; plain GRPO steps; docs/selectors/fewer_steps.md)."""
    shadows: tuple[str, ...] = ()
    """Rules to follow beside the run without changing it, e.g. greso,screen4,greso+screen4:
    each step logs what the rule would have saved and lost on this step's groups
    (curriculum/shadow/<rule>/...; docs/shadow.md)."""
    noise_every: int = 10
    """Meter the gradient noise scale every this many steps (0 = off): |G|^2 and the inter- and
    intra-prompt noise from the step's halves, logged as noise/... (training/noise_meter.py);
    it never changes what is trained; half an update's passes a metered step (every 10th: 3.5%
    of a CPU step)."""
    noise_ema: float = 0.9
    """Noise meter: weight of the past in its moving averages, per metered step, in [0, 1)."""
    batch_plan: str = "fixed"
    """fixed: batch_size prompts every step; auto: after each metered step (noise_every) the
    batch planner's prompts from the next step on, growth only, K = group_size
    (training/batch_auto.py; docs/training.md, "The trainer acting on the plan")."""
    batch_max: int = 0
    """batch_plan auto: the most prompts a step (0 = the pool, train_size)."""
    plan_curve: str = "cpu"
    """batch_plan auto: the shipped step-cost curve a plan prices steps on (cpu, h200)."""
    batch_lr_rule: str = "sqrt"
    """batch_plan auto: sqrt sets lr x sqrt(prompts / batch_size), capped at 2x; none keeps lr."""
    batch_start: str = "configured"
    """batch_plan auto: start at batch_size (configured), or at the prompts whose worst-case
    slowdown over every noise scale is least on plan_curve (least_regret; start_plan.py)."""
    plan_noise: str = "plain"
    """batch_plan auto: the meter's noise scale a plan reads: plain (noise/b_simple_ema) or adam
    (noise/adam/b_simple_ema: in the geometry of Adam's preconditioner)."""
    reward_log: bool = False
    """Write rewards.jsonl: each step's prompts, their rewards and their completions' generated
    tokens, to replay rules offline (`frontier shadow replay`; docs/shadow.md)."""
    group_weighting: str = "prompt"
    """Groups of different sizes in the loss: prompt (each group's rollouts share one prompt's
    weight) or rollout (each rollout weighs the same, so a prompt weighs by its n); equal
    group sizes make both the same."""
    reference_pass_rates: str | None = None
    """BOTS: JSON of weak/strong reference pass rates of the training pool (`frontier
    measure-references`); enables BOTS's interpolation plug-in (None = no implicit evidence)."""
    judge_max_new_tokens: int = 10
    """METIS: longest judge answer generated by the policy."""
    judge_temperature: float = 1.0
    """METIS: sampling temperature of the judge answer (0 = greedy)."""
    judge_constrained: bool = False
    """METIS: the judge may answer only `\\boxed{v}` with v an allowed value (constrained
    decoding; not in the paper), for a policy that does not follow the format itself."""
    tensorboard: bool = True
    """Also write TensorBoard event files (JSONL is always written)."""
    threads: int = 0
    """torch CPU threads (0 = torch's default)."""
    device: str = "cpu"
    """Torch device: 'cpu', 'cuda', 'cuda:N' or 'auto' (a GPU when torch sees one)."""
    precision: str = "fp32"
    """fp32, or bf16: forward passes (rollouts, scoring, evaluation) under bfloat16 autocast
    while weights and AdamW states stay float32 (a bf16 weight would drop updates below its
    ~0.4% resolution)."""
    seed: int = 0
    """Seed of torch sampling, numpy and the selector."""

    def __post_init__(self) -> None:
        if isinstance(self.reference_pass_rates, os.PathLike):  # a Path is as good as a str
            object.__setattr__(self, "reference_pass_rates", os.fspath(self.reference_pass_rates))
        check_field_types(self)  # a wrong type is named before a range check compares it
        check_choice("task", self.task, TASKS)
        check(isinstance(self.selector, str) and bool(self.selector), "selector must be a name")
        check(self.selector not in RETIRED, RETIRED.get(self.selector, ""))
        check(
            isinstance(self.selector_overrides, dict),
            "selector_overrides must be a dict of selector config fields",
        )
        for name in (
            "steps",
            "batch_size",
            "group_size",
            "max_new_tokens",
            "train_size",
            "eval_size",
            "eval_samples",
            "checkpoint_every",
            "keep_checkpoints",
            "judge_max_new_tokens",
        ):
            _pos_int(name, getattr(self, name))
        check(self.group_size >= 2, "group_size must be >= 2: group advantages need two rollouts")
        check(
            self.batch_size <= self.train_size,
            f"batch_size ({self.batch_size}) must not exceed train_size ({self.train_size})",
        )
        problem = temperature_problem(self.temperature, zero_refused="the loss divides by it")
        check(problem is None, problem or "")
        self.rollout_sampling()  # Sampling holds the rule for top_p, (0, 1]
        _positive("lr", self.lr)
        for name in ("weight_decay", "max_grad_norm", "kl_coef", "entropy_coef", "clip_eps"):
            _nonneg(name, getattr(self, name))
        judge = temperature_problem(self.judge_temperature)
        check(judge is None, f"judge_{judge}")
        check(
            isinstance(self.judge_constrained, bool),
            f"judge_constrained must be true or false, got {self.judge_constrained!r}",
        )
        if self.format_reward is not None:
            _nonneg("format_reward", self.format_reward, " (None = the task's default)")
        check_choice("estimator", self.estimator, ESTIMATORS)
        check_choice("loss_aggregation", self.loss_aggregation, LOSS_AGGREGATIONS)
        _pos_int("ppo_epochs", self.ppo_epochs)
        check(
            isinstance(self.update_rows, int)
            and not isinstance(self.update_rows, bool)
            and self.update_rows >= 0,
            "update_rows must be an int >= 0 (0 = the whole step in one pass, e.g. 128), "
            f"got {self.update_rows!r}",
        )
        check(
            not (self.update_rows and self.backfill != "off"),
            "update_rows needs backfill off (a replayed step's importance weights are read over "
            "the whole step): set update_rows 0 or backfill off",
        )
        check(
            self.reference_pass_rates is None
            or (isinstance(self.reference_pass_rates, str) and bool(self.reference_pass_rates)),
            "reference_pass_rates must be a file path (frontier measure-references) or None",
        )
        _levels(self, "train")
        parse_given(self.given)  # raises a ValueError naming the choices
        check(
            isinstance(self.refresh_features_every, int) and self.refresh_features_every >= 0,
            "refresh_features_every must be an int >= 0 (0 = embed once), "
            f"got {self.refresh_features_every!r}",
        )
        check_choice("group_weighting", self.group_weighting, GROUP_WEIGHTINGS)
        check(
            isinstance(self.noise_every, int) and self.noise_every >= 0,
            f"noise_every must be an int >= 0 (0 = the noise meter off), got {self.noise_every!r}",
        )
        check(
            isinstance(self.noise_ema, (int, float)) and 0.0 <= self.noise_ema < 1.0,
            f"noise_ema must be a number in [0, 1) (0.9: the last ~10 metered steps), "
            f"got {self.noise_ema!r}",
        )
        self._check_batch_plan()
        self._check_sampler()
        self._check_backfill()
        self._check_wrap_counts()
        self._check_pad_rows()
        self._check_fewer_steps()
        self.step_plan()  # what the wraps and the run's end need of its sampler
        self._check_shadows()
        check(
            isinstance(self.eval_k, tuple)
            and len(self.eval_k) > 0
            and all(isinstance(k, int) and 1 <= k <= self.eval_samples for k in self.eval_k),
            f"eval_k must be a tuple of ints in [1, eval_samples={self.eval_samples}], "
            f"got {self.eval_k!r}",
        )
        check(
            isinstance(self.eval_every, int) and self.eval_every >= 0,
            f"eval_every must be an int >= 0 (0 = start and end only), got {self.eval_every!r}",
        )
        parse_grid(self.eval_grid)
        check(
            isinstance(self.threads, int) and self.threads >= 0,
            f"threads must be an int >= 0 (0 = torch default), got {self.threads!r}",
        )
        _device(self.device)
        check_choice("precision", self.precision, PRECISIONS)
        check(
            len({self.train_seed, self.eval_seed}) == 2,
            "train_seed and eval_seed must differ: the held-out split must be held out",
        )

    def _check_sampler(self) -> None:
        """The sampler's name and config, and what they need of this run's batch, groups and
        selector."""
        settings = self.sampler_settings()  # names the sampler, or the field, when wrong
        cls = SELECTORS.get(self.selector)  # None: a name the registry does not know yet
        kind_row(self.sampler).check_train(
            settings,
            batch_size=self.batch_size,
            group_size=self.group_size,
            selector=self.selector,
            walks=cls is None or cls.walks_windows(),
        )

    def _check_batch_plan(self) -> None:
        """The batch plan's choices and bounds (checked even while fixed), and with auto what
        it needs of the run (batch_auto.auto_refusal)."""
        check_choice("batch_plan", self.batch_plan, BATCH_PLANS)
        check_choice("batch_lr_rule", self.batch_lr_rule, BATCH_LR_RULES)
        check_choice("batch_start", self.batch_start, BATCH_STARTS)
        check_choice("plan_curve", self.plan_curve, PLAN_CURVES)
        check_choice("plan_noise", self.plan_noise, PLAN_NOISES)
        check(
            isinstance(self.batch_max, int) and self.batch_max >= 0,
            f"batch_max must be an int >= 0 (0 = the pool, train_size), got {self.batch_max!r}",
        )
        if self.batch_plan != "auto":
            return
        check(
            self.batch_max == 0 or self.batch_size <= self.batch_max <= self.train_size,
            f"batch_max ({self.batch_max}) must lie in [batch_size={self.batch_size}, "
            f"train_size={self.train_size}] (0 = the pool): batch_plan auto only grows the "
            "prompts a step",
        )
        why = auto_refusal(self)
        check(why is None, why or "")

    def _check_backfill(self) -> None:
        """The backfill mode and its bounds (checked even while off), and the sampler it needs."""
        check_choice("backfill", self.backfill, BACKFILL_MODES)
        for name in ("backfill_buffer", "backfill_max_age", "backfill_max_uses"):
            _pos_int(name, getattr(self, name))
        cap = self.backfill_is_cap
        check(
            isinstance(cap, (int, float)) and not isinstance(cap, bool) and 1.0 < cap < math.inf,
            f"backfill_is_cap must be a finite number > 1 (dual-clip PPO's c, e.g. 3), got {cap!r}",
        )
        eps = self.clip_eps
        if isinstance(eps, (int, float)) and not isinstance(eps, bool):
            # Below 1 + clip_eps the PPO clip binds first: the cap would never act.
            check(
                cap > 1.0 + eps,
                f"backfill_is_cap must exceed 1 + clip_eps = {1.0 + eps:g} (below it the PPO "
                f"clip binds first and the cap never acts), got {cap!r}",
            )
        # whether it may wrap this run's sampler is the plan's (_check_plan)

    def _check_wrap_counts(self) -> None:
        """The counts of rollouts the wraps add (rescue's, hard_groups'); the samplers whose
        groups they can extend are the plan's."""
        for name in ("rescue", "hard_groups"):
            n = getattr(self, name)
            check(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_GROUP_SIZE,
                f"{name} must be an int >= 0 (0 = off, e.g. 8 more rollouts; at most "
                f"{MAX_GROUP_SIZE}), got {n!r}",
            )

    def _screens(self) -> bool:
        """Whether the run's sampler splits each group in two rounds (FewerRollouts' screen)."""
        return self.sampler_spec().fact("splits_groups")

    def _check_pad_rows(self) -> None:
        """The padding mode, and the sampler whose steps roll out fewer than B prompts."""
        check_choice("pad_rows", self.pad_rows, PAD_ROWS)
        check(
            self.pad_rows != "buckets" or kind_row(self.sampler).fact("rolls_fewer"),
            f"pad_rows buckets pads the generation of a step that rolls out fewer than "
            f"batch_size prompts (sampler fewer_rollouts: --rollouts kept or --screen); sampler "
            f"{self.sampler!r} is never padded: set pad_rows auto or off",
        )

    def pads_rows(self, device_type: str) -> bool:
        """Whether this run's kept steps pad their generation on a `device_type` ('cpu',
        'cuda') device: buckets, or auto on CUDA with sampler fewer_rollouts."""
        if self.pad_rows == "auto":
            return device_type == "cuda" and kind_row(self.sampler).fact("rolls_fewer")
        return self.pad_rows == "buckets"

    def _check_fewer_steps(self) -> None:
        """fewer_steps needs a selector that walks the data, and whole plain-GRPO steps."""
        if not self.fewer_steps:
            return
        cls = SELECTORS.get(self.selector)
        clashes = {
            "selector": cls is not None and not cls.walks_windows(),
            "sampler": not kind_row(self.sampler).fact("plain"),
            "rescue": bool(self.rescue),
        }
        for clash, on in clashes.items():
            check(
                not on,
                FEWER_STEPS_REFUSALS[clash].format(
                    selector=self.selector, sampler=self.sampler, rescue=self.rescue
                ),
            )

    def passes(self) -> float:
        """The passes over the training pool uniform's `steps` steps walk (steps x batch_size /
        train_size): where a `fewer_steps` run ends."""
        return self.steps * self.batch_size / self.train_size

    def sampler_spec(self) -> SamplerSpec:
        """This run's step sampler: `sampler` and `sampler_config` as one spec."""
        return SamplerSpec.read(self.sampler, self.sampler_config)

    def sampler_settings(self) -> Any:
        """The config dataclass of this run's sampler (None for passthrough)."""
        return self.sampler_spec().config

    def shadow_configs(self) -> tuple[ShadowConfig, ...]:
        """The rules of `shadows`, parsed."""
        return tuple(shadow_config(text) for text in self.shadows)

    def _check_shadows(self) -> None:
        """Shadows and the reward log read each prompt's whole group, once per step."""
        partial = ["screen"] if self._screens() else []
        if not kind_row(self.sampler).fact("rescuable"):  # not one whole group of n a prompt
            partial = [self.sampler]
        check_shadow_rules(
            self.shadows,
            SELECTORS,
            group_size=self.group_size,
            group_name="group_size",
            partial=partial,
            example="e.g. --shadows screen4 beside a plain run",
        )
        check(
            not (self.reward_log and partial),
            f"reward_log reads each prompt's whole group of group_size once a step, which "
            f"{', '.join(partial)} does not roll out; log a run without it",
        )

    def rollout_sampling(self, samples: int | None = None) -> Sampling:
        """How this run draws completions: `samples` per prompt (default: group_size) at its
        max_new_tokens, temperature and top_p."""
        n = self.group_size if samples is None else samples
        return Sampling(n, self.max_new_tokens, self.temperature, self.top_p)

    def eval_sampling(self) -> Sampling:
        """How held-out tasks are sampled: eval_samples per task, as the rollouts are drawn."""
        return self.rollout_sampling(self.eval_samples)

    def step_plan(self) -> StepPlan:
        """This run's step: its sampler, inside HardGroups with `hard_groups: N`, inside Rescue
        with `rescue: N`, inside Backfill with
        `backfill: replay` (it replays the groups as trained, rescued ones joined), ended by
        its passes with `fewer_steps`, its rows batch_size prompts x group_size rollouts (what
        the trainer reads its step's size from); ValueError naming a wrap its sampler cannot
        take."""
        wraps = []
        if self.hard_groups:
            wraps.append(Wrap.of("hard_groups", extra=self.hard_groups))
        if self.rescue:
            wraps.append(Wrap.of("rescue", extra=self.rescue))
        if self.backfill == "replay":
            wraps.append(
                Wrap.of(
                    "backfill",
                    capacity=self.backfill_buffer,
                    max_age=self.backfill_max_age,
                    max_uses=self.backfill_max_uses,
                )
            )
        ends_by = "passes" if self.fewer_steps else "steps"
        rows = StepRows(self.batch_size, self.group_size)  # one call of B prompts x n a step
        return StepPlan(self.sampler_spec(), tuple(wraps), ends_by, rows=rows)

    def step_sampler(self, selector: Selector) -> Sampler:
        """The step sampler of this run's plan around `selector` (`step_plan`)."""
        return self.step_plan().build(selector, seed=self.seed)


def train_config(raw: Mapping[str, Any]) -> TrainConfig:
    """A TrainConfig from a dict as run.json, spec.json or a checkpoint holds it: JSON lists
    become tuples, and the flat sampler fields of runs written before `sampler` become
    sampler and sampler_config (sampling/sampler_flags.py)."""
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    return TrainConfig(**legacy_train_fields(fields))


def replace_config(config: Any, **changes: Any) -> Any:
    """dataclasses.replace that re-runs validation (frozen configs are rebuilt)."""
    return dataclasses.replace(config, **changes)
