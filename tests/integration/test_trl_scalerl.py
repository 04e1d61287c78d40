"""`selector: scalerl` through FrontierGRPOTrainer, set as TRL's ScaleRLTrainer runs its rule
(docs/selectors/scalerl.md): the real GRPOTrainer on the tiny local model, on CPU.

Prompt t is solved when t % 3 == 0 (every completion 1), unsolved when t % 3 == 1 (all 0),
mixed otherwise (1 on every other completion).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import torch
from tiny_lm import char_tokenizer, planted_rewards, task_dataset, tiny_grpo_args, tiny_llama

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer

N = 24
N_GEN = 4
PROMPTS = 4


class Keyed:
    """Solved, unsolved or mixed by the prompt; records the groups it scores."""

    __name__ = "keyed"

    def __init__(self) -> None:
        self.task_ids: list[int] = []

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        self.task_ids.extend(int(t) for t in task_id)
        return planted_rewards(task_id)


class Recording(FrontierGRPOTrainer):
    """Records the advantages and completion mask of every micro-batch reaching the loss."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.loss_inputs: list[dict[str, torch.Tensor]] = []

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self.loss_inputs.append({k: inputs[k].detach().clone() for k in ("advantages",)})
        self.loss_inputs[-1]["rows"] = inputs["completion_mask"].sum(dim=1).detach() > 0
        return super()._compute_loss(model, inputs)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Keyed]:
    tok = char_tokenizer()
    reward = Keyed()
    args = tiny_grpo_args(tmp_path_factory.mktemp("scalerl"), prompts=PROMPTS, n=N_GEN, max_steps=8)
    t = Recording(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[reward],
        args=args,
        train_dataset=task_dataset(range(N)),
        processing_class=tok,
        frontier=FrontierConfig(selector="scalerl", rollouts="full", dynamic_sampling="adaptive"),
    )
    t.train()
    return t, reward


def test_a_solved_prompt_is_generated_once_and_never_again(run: tuple[Any, Keyed]) -> None:
    t, reward = run
    groups: dict[int, int] = {}
    for task in reward.task_ids:
        groups[task] = groups.get(task, 0) + 1
    assert t.frontier_selector.name == "scalerl"
    assert t.frontier_selector.epoch >= 3  # 8 steps of 4 mixed groups: 32 of 8 a pass
    for task in range(N):
        completions = groups.get(task, 0)
        if task % 3 == 0:  # retired after its first group (rate 1 >= 0.9): no retest
            assert completions == N_GEN, (task, completions)
        else:  # unsolved ones are not retired (TRL retires positives only), mixed neither
            assert completions >= 2 * N_GEN, (task, completions)
    assert t.frontier_selector.metrics()["scalerl/retired"] == N // 3


def test_flat_groups_never_reach_the_loss_and_every_step_is_full(run: tuple[Any, Keyed]) -> None:
    t, _ = run
    assert t.loss_inputs
    for inputs in t.loss_inputs:
        rows = inputs["rows"]
        assert bool(rows.all())  # full: no padded-out rows
        assert bool((inputs["advantages"][rows] != 0).all())  # mixed groups' rows only


class HalfUnscorable:
    """Prompt t % 3 == 2 scores [1, 0, None, None] (two completions unscorable), the others
    as planted; records every task it scores."""

    __name__ = "half_unscorable"

    def __init__(self) -> None:
        self.task_ids: set[int] = set()

    def __call__(
        self, completions: list[Any], task_id: list[int], **kwargs: Any
    ) -> list[float | None]:
        out: list[float | None] = []
        seen: dict[int, int] = {}
        for task, planted in zip(task_id, planted_rewards(task_id), strict=True):
            t = int(task)
            self.task_ids.add(t)
            at = seen.get(t, 0)  # its place in its group: a group's rows are consecutive
            seen[t] = at + 1
            out.append([1.0, 0.0, None, None][at % N_GEN] if t % 3 == 2 else planted)
        return out


@pytest.mark.parametrize(
    "frontier",
    [
        {"rollouts": "full", "dynamic_sampling": "adaptive"},
        {"rollouts": "kept"},
    ],
    ids=["adaptive", "kept"],
)
def test_an_unscorable_completion_is_dropped_from_the_pass_rate_as_trl_drops_it(
    frontier: dict[str, Any], tmp_path: Any
) -> None:
    """TRL's ScaleRL rate leaves an unscorable completion out (1 pass of 2 scored: 0.5); the
    step driver gave it its group's mean, a pass (3 of 4: 0.75)."""
    tok = char_tokenizer()
    reward = HalfUnscorable()
    t = FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[reward],
        args=tiny_grpo_args(tmp_path, prompts=PROMPTS, n=N_GEN, max_steps=2),
        train_dataset=task_dataset(range(N)),
        processing_class=tok,
        frontier=FrontierConfig(selector="scalerl", **frontier),
    )
    assert t.frontier_driver is not None or frontier["rollouts"] == "kept"
    t.train()
    rate = t.frontier_selector.state_dict()["algo"]["pass_rate"]
    mixed = sorted(task for task in reward.task_ids if task % 3 == 2)
    assert mixed and all(rate[task] == 0.5 for task in mixed), {k: rate[k] for k in mixed}
    solved = [task for task in reward.task_ids if task % 3 == 0]
    assert all(rate[task] == 1.0 for task in solved)
