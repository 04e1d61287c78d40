"""Stand-ins for the remote tinker service, and a tiny task world, for the cookbook's real loop.

Only what runs remotely is replaced: `tinker.ServiceClient` (with the training and sampling
clients it makes) and the tokenizer, which the cookbook loads from the model's files and
uses only to print sample groups. Everything else (the cookbook's dataset handling, rollout
path, constant-group filter, sync and async loops, checkpoint records and resume) is the
real tinker-cookbook code.

The world: task t is a prompt whose pass rate is PASS_RATES[t]. The stand-in sampler
reads the task from the prompt's one token and answers 1 (correct) with probability
PASS_RATES[t], seeded by (weights version, task, how many times this client sampled it):
the same weights give the same answers, so a resumed run sees the rewards an uninterrupted
one would. A wrong answer runs long: WRONG_TOKENS tokens, 0 0 0 (a right one is the one
token 1). The environment gives reward 1 for the answer 1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tinker
from tinker_cookbook.rl.types import Env, EnvGroupBuilder, StepResult

NUM_TASKS = 32
GROUP_SIZE = 4
TASK_TOKEN = 1000  # prompt token of task t: TASK_TOKEN + t
WRONG_TOKENS = 3  # a wrong answer's sampled tokens (a right one's: 1)
SEED = 1234
# 8 never solved, 8 always solved, 16 in between: known pass rates.
PASS_RATES = np.concatenate([np.zeros(8), np.ones(8), np.linspace(0.1, 0.9, 16)])


@dataclass
class Record:
    """What the stand-in service saw: every sample, every trained datum."""

    samples: list[tuple[int, int, float]] = field(default_factory=list)
    """(weights version, task, reward the answer earns), in call order."""
    trained: list[int] = field(default_factory=list)
    """Datums per forward_backward call."""
    optim_steps: int = 0


class _Done:
    """An awaitable future holding a ready value (tinker's APIFuture, already resolved)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value

    async def result_async(self) -> Any:
        return self.value

    def __await__(self) -> Any:
        async def get() -> Any:
            await asyncio.sleep(0)
            return self.value

        return get().__await__()


@dataclass
class _Path:
    path: str


class FakeSamplingClient:
    """tinker.SamplingClient: answers 1 with the prompt's pass rate, seeded by the version."""

    def __init__(self, version: int, record: Record, delay: float) -> None:
        self.version = version
        self.record = record
        self.delay = delay
        self._count: dict[int, int] = {}

    async def sample(
        self, prompt: tinker.ModelInput, num_samples: int, sampling_params: Any, **_: Any
    ) -> tinker.SampleResponse:
        await asyncio.sleep(self.delay)
        task = prompt.to_ints()[0] - TASK_TOKEN
        k = self._count.get(task, 0)
        self._count[task] = k + 1
        rng = np.random.default_rng([SEED, self.version, task, k])
        answer = int(rng.random() < PASS_RATES[task])
        self.record.samples.append((self.version, task, float(answer)))
        tokens = [1] if answer else [0] * WRONG_TOKENS
        seq = tinker.SampledSequence(
            stop_reason="stop",
            sequence_id=f"v{self.version}-t{task}-{k}",
            _tokens_list=tokens,
            _logprobs_list=[-0.5] * len(tokens),
        )
        return tinker.SampleResponse(sequences=[seq])

    sample_async = sample


class FakeTrainingClient:
    """tinker.TrainingClient: counts optimizer steps (the weights version) and trained datums."""

    def __init__(self, version: int, record: Record, train_delay: float, sample_delay: float):
        self.version = version
        self.record = record
        self.train_delay = train_delay
        self.sample_delay = sample_delay

    def forward_backward(self, data: Sequence[tinker.Datum], loss_fn: str, **_: Any) -> Any:
        self.record.trained.append(len(data))
        outputs = [
            {"logprobs": tinker.TensorData(data=[-0.5] * d.model_input.length, dtype="float32")}
            for d in data
        ]
        return self._later(
            tinker.ForwardBackwardOutput(loss_fn_output_type="x", loss_fn_outputs=outputs)
        )

    def optim_step(self, adam_params: Any) -> Any:
        self.version += 1
        self.record.optim_steps += 1
        return self._later(tinker.OptimStepResponse(metrics={}))

    def _later(self, value: Any) -> Any:
        delay = self.train_delay

        async def run() -> Any:
            await asyncio.sleep(delay)
            return value

        return _Awaitable(run)

    def save_state(self, name: str, ttl_seconds: int | None = None) -> _Done:
        return _Done(_Path(f"tinker://fake/v{self.version}/state/{name}"))

    def save_weights_for_sampler(self, name: str, ttl_seconds: int | None = None) -> _Done:
        return _Done(_Path(f"tinker://fake/v{self.version}/sampler/{name}"))

    def create_sampling_client(self, path: str, **_: Any) -> _Done:
        version = int(path.split("/")[3][1:])
        return _Done(FakeSamplingClient(version, self.record, self.sample_delay))

    async def save_weights_and_get_sampling_client(self, **_: Any) -> FakeSamplingClient:
        return FakeSamplingClient(self.version, self.record, self.sample_delay)


class _Awaitable:
    """A future that resolves when awaited (after the service's delay)."""

    def __init__(self, run: Any) -> None:
        self._run = run

    def __await__(self) -> Any:
        return self._run().__await__()

    async def result_async(self) -> Any:
        return await self._run()


class FakeServiceClient:
    """tinker.ServiceClient: makes the stand-in training clients (resuming from a state path)."""

    record = Record()
    train_delay = 0.0
    sample_delay = 0.0

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def __enter__(self) -> FakeServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _client(self, version: int) -> FakeTrainingClient:
        cls = type(self)
        return FakeTrainingClient(version, cls.record, cls.train_delay, cls.sample_delay)

    async def create_lora_training_client(self, *_: Any, **__: Any) -> FakeTrainingClient:
        return self._client(0)

    async def create_training_client_from_state_with_optimizer(
        self, path: str, **_: Any
    ) -> FakeTrainingClient:
        return self._client(int(path.split("/")[3][1:]))


class FakeTokenizer:
    """Decodes tokens for the cookbook's printed sample groups."""

    def decode(self, tokens: Sequence[int], **_: Any) -> str:
        return " ".join(str(t) for t in tokens)


class TaskEnv(Env):  # a user's environment: one turn, reward 1 for the answer 1
    def __init__(self, task: int) -> None:
        self.task = task

    async def initial_observation(self) -> Any:
        return tinker.ModelInput.from_ints([TASK_TOKEN + self.task]), []

    async def step(self, action: list[int], *, extra: Any = None) -> StepResult:
        return StepResult(
            reward=float(action == [1]),
            episode_done=True,
            next_observation=tinker.ModelInput.from_ints([]),
            next_stop_condition=[],
        )


class TaskGroup(EnvGroupBuilder):  # a user's group builder: GROUP_SIZE rollouts of one task
    def __init__(self, task: int) -> None:
        self.task = task

    async def make_envs(self) -> Sequence[Env]:
        return [TaskEnv(self.task) for _ in range(GROUP_SIZE)]

    def logging_tags(self) -> list[str]:
        return ["fake"]
