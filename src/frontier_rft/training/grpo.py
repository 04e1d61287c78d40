"""The reference trainer: group rollouts, verifier rewards, group advantages, clipped loss.

One step, top to bottom (`Trainer.step`: `_collect`, `_train`, then `step_metrics`):

1. the sampler (frontier_rft.sampling: PassThrough, DAPO's DynamicSampling, the rollout
   Allocation, FewerRollouts or PilotCommit; the same object the simulator drives, where it
   has one) runs the step's rounds: the selector
   chooses task ids (METIS: the policy judges m*B candidates first), the policy samples n
   completions per prompt (Allocation: n_k for prompt k) with `model.generate`, the
   verifier scores every completion, and the selector receives every reward as
   `Feedback`; it returns the groups to train on, each whole with its completions (the
   payload each rollout carried through the sampler: `sampling.step.Rolled`; a Pilot-Commit
   pilot's from the sampler's store) (with `rescue: N` the sampler is wrapped in Rescue: an
   all-wrong one of a prompt never solved gets N more rollouts, joined when one is correct:
   sampling/rescue.py; with `backfill: replay` in Backfill: a kept step's freed slots get
   replayed informative groups of earlier steps, sampling/backfill.py, which the update
   scores against their behaviour log-probs and to which it hands the fresh rows' back:
   training/backfill.py);
   with `pad_rows` a kept step's generation is padded to a few batch shapes and the padding
   rows dropped before scoring (training/pad_rows.py);
2. advantages per group of any size: GRPO (std-normalised), Dr.GRPO (centred) or RLOO
   (leave-one-out), from `frontier_rft.core.advantages` (the same definitions the selectors
   use); groups of different sizes weigh one prompt each in the loss (`row_weights`);
3. the update (training/policy_update.py): loss (training/policy_loss.py) = clipped
   surrogate + kl_coef * KL(k3, to the frozen start model) - entropy_coef * entropy
   (+ lam * METIS judge loss); AdamW step; `ppo_epochs` passes;
   a step that trains G of its B groups under FewerRollouts' `loss_scale: batch` scales the
   surrogate alone by G/B (the skipped groups count as zero-advantage groups); the KL and
   entropy terms stay the trained rows' means (the skipped groups count at the kept ones'
   mean: the KL pull keeps uniform's size, not its value, since the skip is not blind to
   the KL: the skipped groups had more KL per token, 0.030 to 0.023;
   benchmarks/results/kept_kl.md);
4. metrics (training/step_metrics.py) to JSONL/TensorBoard; checkpoints (model,
   optimizer, selector, RNG) atomically; with `batch_plan: auto` the batch planner sets the
   next steps' prompts and lr after a metered step (training/batch_auto.py).

With `ppo_epochs = 1` the batch is used once, pi_old = pi and the ratio is exactly 1, so the
loss gradient is the vanilla policy gradient; with more epochs clipping becomes active.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from frontier_rft import SELECTORS, make_selector
from frontier_rft.core.advantages import group_advantages
from frontier_rft.core.pool import TaskPool
from frontier_rft.features.derive import relabel_evidence
from frontier_rft.features.policy import policy_embeddings
from frontier_rft.lm.device import autocast, resolve_device
from frontier_rft.lm.model_io import load_lm, save_lm
from frontier_rft.lm.rollout import (
    encode_prompts,
    generate_completions,
)
from frontier_rft.metrics_log import MetricsSink, curriculum_metrics
from frontier_rft.sampling.filtered_batch import FilteredBatch
from frontier_rft.sampling.sampler_file import saved_sampler_state
from frontier_rft.sampling.sampler_flags import legacy_train_fields
from frontier_rft.sampling.step import Rolled, Sampler
from frontier_rft.sampling.step_plan import StepPlan
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.replay import REWARD_LOG, reward_record
from frontier_rft.tasks.suite import heldout_split, load_task, train_split
from frontier_rft.training.backfill import ReplayRows, replay_metrics
from frontier_rft.training.batch_auto import BatchAuto
from frontier_rft.training.checkpoint import (
    SHADOW_FILE,
    damaged,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from frontier_rft.training.config import TrainConfig
from frontier_rft.training.eval_grid import GridEvaluations
from frontier_rft.training.evaluate import EvalResult, evaluate_items, write_eval
from frontier_rft.training.given import build_given_pool, parse_given
from frontier_rft.training.metis_judge_training import PolicyJudge
from frontier_rft.training.noise_meter import NoiseMeter
from frontier_rft.training.pad_rows import EndRows, padding
from frontier_rft.training.policy_loss import row_weights
from frontier_rft.training.policy_update import PolicyUpdate
from frontier_rft.training.references import load_references
from frontier_rft.training.run_files import (
    check_refresh,
    check_resume_steps,
    check_resumed_selector,
    check_same_run,
    has_tensorboard,
    jsonable_config,
    progress_line,
    trained_tasks_mask,
    truncate_logs,
)
from frontier_rft.training.run_info import read_run_info, write_run_info
from frontier_rft.training.step_batch import StepBatch
from frontier_rft.training.step_metrics import (
    Collected,
    Group,
    Trained,
    step_metrics,
    wrap_tokens,
)

__all__ = ["StepBatch", "Trainer"]

_log = logging.getLogger(__name__)


class Trainer:
    """GRPO-family trainer over one task pool; the selector decides every batch."""

    def __init__(
        self,
        config: TrainConfig,
        model_dir: str | os.PathLike[str],
        run_dir: str | os.PathLike[str],
        *,
        resume: bool = False,
        log: Callable[[str], None] = _log.info,
        progress: bool = False,
    ):
        """A fresh run from `model_dir` into `run_dir`, or with `resume` the run `run_dir`
        holds, continued from its latest checkpoint (`_start` and `_resume`)."""
        self.config = config
        self.run_dir = Path(run_dir)
        self.model_dir = Path(model_dir)
        self.log = log
        self.progress = progress
        """Progress bars (stderr) for the held-out evaluations and the self-embeddings."""
        cfg = config
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.device = resolve_device(cfg.device)
        self.pad_rows = cfg.pads_rows(self.device.type)
        """pad_rows resolved on this device: kept steps generate padded to a few shapes."""
        ckpt = latest_checkpoint(self.run_dir / "checkpoints") if resume else None
        if resume and ckpt is None:
            raise ValueError(f"--resume: no checkpoint under {self.run_dir / 'checkpoints'}")
        if not resume and (self.run_dir / "checkpoints" / "latest").exists():
            raise ValueError(
                f"{self.run_dir} already holds a run; pass --resume to continue it "
                "or choose another --out"
            )
        torch.manual_seed(cfg.seed)
        self.suite = load_task(cfg.task, cfg.format_reward)
        self.items = train_split(self.suite, cfg.train_size, cfg.train_seed, cfg.levels)
        self.eval_items = heldout_split(self.suite, cfg.eval_size, cfg.eval_seed, cfg.levels)
        references = None
        if cfg.reference_pass_rates is not None:  # read on resume too: a missing file is named
            references = load_references(cfg.reference_pass_rates, self.items)
        self.num_levels = len(cfg.levels.split(","))
        self.given = parse_given(cfg.given)
        self.embed_seconds = 0.0
        """Wall time spent computing policy self-embeddings (start and refreshes)."""
        self.pool: TaskPool | None = None
        """The fresh run's pool; on resume the selector file holds its pool (refreshed
        features included)."""
        self.step_count = 0
        self.last: dict[str, Any] = {}
        """The latest step's selected ids, rewards, advantages and METIS judge records."""
        self.rollouts = 0
        """Rollouts generated so far (DAPO generates more than batch_size * group_size)."""
        self.trained_tasks: np.ndarray | None = np.zeros(len(self.items), dtype=np.bool_)
        """Prompts whose group had mixed rewards and reached the loss at least once; None
        after resuming from a checkpoint that predates the record (the count is unknown)."""
        self.shadows: RunShadows
        """Rules followed beside the run (config.shadows): their own selectors and RNGs,
        never the run's, so training is the same with and without them."""
        self.plan: StepPlan
        """The run's step, decided once (TrainConfig.step_plan): the sampler, its wraps, how the
        run ends and the step's rows, which every step reads its size from."""
        self.sampler: Sampler
        """The step sampler the plan builds around the selector (its wraps included): what
        every step calls for its rounds and the groups it trains."""
        self.grid = (
            GridEvaluations(cfg.eval_grid, pool_size=len(self.items), length=cfg.max_new_tokens)
            if cfg.eval_grid
            else None
        )
        """eval_grid: the evaluations on a grid of cost (training.eval_grid); None when off."""
        self.noise = NoiseMeter(cfg.noise_every, cfg.noise_ema, cfg.update_rows)
        """The gradient noise meter (noise_every; training/noise_meter.py): measures, never
        trains; its smoothed state is saved with the checkpoint."""
        self.batcher = BatchAuto(cfg)
        """batch_plan: the prompts a step and lr factor now, which auto's plans move."""
        if ckpt is None:
            self._start(references)
        else:
            self._resume(ckpt)
        self.plan = self.batcher.apply(self.plan, self.optimizer)  # auto: the planned step
        self.lam = float(getattr(self.selector.config, "judge_loss_weight", 0.0))
        self._write_run_info(check=ckpt is not None)
        tb = self.run_dir / "tb" if cfg.tensorboard and has_tensorboard(log) else None
        # Resumed: TensorBoard forgets the steps after the checkpoint, as metrics.jsonl did.
        purge = self.step_count + 1 if ckpt is not None else None
        self.sink = MetricsSink(
            self.run_dir / "metrics.jsonl", tensorboard_dir=tb, purge_step=purge
        )

    def _start(self, references: Any) -> None:
        """The fresh start: the policy from model_dir, the pool built from what is given
        (self-embeddings from that policy), a new selector, sampler and shadows, and a run
        directory cleared of an earlier run's logs."""
        cfg = self.config
        self.model, self.tokenizer = load_lm(self.model_dir)
        self._place_policy()
        self.pool = pool = build_given_pool(
            self.items,
            self.suite.pool_extras(self.items),
            self.given,
            references=references,
            embed=self._embed,
        )
        collaborators = self._build_learner()
        self.selector = make_selector(
            cfg.selector, pool, seed=cfg.seed, **collaborators, **cfg.selector_overrides
        )
        self.sampler = self._sampler(None)
        self._name_policy_features()
        check_refresh(cfg, self.given, self.selector.evidence)
        self.shadows = RunShadows(cfg.shadow_configs(), self.selector, cfg.seed)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "metrics.jsonl").unlink(missing_ok=True)
        (self.run_dir / REWARD_LOG).unlink(missing_ok=True)
        shutil.rmtree(self.run_dir / "tb", ignore_errors=True)

    def _resume(self, ckpt: Path) -> None:
        """The resume path: the policy, optimizer, selector (its pool inside), sampler,
        counters, pilots and shadows exactly as `ckpt` saved them; the logs cut back to it."""
        with damaged(ckpt / "model"):
            self.model, self.tokenizer = load_lm(ckpt / "model")
        self._place_policy()
        collaborators = self._build_learner()
        self.selector, state = load_checkpoint(ckpt, self.optimizer, **collaborators)
        check_resumed_selector(self.selector, self.config, [it.prompt for it in self.items], ckpt)
        for key, what in (
            ("rescue_solved", "rescue's solved prompts"),
            ("backfill", "backfill's replay buffer"),
        ):
            if state.get(key) is not None:  # the sampler's state holds it now
                raise ValueError(
                    f"{ckpt} keeps {what} in trainer.json, as an earlier frontier_rft wrote "
                    "them; this one keeps them in the sampler's state: finish the run with "
                    "the frontier_rft that began it, or start a new --out"
                )
        self.sampler = self._sampler(ckpt)
        self._name_policy_features()
        self.step_count = state["step"]
        check_resume_steps(self.config, self.step_count, self.run_dir, self.passes_done())
        if state.get("pilot_completions"):  # the sampler's store holds them now
            raise ValueError(
                f"{ckpt} keeps Pilot-Commit's buffered completions in trainer.json, as an "
                "earlier frontier_rft wrote them; this one keeps them in the sampler's state: "
                "finish the run with the frontier_rft that began it, or start a new --out"
            )
        with damaged(ckpt / "trainer.json"):
            self.rollouts = int(state.get("rollouts", 0))
            self.embed_seconds = float(state.get("embed_seconds", 0.0))
            self.trained_tasks = trained_tasks_mask(state.get("trained_tasks"), len(self.items))
            if self.grid is not None:
                self.grid.clock.load_state_dict(state.get("eval_clock") or {})
            self.noise.load_state_dict(state.get("noise_meter"))
            self.batcher.load_state_dict(state.get("batch_plan"))
            if state.get("dapo_stash"):  # written by a frontier_rft that trained stale groups
                raise ValueError(
                    f"{ckpt} holds surplus groups of an earlier step; this frontier_rft "
                    "never trains those (no old log-probs are kept): start a new --out"
                )
        truncate_logs(self.run_dir, self.step_count, self.log)
        self.shadows = RunShadows(self.config.shadow_configs(), self.selector, self.config.seed)
        self.shadows.shadows = self.shadows.load(ckpt, SHADOW_FILE)
        self.log(f"resumed {self.run_dir} at step {self.step_count} from {ckpt.name}")

    def _place_policy(self) -> None:
        """The loaded policy on the device in training mode, and the pool's prompts encoded."""
        self.model.to(self.device).train()
        self.prompt_ids = encode_prompts(self.tokenizer, [it.prompt for it in self.items])

    def _build_learner(self) -> dict[str, Any]:
        """The frozen reference model (KL), METIS's policy judge and the optimizer, built in
        this order on both paths; the selector's collaborators (the judge) returned."""
        cfg = self.config
        self.ref_model = None
        if cfg.kl_coef > 0:  # frozen start model for the KL term
            self.ref_model, _ = load_lm(self.model_dir)
            self.ref_model.to(self.device).eval().requires_grad_(False)
        self.judge: PolicyJudge | None = None
        collaborators: dict[str, Any] = {}
        if "judge" in SELECTORS[cfg.selector].collaborators:  # the policy judges (METIS)
            self.judge = PolicyJudge(
                self.model,
                self.tokenizer,
                cfg.judge_max_new_tokens,
                cfg.judge_temperature,
                top_p=cfg.top_p,
                constrained=cfg.judge_constrained,
            )
            collaborators["judge"] = self.judge
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
        )
        return collaborators

    # ------------------------------------------------------------------ one step
    def step(self) -> dict[str, float]:
        """One step, as CleanRL's loop reads: collect (the sampler's rounds, whole groups),
        advantages, batch and update (`_train`), then the step's metrics."""
        started = time.perf_counter(), time.process_time()
        got = self._collect()
        trained = self._train(got)
        if self.trained_tasks is not None:  # the selector counts mixed groups rolled out;
            # dynamic sampling rolls out more than it trains, so the trainer counts its own
            self.trained_tasks[[g.task for g in got.train if np.ptp(g.rewards) > 0]] = True
        embed_s = self._maybe_refresh_features()
        self.rollouts += got.samples.rollouts
        self.last = {
            "ids": got.sampled.task_ids,
            "rewards": np.concatenate([g.rewards for g in got.groups]),
            "advantages": trained.advantages,
            "records": got.records,
        }
        metrics = step_metrics(
            got,
            trained,
            estimator=self.config.estimator,
            rollouts_total=self.rollouts,
            distinct_trained=None if self.trained_tasks is None else int(self.trained_tasks.sum()),
            sampler_metrics=self.sampler.metrics(),
            started=started,
        )
        metrics.update(self._more_metrics(got, embed_s))
        # batch_plan auto: plan/..., from the smoothed terms in the geometry plan_noise names
        metrics.update(self.batcher.after_step(self.noise.smoothed(self.config.plan_noise)))
        self.plan = self.batcher.apply(self.plan, self.optimizer)
        self.step_count += 1
        return metrics

    def _collect(self) -> Collected:
        """The step's rollouts: the sampler's rounds (and its wrappers', rescue's), each group
        whole with its completions (the payloads it carried through the sampler), and their
        cost."""
        rows = self.plan.shape()  # the step's size, decided once in its plan
        n = rows.group_size()
        seconds_spent, padded_rows = [0.0], [0]  # what generation cost, call by call
        calls: list[tuple[int, int, float]] = []

        def rollout(ids: np.ndarray, counts: np.ndarray | None = None) -> Rolled:
            sizes = np.full(ids.shape[0], n) if counts is None else np.asarray(counts)
            completions, rewards, seconds, padded = self._rollout(ids, sizes)
            seconds_spent[0] += seconds
            padded_rows[0] += padded
            # the call's shape: its rows (padding's, which end at once, too) and decode steps
            # (its longest completion: a padded row's is one token)
            decode_steps = max(map(len, completions), default=0)
            calls.append((len(completions) + padded, decode_steps, seconds))
            ends = np.cumsum(sizes).tolist()
            starts = [0, *ends[:-1]]
            # each group's completions travel with it through the sampler (its payload)
            return Rolled(rewards, [completions[a:b] for a, b in zip(starts, ends, strict=True)])

        with self._amp():  # METIS's judge generates inside select
            samples = self.sampler.sample(self.step_count, rows.batch, n, rollout)
        sampled = samples.sampled  # the sampler's own rounds, before rescue's
        records = self.selector.pop_judge_records() if self.judge is not None else []
        train = self._whole(samples.train)
        fresh = len(train) - samples.replayed  # backfill's replayed groups come last
        return Collected(
            samples=samples,
            sampled=sampled,
            train=train[:fresh],
            replayed=train[fresh:],
            groups=self._whole(sampled.groups()),  # every group rolled out, whole
            records=records,
            generate_s=seconds_spent[0],
            padded_rows=padded_rows[0],
            calls=calls,
        )

    def _train(self, got: Collected) -> Trained:
        """Advantages of the trained groups (backfill's replayed ones after them, as at their
        own step), the batch and the policy update on it; backfill told the fresh rows'
        log-probs after it."""
        cfg, groups = self.config, got.train
        start = time.perf_counter()
        rows = [*groups, *got.replayed]
        advantages = np.zeros(0)
        if rows:
            rewards = np.concatenate([g.rewards for g in rows])
            offsets = np.cumsum([0] + [len(g.rewards) for g in rows])
            advantages = group_advantages(rewards, offsets, cfg.estimator)
        fresh_rows = sum(len(g.completions) for g in groups)
        # FewerRollouts: the surrogate normalised by uniform's B (replayed groups count as fresh)
        scale = got.samples.loss_scale
        parts: dict[str, float] = {}
        replay: ReplayRows | None = None
        if rows:
            if self.sampler.replays:  # backfill: replayed rows against their behaviour
                behaviour = list(got.samples.behaviour)
                replay = ReplayRows(fresh_rows, behaviour, cfg.backfill_is_cap, cfg.clip_eps)
            weights = row_weights([len(g.completions) for g in rows], cfg.group_weighting)
            batch = StepBatch(
                prompts=[g.prompt for g in rows for _ in g.completions],
                completions=[c for g in rows for c in g.completions],
                advantages=self._tensor(advantages),
                row_weights=None if weights is None else self._tensor(weights),
                loss_scale=scale,
                judge_records=got.records,
                replay=replay,
                group_sizes=[len(g.completions) for g in rows],
            )
            parts = self._update(batch)
        if self.sampler.replays:  # the fresh rows' log-probs handed back, held after the step
            parts.update(replay_metrics(replay, len(got.replayed)))
            lengths = [len(c) for g in groups for c in g.completions]
            handed = replay.fresh_behaviour(lengths) if replay is not None else []
            parts.update(self.sampler.trained(handed))
        fresh = advantages[:fresh_rows]
        update_s = time.perf_counter() - start - parts.get("perf/noise_s", 0.0)  # meter apart
        return Trained(fresh, scale, parts, update_s)

    def _tensor(self, values: np.ndarray) -> torch.Tensor:
        """Per-row float32 values on the policy's device."""
        return torch.tensor(values, dtype=torch.float32, device=self.device)

    def _more_metrics(self, got: Collected, embed_s: float) -> dict[str, float]:
        """The step's metrics beyond `step_metrics`: rescue's, the shadows', the levels drawn,
        and what only some runs report (refreshes, padding, passes walked, GPU memory)."""
        out: dict[str, float] = {}
        out.update(got.samples.wrap_metrics)  # rescue/..., hard_groups/..., backfill/...
        out.update(wrap_tokens(self.sampler, got.samples))
        out.update(self._shadow_step(got.groups))
        levels = np.array([self.items[g.task].level for g in got.groups])
        out["train/selected_level_mean"] = float(levels.mean())
        for level in range(self.num_levels):
            out[f"train/selected_level{level}_share"] = float(np.mean(levels == level))
        if embed_s:
            out["perf/embed_s"] = embed_s
        if self.pad_rows:  # in no other count: never scored, trained or logged
            out["train/padded_rows"] = float(got.padded_rows)
        if self.config.fewer_steps:  # how far the run's passes have come (where it ends)
            out["train/passes_walked"] = self.selector.passes_walked()
        if self.device.type == "cuda":  # what the parallel runs of one GPU must fit into
            out["perf/gpu_peak_gb"] = torch.cuda.max_memory_reserved(self.device) / 2**30
        return out

    def _whole(self, batch: FilteredBatch) -> list[Group]:
        """The groups of `batch` with their completions, each whole: its parts' payloads
        (a pilot and its commit, a group and its rescue) joined in order."""
        if batch.from_surplus.any():  # the sampler is built with max_surplus 0 (see _sampler)
            raise RuntimeError("the trainer got a surplus group of an earlier step to train on")
        out = []
        for g in range(batch.num_groups):
            parts = batch.payload_parts(g)
            if any(part is None for part in parts):
                raise RuntimeError(f"no completions kept for a part of group {g}")
            task, a, b = int(batch.task_ids[g]), batch.offsets[g], batch.offsets[g + 1]
            completions = [c for part in parts for c in part]
            out.append(Group(task, self.prompt_ids[task], completions, batch.rewards[a:b]))
        return out

    def _shadow_step(self, groups: Sequence[Group]) -> dict[str, float]:
        """Feed this step's groups (whole, config-checked), with their completions' generated
        tokens, to the shadows and the reward log; their metrics as
        curriculum/shadow/<rule>/..."""
        cfg = self.config
        if not self.shadows.shadows and not cfg.reward_log:
            return {}
        ids = np.array([g.task for g in groups], dtype=np.int64)
        rewards = np.stack([g.rewards for g in groups])
        lengths = np.array([[len(c) for c in g.completions] for g in groups], dtype=np.int64)
        if cfg.reward_log:
            line = reward_record(self.step_count, len(self.items), cfg.seed, ids, rewards, lengths)
            with open(self.run_dir / REWARD_LOG, "a", encoding="utf-8") as fh:
                fh.write(line)
        n = self.plan.shape().group_size()  # a step's groups with shadows: each of n
        self.shadows.observe(
            self.step_count, np.repeat(ids, n), rewards.reshape(-1), n, lengths.reshape(-1)
        )
        return curriculum_metrics(self.shadows.metrics(), "all")

    def _rollout(
        self, ids: np.ndarray, counts: np.ndarray
    ) -> tuple[list[list[int]], np.ndarray, float, int]:
        """counts[i] completions of each selected task and their rewards (prompt-major), the
        generation's seconds and the padding rows it generated.

        With pad_rows the call generates padded up to its bucket (training/pad_rows.py): the
        padding rows come after the real ones, end at their first token, and are dropped
        here, before anything scores or counts them."""
        cfg = self.config
        prompts = [self.prompt_ids[i] for i in ids.tolist()]
        t_gen = time.perf_counter()
        sizes = [int(c) for c in counts]
        real = sum(sizes)
        pad = padding(sizes, self.plan.shape().batch) if self.pad_rows else []
        gen_prompts = prompts + [prompts[j % len(prompts)] for j in range(len(pad))]
        gen_sizes = sizes + pad
        processors = [EndRows(real, self._eos())] if pad else []
        with self._amp():  # one n for all keeps generate's own path (bitwise as before)
            completions = generate_completions(
                self.model,
                gen_prompts,
                gen_sizes[0] if len(set(gen_sizes)) == 1 else gen_sizes,
                cfg.max_new_tokens,
                cfg.temperature,
                logits_processor=processors,
                top_p=cfg.top_p,
            )[:real]
        gen_s = time.perf_counter() - t_gen
        texts = self.tokenizer.batch_decode(completions, skip_special_tokens=True)
        task_of = np.repeat(ids, counts)
        rewards = np.array(
            [
                self.suite.verifier.score(self.items[t], s)
                for t, s in zip(task_of, texts, strict=True)
            ],
            dtype=np.float64,
        )
        return completions, rewards, gen_s, sum(pad)

    def _eos(self) -> int:
        """The token a padding row ends with: the one generation cuts completions at."""
        eos = self.model.generation_config.eos_token_id
        return int(eos[0] if isinstance(eos, (list, tuple)) else eos)

    def _embed(self) -> np.ndarray:
        """Policy self-embeddings of the pool's chat-templated prompts (timed)."""
        t0 = time.perf_counter()
        texts = [self.tokenizer.decode(ids) for ids in self.prompt_ids]
        with self._amp():
            emb = policy_embeddings(
                self.model, self.tokenizer, texts, batch_size=64, progress=self.progress
            )
        self.embed_seconds += time.perf_counter() - t0
        return emb

    def _amp(self) -> Any:
        """The forward-pass context of config.precision (bf16 autocast, or nothing)."""
        return autocast(self.device, self.config.precision)

    def _maybe_refresh_features(self) -> float:
        """Every `refresh_features_every` steps, re-embed the pool with the current policy."""
        every = self.config.refresh_features_every
        if not every or "self" not in self.given or (self.step_count + 1) % every:
            return 0.0
        before = self.embed_seconds
        features = self._embed()
        self.selector.refresh_features(features)
        for shadow in self.shadows.shadows:  # a shadow reads what the run's selector reads
            if shadow.selector is not None:
                shadow.selector.refresh_features(features)
        return self.embed_seconds - before

    def _update(self, batch: StepBatch) -> dict[str, float]:
        """The policy update on one step's batch (training/policy_update.py); its loss metrics."""
        return PolicyUpdate(
            model=self.model,
            optimizer=self.optimizer,
            ref_model=self.ref_model,
            config=self.config,
            noise=self.noise,
            amp=self._amp,
            judge=self.judge,
            lam=self.lam,
        ).run(batch, self.step_count)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, model: Any = None, step: int | None = None) -> EvalResult:
        """Held-out pass@k and score of the policy (or of `model`, a kept copy of it at
        `step`); sampling seeded apart from the training RNG."""
        cfg = self.config
        gpus = [self.device.index] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=gpus), self._amp():  # training RNG untouched
            torch.manual_seed(cfg.eval_seed)
            return evaluate_items(
                self.model if model is None else model,
                self.tokenizer,
                self.eval_items,
                self.suite.verifier,
                cfg.eval_sampling(),
                ks=cfg.eval_k,
                progress=self.progress,
                desc=f"eval step {self.step_count if step is None else step}",
                leave=False,
            )

    # ------------------------------------------------------------------ loop
    def train(self, steps: int | None = None) -> dict[str, float]:
        """Run until `steps` (default config.steps) total steps; returns the final eval summary."""
        cfg = self.config
        total = cfg.steps if steps is None else steps
        if self.step_count == 0:
            self._log_eval(self.evaluate())
        while self.step_count < total and not self.passes_done():
            if self.grid is not None:
                self.grid.before_step(self.model)
            metrics = self.step()
            if self.grid is not None:  # a spanned point's state, logged before the step's row
                self.grid.after_step(metrics, self.step_count, self._evaluate_at)
            self.sink.log(metrics, self.step_count)
            self.log(progress_line(self.step_count, total, metrics))
            last = self.step_count == total or self.passes_done()
            due_eval = cfg.eval_every and self.step_count % cfg.eval_every == 0
            if due_eval and not last:
                self._log_eval(self.evaluate())
            if self.step_count % cfg.checkpoint_every == 0 or last:
                self.save()
        if cfg.fewer_steps:
            self.log(
                f"fewer_steps: {self.selector.passes_walked():.2f} passes over the prompts in "
                f"{self.step_count} steps (uniform's: {cfg.passes():.2f} in {cfg.steps})"
            )
        result = self.evaluate()
        summary = self._log_eval(result)
        if line := self.selector.run_summary():  # e.g. skip-audit's estimate of its loss
            self.log(line)
        write_eval(result, self.run_dir, step=self.step_count, selector=cfg.selector)
        save_lm(
            self.model,
            self.tokenizer,
            self.run_dir / "final",
            stage="rl",
            selector=cfg.selector,
            steps=self.step_count,
        )
        self.sink.close()
        return summary

    def _evaluate_at(self, model: Any, step: int) -> None:
        self._log_eval(self.evaluate(model, step), step)

    def passes_done(self) -> bool:
        """A `fewer_steps` run's end: its selector has walked uniform's passes (False for a
        run set by steps). The small tolerance absorbs float rounding of the walk's share."""
        cfg = self.config
        return cfg.fewer_steps and self.selector.passes_walked() >= cfg.passes() - 1e-9

    def _log_eval(self, result: EvalResult, step: int | None = None) -> dict[str, float]:
        step = self.step_count if step is None else step
        summary = result.summary()
        self.sink.log(summary, step)
        if self.grid is not None:
            self.grid.clock.evaluated_step = step
        self.log(
            f"eval step {step}: score {summary['eval/mean_score']:.3f}  "
            + "  ".join(f"pass@{k} {v:.3f}" for k, v in sorted(result.pass_at.items()))
        )
        return summary

    def save(self) -> Path:
        """Atomic checkpoint of model, optimizer, selector, RNG states and step."""
        return save_checkpoint(
            self.run_dir / "checkpoints",
            self.step_count,
            self.model,
            self.tokenizer,
            self.optimizer,
            self.selector,
            {
                "config": jsonable_config(self.config),
                "rollouts": self.rollouts,
                "embed_seconds": self.embed_seconds,
                "trained_tasks": (
                    None
                    if self.trained_tasks is None
                    else np.flatnonzero(self.trained_tasks).tolist()
                ),
                "eval_clock": None if self.grid is None else self.grid.clock.state_dict(),
                "noise_meter": self.noise.state_dict(),
                "batch_plan": self.batcher.state_dict(),
            },
            keep=self.config.keep_checkpoints,
            sampler=self.sampler,
            shadows=self.shadows.shadows,
        )

    def _sampler(self, ckpt: Path | None) -> Sampler:
        """The step sampler the config asks for around the selector (inside Rescue with
        `rescue: N`, inside Backfill with `backfill: replay`: TrainConfig.step_sampler),
        restored from `ckpt` when resuming (refused, in one line, if the checkpoint's is
        another or set otherwise).

        Dynamic sampling never carries surplus groups here (max_surplus 0): training a group
        of an earlier step needs the log-probs of the policy that sampled it, which this
        trainer does not keep (docs/selectors/dapo.md)."""
        self.plan = self.config.step_plan()
        sampler = self.plan.build(self.selector, seed=self.config.seed)
        if ckpt is not None:
            fix = "resume with the saved settings, or start a new --out"
            state = saved_sampler_state(ckpt, sampler, fix)
            if state is not None:
                sampler.load_state_dict(state)
        return sampler

    def _name_policy_features(self) -> None:
        """Features given as the policy's self-embeddings are reported as such (evidence
        source 'policy', as the TRL and verl adapters do), not as user-given ones."""
        if "self" in self.given and "task_features" not in self.given:
            relabel_evidence(self.selector.evidence, "policy")

    def _write_run_info(self, check: bool) -> None:
        info = {
            "config": jsonable_config(self.config),
            "model_dir": str(self.model_dir),
            "train_tasks": len(self.items),
            "eval_tasks": len(self.eval_items),
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "given": list(self.given),
            "evidence": dict(getattr(self.selector, "evidence", {})),
            "embed_seconds": round(self.embed_seconds, 3),
        }
        path = self.run_dir / "run.json"
        if check and path.exists():
            saved = legacy_train_fields(read_run_info(path)["config"])  # an older run's too
            check_same_run(saved, info["config"])
        write_run_info(path, info)
