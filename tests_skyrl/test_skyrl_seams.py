"""The adapter's reading of SkyRL's data: rewards collapsed per rollout, task ids, uids, and
the one-line error when SkyRL's hooks are not what the adapter expects."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rft.integrations.skyrl.trainer import (
    _positions,
    check_skyrl_hooks,
    kept_mini_batches,
    rollout_rewards,
    skyrl_task_ids,
)


def test_token_level_rewards_are_summed_per_rollout() -> None:
    uids, rewards = rollout_rewards({"rewards": [[0.0, 0.5, 0.5], [0.0, 0.0]]}, ["3", "3"], False)
    assert uids == ["3", "3"] and rewards.tolist() == [1.0, 0.0]


def test_step_wise_rollouts_count_once_with_their_last_steps_reward() -> None:
    out = {"rewards": [0.0, 1.0, 0.2, 0.0], "is_last_step": [False, True, False, True]}
    uids, rewards = rollout_rewards(out, ["1", "1", "2", "2"], True)
    assert uids == ["1", "2"] and rewards.tolist() == [1.0, 0.0]


class _Frame:
    def __init__(self, columns: dict[str, list[Any]]) -> None:
        self.columns = columns
        self.column_names = list(columns)

    def __getitem__(self, key: str) -> list[Any]:
        return self.columns[key]


class _Dataset:
    def __init__(self, **columns: list[Any]) -> None:
        self.dataframe = _Frame(columns)
        self.n = len(next(iter(columns.values())))

    def __len__(self) -> int:
        return self.n


def test_task_ids_come_from_the_column_else_the_position() -> None:
    assert skyrl_task_ids(_Dataset(index=[5, 9, 7]), "index").tolist() == [5, 9, 7]
    assert skyrl_task_ids(_Dataset(prompt=["a", "b"]), "index").tolist() == [0, 1]
    assert skyrl_task_ids(_Dataset(pid=[2, 1]), "pid").tolist() == [2, 1]


@pytest.mark.parametrize(
    ("dataset", "key", "says"),
    [
        (_Dataset(prompt=["a"]), "pid", "task_id_key 'pid' is not a column"),
        (_Dataset(index=[1, 1, 2]), "index", "repeats 1 task id(s) (first 1)"),
        (_Dataset(index=[1, None]), "index", "no task id at row 1"),
    ],
)
def test_bad_task_ids_are_named_in_one_line(dataset: Any, key: str, says: str) -> None:
    with pytest.raises(ValueError) as err:
        skyrl_task_ids(dataset, key)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_uid_that_is_no_row_position_is_refused() -> None:
    assert _positions(["0", "2"], 3).tolist() == [0, 2]
    with pytest.raises(ValueError, match="not a row position"):
        _positions(["uid-0"], 3)
    with pytest.raises(ValueError, match="not a row position"):
        _positions(["3"], 3)


def test_a_changed_skyrl_hook_is_named_in_one_line() -> None:
    check_skyrl_hooks()  # skyrl 0.3.0 as installed

    class Renamed:
        def _build_train_dataloader_and_compute_training_steps(self) -> None: ...

        def handle_dynamic_sampling(self, output: Any, ids: Any) -> None: ...

    with pytest.raises(RuntimeError) as err:
        check_skyrl_hooks(Renamed)
    text = str(err.value)
    assert "handle_dynamic_sampling takes (self, output, ids)" in text and "\n" not in text
    with pytest.raises(RuntimeError, match="has no save_checkpoints"):
        check_skyrl_hooks(
            type(
                "Partial",
                (),
                {
                    **vars(Renamed),
                    "handle_dynamic_sampling": (lambda self, generator_output, uids: None),
                    "postprocess_generator_output": (lambda self, generator_output, uids: None),
                },
            )
        )


def test_skyrls_parser_takes_what_the_entrypoint_passes_it_and_only_that() -> None:
    from skyrl.train.config import SkyRLTrainConfig

    from frontier_rft.integrations.skyrl.main import split_arguments

    argv = [
        "trainer.override_entrypoint=frontier_rft.integrations.skyrl.main",
        "trainer.epochs=2",
        "frontier.selector=skip",
    ]
    theirs, ours = split_arguments(argv)
    assert SkyRLTrainConfig.from_cli_overrides(theirs).trainer.epochs == 2
    assert ours == ["frontier.selector=skip"]
    with pytest.raises(Exception):  # noqa: B017 - SkyRL's own error: why the split is needed
        SkyRLTrainConfig.from_cli_overrides([*theirs, *ours])


def test_the_experiments_get_trainer_builds_the_frontier_trainer(tmp_path: Any) -> None:
    from types import SimpleNamespace

    from skyrl.train.dataset import PromptDataset

    from conftest import FakeTokenizer, skyrl_config
    from frontier_rft.integrations.skyrl.config import skyrl_sampler_config
    from frontier_rft.integrations.skyrl.trainer import FrontierPPOExp, FrontierRayPPOTrainer

    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(f'{{"prompt": [{{"role": "user", "content": "q{i}"}}]}}\n' for i in range(8))
    )
    cfg = skyrl_config(tmp_path / "ckpt", steps=1)
    exp = SimpleNamespace(
        frontier_config=skyrl_sampler_config({"selector": "uniform"}, 4), frontier_plan=None
    )
    dataset = PromptDataset(str(data), FakeTokenizer(), max_prompt_length=64, num_workers=1)
    trainer = FrontierPPOExp.get_trainer(
        exp, cfg, None, FakeTokenizer(), dataset, None, None, None, None
    )
    assert isinstance(trainer, FrontierRayPPOTrainer)
    assert trainer.frontier_sampler is not None
    assert trainer.frontier_sampler.selector.name == "uniform"
    assert trainer.total_training_steps == 1


def test_kept_mini_batches_cut_a_step_wise_batch_by_prompts() -> None:
    from skyrl.train.dataset.preprocess import compute_prompt_boundaries

    # Step-wise: each prompt's rows are its trajectories' turns, any number of them.
    uids = ["4", "4", "4", "9", "9", "1", "1", "1", "1", "7"]
    prompts = compute_prompt_boundaries(uids)
    assert kept_mini_batches(prompts, 2) == [(0, 5), (5, 10)]
    assert kept_mini_batches(prompts, 3) == [(0, 9), (9, 10)]  # the last one shorter
    assert kept_mini_batches(prompts[:1], 4) == [(0, 3)]
