"""`rollouts: auto`, as every adapter decides it (integrations/plan.py): kept only for
a selector that passes over prompts within uniform's step and that no measurement says loses
held-out score with kept at the run's length, and only where no trainer setting is in the
way; each adapter's run length in epochs. No registered selector that passes over prompts
earns kept today (skip lost held-out score where the policy learns fast), so the mechanism
runs on a planted one (conftest's `skip_kept_to_two_epochs`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.integrations import data_columns
from frontier_rft.integrations.plan import keeps_full, planned_epochs, resolve_auto
from frontier_rft.integrations.skyrl.config import skyrl_planned_epochs
from frontier_rft.integrations.trl.fewer_config import trl_planned_epochs
from frontier_rft.integrations.verl.auto import VERL_DEFAULT_EPOCHS, verl_planned_epochs
from frontier_rft.integrations.verl.auto import auto_rollouts as verl_auto
from frontier_rft.selectors import SELECTORS


def test_skip_keeps_full_batches_at_every_length_and_says_what_kept_cost() -> None:
    """Issue 70: skip with kept lost held-out score on SmolLM2 and on the fast regime over 2
    epochs, so auto keeps uniform's bill for it on any run, without a warning (nothing the
    user set is in the way), and says how to save anyway."""
    for epochs in (None, 1.0, 2.0, 30.0):
        mode, why, warn = resolve_auto(SELECTORS["skip"], ["in the way"], epochs)
        assert (mode, warn) == ("full", False)
        assert why.startswith("selector 'skip': with rollouts: kept it lost held-out score where")
        assert "SmolLM2-135M" in why and "set rollouts: kept to save anyway" in why
    for name in ("skip-audit", "skip-predict", "skip-eager", "predict-only"):
        assert resolve_auto(SELECTORS[name], [], 2.0)[0] == "full", name


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_skip_is_kept_where_nothing_is_in_the_way_on_a_run_of_up_to_two_epochs() -> None:
    kept = "each step generates only the prompts 'skip' keeps"
    assert resolve_auto(SELECTORS["skip"], [], 2.0) == (
        "kept",
        "the run is 2 epochs, within the 2 epochs over which kept was measured within noise; "
        f"{kept}",
        False,
    )
    assert resolve_auto(SELECTORS["skip"], [], 1.0)[1].startswith("the run is 1 epoch, within")
    mode, why, warn = resolve_auto(SELECTORS["skip"], [])  # the length is not known yet
    assert (mode, warn) == ("kept", False) and why == (
        "the run's length in epochs is not known yet (kept was measured within noise up to 2 "
        f"epochs: set rollouts: full for a longer run); {kept}"
    )


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_skip_keeps_full_batches_on_a_longer_run_without_a_warning() -> None:
    """A selector measured within noise up to 2 epochs and below beyond: auto keeps
    uniform's batches on a longer run, says why, and a user may still ask for kept."""
    mode, why, warn = resolve_auto(SELECTORS["skip"], [], 2.5)
    assert (mode, warn) == ("full", False)
    assert why.startswith(
        "the run is 2.5 epochs, longer than the 2 epochs over which selector 'skip' with kept "
        "was measured within noise (with rollouts: kept it ended 0.013 below uniform's "
        "held-out pass@1 over 3 epochs (planted)"
    ) and why.endswith("set rollouts: kept to save anyway, docs/selectors/fewer_rollouts.md)")
    assert keeps_full(SELECTORS["skip"], 2.5) == why
    assert keeps_full(SELECTORS["skip"], 2.0) is None and keeps_full(SELECTORS["skip"]) is None
    # A setting in the way is named first, as a warning, on every length: the trainer
    # may learn the run's length later than its settings.
    assert resolve_auto(SELECTORS["skip"], ["in the way"], 30.0) == ("full", "in the way", True)


def test_a_runs_length_in_epochs_from_its_epoch_and_step_limits() -> None:
    assert planned_epochs(3, rows=None) == 3.0  # no step limit: its epochs
    assert planned_epochs(3, steps=50, prompts_per_step=16, rows=400) == 2.0  # 800 / 400
    assert planned_epochs(1, steps=50, prompts_per_step=16, rows=400) == 1.0  # epochs end first
    assert planned_epochs(3, steps=50, prompts_per_step=16, rows=None) is None  # rows unknown


def test_the_rows_are_counted_only_under_a_step_limit() -> None:
    """Counting may scan a data file: a run set by its epochs never asks."""
    counted: list[int] = []

    def rows() -> int:
        counted.append(400)
        return 400

    assert planned_epochs(3, rows=rows) == 3.0 and counted == []
    assert planned_epochs(3, steps=50, prompts_per_step=16, rows=rows) == 2.0 and counted == [400]


def test_trls_run_length_as_its_trainer_derives_it() -> None:
    """num_train_epochs, or max_steps of per_device x processes x accumulation completions
    over num_generations x num_iterations (TRL's RepeatSampler); TRL's defaults when absent."""
    assert trl_planned_epochs({}, rows=None, processes=1) == 3.0  # transformers' default
    assert trl_planned_epochs({"num_train_epochs": 2}, rows=None, processes=1) == 2.0
    steps = {"max_steps": 100, "per_device_train_batch_size": 8,
             "gradient_accumulation_steps": 4, "num_generations": 8}  # fmt: skip
    assert trl_planned_epochs(steps, rows=800, processes=2) == 1.0  # 100 x 8 prompts / 800
    assert trl_planned_epochs({**steps, "num_iterations": 2}, rows=800, processes=2) == 0.5
    assert trl_planned_epochs(steps, rows=None, processes=2) is None
    assert trl_planned_epochs({**steps, "max_steps": "100"}, rows=800, processes=1) is None


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_verls_run_length_from_its_config_and_its_files_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trainer.total_epochs (verl's 30 when absent), or total_training_steps of
    train_batch_size prompts over data.train_files' rows (parquet states them, JSON lines are
    scanned), at most train_max_samples; None where the rows are not counted."""
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"prompt": [f"p{i}" for i in range(100)]}), path)
    assert verl_planned_epochs({}) == VERL_DEFAULT_EPOCHS
    assert verl_planned_epochs({"trainer": {"total_epochs": 2}}) == 2.0
    run = {"trainer": {"total_training_steps": 15},
           "data": {"train_batch_size": 10, "train_files": [str(path)]}}  # fmt: skip
    assert verl_planned_epochs(run) == 1.5  # 150 prompts over 100 rows
    run["data"]["train_max_samples"] = 50  # type: ignore[index]
    assert verl_planned_epochs(run) == 3.0
    jsonl = tmp_path / "train.jsonl"  # JSON lines are counted by a scan: blank lines are no rows
    jsonl.write_text('{"prompt": "p"}\n\n' * 49 + '{"prompt": "q"}')
    jsonl_run = {**run, "data": {"train_batch_size": 10, "train_files": [str(jsonl), str(path)]}}
    assert verl_planned_epochs(jsonl_run) == 1.0  # 150 prompts over 50 + 100 rows
    monkeypatch.setattr(data_columns, "MAX_COUNTED_BYTES", jsonl.stat().st_size - 1)
    assert verl_planned_epochs(jsonl_run) is None  # too large to scan here: the trainer counts
    as_json = tmp_path / "train.json"  # one JSON array: not counted without loading it
    as_json.write_text('[{"prompt": "p"}]')
    assert verl_planned_epochs({**run, "data": {"train_files": str(as_json)}}) is None
    assert verl_planned_epochs({**run, "data": {"train_files": str(tmp_path / "no")}}) is None
    assert verl_planned_epochs({"trainer": {"total_epochs": "${oc.env:E}"}}) is None
    mode, why, _ = verl_auto({"trainer": {"total_epochs": 15}}, selector=SELECTORS["skip"],
                             shadows=None, legacy=False)  # fmt: skip
    assert mode == "full" and why.startswith("the run is 15 epochs, longer than")
    assert verl_auto({}, selector=SELECTORS["skip"], shadows=None, legacy=False)[0] == "kept"


def test_skyrls_run_length_from_its_epochs_and_step_limit() -> None:
    assert skyrl_planned_epochs(None, None, 16, None) == 1.0  # SkyRL's default: 1 epoch
    assert skyrl_planned_epochs(5, 20, 16, 160) == 2.0  # 20 steps x 16 over 160 rows
    assert skyrl_planned_epochs(1, 20, 16, 160) == 1.0
    assert skyrl_planned_epochs(5, 20, 16, None) is None


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_a_setting_in_the_way_keeps_full_batches_with_a_warning() -> None:
    mode, why, warn = resolve_auto(SELECTORS["skip"], ["shadows follow uniform's whole batches"])
    assert (mode, warn) == ("full", True) and why == "shadows follow uniform's whole batches"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("uniform", "selector 'uniform' passes over no prompt"),
        ("bots", "selector 'bots' does not walk the data"),
        ("greso", "selector 'greso': with rollouts: kept it ended 0.04 below uniform"),
    ],
)
def test_a_selector_kept_would_not_help_keeps_full_batches_without_a_warning(
    name: str, said: str
) -> None:
    """greso passes over prompts, but with kept it ended below uniform (measured): auto keeps
    its batches full and says why, whatever the settings; a user may still ask for kept."""
    mode, why, warn = resolve_auto(SELECTORS[name], ["a blocker too"])
    assert (mode, warn) == ("full", False) and why.startswith(said), why
    assert keeps_full(SELECTORS[name]) == why


def test_only_selectors_that_skip_within_a_step_declare_a_measured_loss() -> None:
    """kept_loses is evidence about kept, which only a selector that walks the data and
    passes over prompts can run."""
    for cls in SELECTORS.values():
        if cls.kept_loses is not None:
            assert cls.walks_windows() and cls.passes_over, cls.name


def test_frontier_selectors_says_what_rollouts_auto_does_with_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from frontier_rft.cli.selectors import describe

    assert (
        "rollouts auto: full (uniform's bill): with rollouts: kept it lost held-out score where "
        "the policy learns fast"
    ) in describe("skip", full=False)
    monkeypatch.setattr(SELECTORS["skip"], "kept_level_epochs", 2.0)  # as measured on CPU alone
    assert (
        "rollouts auto: kept for a run of up to 2 epochs: each step generates only the prompts "
        "it keeps (same steps, fewer rollouts); full (uniform's bill) for a longer run: with "
        "rollouts: kept it lost"
    ) in describe("skip", full=False)
    greso = describe("greso", full=False)
    assert "rollouts auto: full (uniform's bill): with rollouts: kept it ended 0.04" in greso
    assert "rollouts auto: full (uniform's bill): passes over no prompt" in describe(
        "uniform", full=False
    )


def test_a_hand_set_kept_run_says_what_a_step_does_and_what_kept_cost() -> None:
    """Issue 72: `rollouts: kept` set by hand printed no start-up line; it says what a step
    does on that trainer and, where measured, what kept cost the selector."""
    from frontier_rft.integrations.plan import kept_line
    from frontier_rft.integrations.skyrl.config import SKYRL
    from frontier_rft.integrations.trl.fewer_config import TRL
    from frontier_rft.integrations.verl.config import VERL

    line = kept_line(TRL, SELECTORS["skip"])
    assert line.startswith(
        "frontier-rft: rollouts: kept (set): each step generates only the prompts 'skip' keeps "
        "among TRL's batch (the same steps and schedule, fewer completions); measured saving: "
        "0.78x of uniform's rollouts over 2 epochs on SmolLM2-135M"
    ), line
    assert "; measured: with rollouts: kept it lost held-out score where the policy" in line
    assert "SmolLM2-135M" in line and "\n" not in line
    assert kept_line(VERL, SELECTORS["uniform"]).endswith("fewer rollouts)")  # none measured
    assert "among SkyRL's batch" in kept_line(SKYRL, SELECTORS["greso"])


@pytest.mark.parametrize("trainer", ["trl", "verl"])
def test_check_config_says_what_a_hand_set_kept_saves_and_costs(
    trainer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72: check-config's line for `rollouts: kept` gave no expected saving; it now
    gives the selector's measured saving and cost, as the start-up line does."""
    from frontier_rft.cli.main import main

    root = Path(__file__).resolve().parents[1]
    if trainer == "trl":
        argv = [str(root / "examples/trl/grpo_frontier.yaml"), "selector=skip", "rollouts=kept"]
    else:
        argv = [str(root / "examples/verl/skip.yaml")]
    main(["check-config", trainer, *argv])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  rollouts: kept (set): "))
    assert "measured saving: 0.78x of uniform's rollouts over 2 epochs on SmolLM2-135M" in line
    assert "measured: with rollouts: kept it lost held-out score" in line
