"""Drive SkyRL's real RayPPOTrainer.train() with a frontier-rft selector, on a CPU.

Real: SkyRL's train loop, its PromptDataset (from a JSON-lines file), prepare_generator_input,
generate() and its output checks, dynamic sampling, postprocess_generator_output,
save_checkpoints and load_checkpoints (data.pt, trainer_state.pt), and the adapter's
dataloader. Stood in for, as in SkyRL's own CPU test (tests/train/test_rl_callbacks.py): the
generator (seeded Bernoulli(p) rewards from each prompt's known pass rate p), the tokenizer,
the policy workers (dispatch, forward passes, advantages, updates) and the per-node checkpoint
clean-up (a Ray task). So these tests prove selection, feedback and resume, not learning.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import numpy as np
import pytest
import torch

# Ray must not start (nothing here needs it); if something did start it, keep it local.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("RAY_TMPDIR", str(Path(__file__).resolve().parents[1] / ".ray_tmp"))

# First: it imports SkyRL's one module that needs a shim on Python 3.11 (see its docstring).
from frontier_rft.integrations.skyrl.trainer import FrontierRayPPOTrainer  # isort: split

from skyrl.backends.skyrl_train.training_batch import TrainingInputBatch
from skyrl.train.config import (
    AlgorithmConfig,
    DataConfig,
    DataLoaderConfig,
    GeneratorConfig,
    InferenceEngineConfig,
    SamplingParams,
    SkyRLTrainConfig,
    TrainerConfig,
)
from skyrl.train.dataset import PromptDataset

from frontier_rft.integrations.skyrl.config import skyrl_sampler_config

N_PROMPTS = 32
BATCH = 4
N_SAMPLES = 4
SEED = 7


def pass_rates() -> np.ndarray:
    """32 known pass rates: 8 never solved, 8 always solved, 16 in between, shuffled."""
    p = np.concatenate([np.zeros(8), np.ones(8), np.linspace(0.3, 0.7, 16)])
    return np.random.default_rng(0).permutation(p)


def task_ids() -> np.ndarray:
    """Stable ids that are not the row positions (the adapter must map them)."""
    return 1000 + 7 * np.arange(N_PROMPTS)


class FakeTokenizer:
    """What PromptDataset's length filter and SkyRL's loop call on a tokenizer."""

    pad_token_id = 0
    eos_token_id = 2

    def apply_chat_template(self, messages: Any, **_: Any) -> list[int]:
        return [1, 2, 3]

    def decode(self, ids: Any, **_: Any) -> str:
        return "response"


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    with path.open("w") as f:
        for i, (tid, p) in enumerate(zip(task_ids(), pass_rates(), strict=True)):
            row = {
                "prompt": [{"role": "user", "content": f"question {i}"}],
                "index": int(tid),
                "p": float(p),
            }
            f.write(json.dumps(row) + "\n")
    return path


class BernoulliGenerator:
    """SkyRL's generator stood in for: each rollout's reward is Bernoulli(p) of its prompt,
    seeded by (global step, round in the step, task, repetition), so a resumed run draws the
    same rewards as an uninterrupted one. Records every call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def generate(self, gi: dict[str, Any]) -> dict[str, Any]:
        step = gi["batch_metadata"].global_step
        rnd = sum(1 for c in self.calls if c["step"] == step)
        rollouts = []
        for extras, tid in zip(gi["env_extras"], gi["trajectory_ids"], strict=True):
            rng = np.random.default_rng([SEED, step, rnd, extras["index"], tid.repetition_id])
            rollouts.append((int(extras["index"]), float(rng.random() < extras["p"])))
        tasks = list(dict.fromkeys(t for t, _ in rollouts))  # prompts in order, once each
        self.calls.append({"step": step, "round": rnd, "tasks": tasks, "rollouts": rollouts})
        return generator_output([r for _, r in rollouts])


def generator_output(rewards: list[float]) -> dict[str, Any]:
    """What a SkyRL generator returns for these rewards: two-token prompts and responses, every
    token in the loss (the policy workers are stood in for, so the tokens are not read)."""
    n = len(rewards)
    return {
        "prompt_token_ids": [[1, 2]] * n,
        "response_ids": [[3, 4]] * n,
        "rewards": list(rewards),
        "loss_masks": [[1, 1]] * n,
        "stop_reasons": ["stop"] * n,
        "rollout_metrics": None,
        "rollout_logprobs": None,
    }


def skyrl_config(
    ckpt: Path, steps: int, n_samples: int = N_SAMPLES, **trainer: Any
) -> SkyRLTrainConfig:
    """SkyRL's config for these tests: 4 prompts x n_samples per step, no eval, no Ray."""
    trainer_cfg = TrainerConfig(
        project_name="frontier-test",
        run_name="skyrl",
        logger="console",
        train_batch_size=BATCH,
        eval_batch_size=BATCH,
        micro_train_batch_size_per_gpu=BATCH,
        policy_mini_batch_size=BATCH,
        epochs=10,
        max_training_steps=steps,
        max_prompt_length=64,
        seed=0,
        resume_mode="none",
        ckpt_path=str(ckpt),
        ckpt_interval=0,
        hf_save_interval=0,
        eval_interval=0,
        eval_before_train=False,
        print_example_interval=0,
        dump_data_batch=False,
        update_ref_every_epoch=False,
        algorithm=AlgorithmConfig(advantage_estimator="grpo", use_kl_in_reward=False),
    )
    for key, value in trainer.items():
        setattr(trainer_cfg, key, value)
    trainer_cfg.placement.colocate_all = False
    generator_cfg = GeneratorConfig(
        sampling_params=SamplingParams(max_generate_length=8),
        n_samples_per_prompt=n_samples,
        batched=False,
        max_turns=1,
        inference_engine=InferenceEngineConfig(),
    )
    generator_cfg.step_wise_trajectories = False
    generator_cfg.inference_engine.enable_ray_prometheus_stats = False
    data_cfg = DataConfig(dataloader=DataLoaderConfig(num_workers=0))
    return SkyRLTrainConfig(trainer=trainer_cfg, generator=generator_cfg, data=data_cfg)


def _stub_training_input() -> TrainingInputBatch:
    batch = TrainingInputBatch(
        {
            "sequences": torch.zeros((1, 4), dtype=torch.long),
            "attention_mask": torch.ones((1, 4), dtype=torch.long),
            "loss_mask": torch.ones((1, 4), dtype=torch.long),
            "response_mask": torch.ones((1, 4), dtype=torch.long),
            "rewards": torch.zeros((1, 4)),
        }
    )
    batch.metadata = {"uids": ["0"], "response_length": 4, "avg_response_length": 4.0}
    return batch


def _no_values(batch: TrainingInputBatch) -> TrainingInputBatch:
    """The forward passes stood in for: no critic, so no values (as SkyRL without one)."""
    batch["values"] = None
    return batch


class Run:
    """One trainer over the data file, with what it recorded."""

    def __init__(
        self,
        data_file: Path,
        cfg: SkyRLTrainConfig,
        frontier: dict[str, Any],
        generator: Any = None,
        real_batches: bool = False,
        lcm_dp_size: int = 1,
        trainer_class: type = FrontierRayPPOTrainer,
        frontier_plan: Any = None,
    ) -> None:
        """frontier_plan: the run's step as the entrypoint decided it (None: the trainer
        decides it); real_batches: SkyRL's own convert_to_training_input and advantages run, and the
        policy update stood in for records each batch (`self.batches`); lcm_dp_size: the
        data-parallel size the stood-in workers report; trainer_class: the adapter's trainer
        (FrontierFullyAsyncRayPPOTrainer: SkyRL's fully-async loop)."""
        self.generator = generator or BernoulliGenerator()
        self.tracker = MagicMock()
        dataset = PromptDataset(
            datasets=str(data_file), tokenizer=FakeTokenizer(), max_prompt_length=64, num_workers=1
        )
        self.trainer = trainer_class(
            cfg=cfg,
            tracker=self.tracker,
            tokenizer=FakeTokenizer(),
            train_dataset=dataset,
            inference_engine_client=None,
            generator=self.generator,
            frontier_config=skyrl_sampler_config(frontier, cfg.trainer.train_batch_size),
            frontier_plan=frontier_plan,
        )
        t = self.trainer
        # The policy workers, stood in for (as SkyRL's test_rl_callbacks.py does).
        dispatch = MagicMock()
        dispatch.save_weights_for_sampler = AsyncMock(return_value=None)
        dispatch.get_lcm_dp_size = MagicMock(return_value=lcm_dp_size)
        t.dispatch = dispatch
        t.init_weight_sync_state = lambda: None
        self.batches: list[dict[str, Any]] = []
        if real_batches:
            t.fwd_logprobs_values_reward = _no_values
            t.train_critic_and_policy = self._record
        else:
            t.convert_to_training_input = lambda *_a, **_k: _stub_training_input()
            t.fwd_logprobs_values_reward = lambda batch: batch
            t.compute_advantages_and_returns = lambda batch: batch
            t.train_critic_and_policy = lambda batch: {"policy_loss": 0.0}
        t._cleanup_old_checkpoints = lambda: None  # a Ray task per node
        # What the selector was asked and told, in order.
        sampler = t.frontier_sampler
        assert sampler is not None
        self.sampler = sampler
        self.picks: list[list[int]] = []
        self.feedback: list[tuple[int, int, float]] = []  # (task id, draw step, reward)
        # In the order they happened: ("pick", draw, task ids) and ("feedback", draws so far,
        # (task id, draw step, reward) of each rollout).
        self.events: list[tuple[str, int, list[Any]]] = []
        selector = sampler.selector
        select, select_window, update = selector.select, selector.select_window, selector.update

        def spy_select(n: int) -> np.ndarray:
            out = select(n)
            self.picks.append([int(sampler.task_ids[i]) for i in out])
            self.events.append(("pick", len(self.picks) - 1, self.picks[-1]))
            return out

        def spy_select_window(n: int) -> np.ndarray:
            out = select_window(n)
            self.picks.append([int(sampler.task_ids[i]) for i in out])
            return out

        def spy_update(fb: Any) -> None:
            told = [
                (int(sampler.task_ids[pos]), int(fb.step), float(r))
                for pos, r in zip(fb.task_ids.tolist(), fb.rewards.tolist(), strict=True)
            ]
            self.feedback += told
            self.events.append(("feedback", sampler._draws, told))
            update(fb)

        selector.select = spy_select  # type: ignore[method-assign]
        selector.select_window = spy_select_window  # type: ignore[method-assign]
        selector.update = spy_update  # type: ignore[method-assign]

    def _record(self, batch: TrainingInputBatch) -> dict[str, float]:
        """The policy update stood in for: what SkyRL would train on, with its per-mini-batch
        loss normalisation (_normalize_advantages, SkyRL's own) applied."""
        meta = batch.metadata
        raw = batch["advantages"].clone()
        mini = meta["policy_mini_batch_boundaries"]
        normalized = self.trainer._normalize_advantages(
            batch, mini, meta["policy_prompt_boundaries"]
        )
        self.batches.append(
            {
                "rows": len(batch["sequences"]),
                "pad_size": meta["pad_size"],
                "mini_batches": list(mini),
                "loss_mask": batch["loss_mask"].clone(),
                "advantages": raw,
                "normalized": normalized["advantages"].clone(),
            }
        )
        return {"policy_loss": 0.0}

    def train(self, timeout_s: float = 60.0) -> Run:
        import asyncio

        # Bounded: a fully-async loop that waits for groups that never come would hang.
        asyncio.run(asyncio.wait_for(self.trainer.train(), timeout_s))
        return self

    def logged(self) -> list[dict[str, float]]:
        return [c.args[0] for c in self.tracker.log.call_args_list]


@pytest.fixture
def make_run(data_file: Path) -> Callable[..., Run]:
    def make(cfg: SkyRLTrainConfig, frontier: dict[str, Any] | None = None, **kw: Any) -> Run:
        # The former default, full batches: the tests of rollouts: auto and kept name theirs.
        default = {"selector": "greso", "seed": 3, "rollouts": "full"}
        return Run(data_file, cfg, frontier or default, **kw)

    return make


@pytest.fixture(autouse=True)
def _no_ray() -> Any:
    """Nothing here may start Ray: SkyRL's loop runs in this process, its workers stood in for."""
    yield
    import ray

    assert not ray.is_initialized(), "a test started Ray"
