"""The one plan (integrations.plan): every adapter's declared facts, answered by one table.

Each trainer declares its facts once beside its config; these tests read only those facts and
the plan's MESSAGES, so a new trainer is its facts and its rows, and a new clash is one row."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from frontier_rft.integrations import plan
from frontier_rft.integrations.plan import MESSAGES, ROLLOUTS, TrainerFacts, auto, message
from frontier_rft.integrations.skyrl.config import SKYRL
from frontier_rft.integrations.tinker_facts import TINKER
from frontier_rft.integrations.trl.fewer_config import TRL
from frontier_rft.integrations.verl.config import VERL
from frontier_rft.sampling.spec import KINDS
from frontier_rft.selectors.registry import SELECTORS

FACTS = (TRL, VERL, SKYRL, TINKER)
AUTO = tuple(f for f in FACTS if "auto" in f.rollouts)
SKIP, UNIFORM, GRESO = SELECTORS["skip"], SELECTORS["uniform"], SELECTORS["greso"]

# SKIP as a selector auto keeps kept up to 2 epochs (planted: conftest's
# `skip_kept_to_two_epochs`; no registered one earns kept today), to exercise every branch.
pytestmark = pytest.mark.usefixtures("skip_kept_to_two_epochs")


def test_one_rollouts_tuple_every_config_takes() -> None:
    """auto plus the step's modes; every trainer takes a subset, the step's modes at least."""
    assert ROLLOUTS == ("auto", "full", "kept")
    for facts in FACTS:
        takes = set(ROLLOUTS) | {plan.FEWER_STEPS}  # fewer_steps: where a run can end early
        assert set(plan.STEP_ROLLOUTS) <= set(facts.rollouts) <= takes, facts.name
    assert {f.name for f in AUTO} == {"TRL", "verl", "SkyRL"}


@pytest.mark.parametrize("facts", FACTS, ids=lambda f: f.name)
def test_every_declared_clash_is_worded(facts: TrainerFacts) -> None:
    """Each clash a trainer declares has its text in the one table (or is worded by the
    step's own checks), and each trainer's filter and async loop clash with kept."""
    assert facts.kept, f"{facts.name} says where it shrinks a step"
    for clash in facts.clashes:
        assert (
            (facts.name, clash) in MESSAGES
            or ("*", clash) in MESSAGES
            or (clash in plan.WORDED_BY_STEP)
        ), (facts.name, clash)
    if facts.filter is not None:
        assert "kept+filter" in facts.clashes or "auto+filter" in facts.clashes
        assert message(facts, "kept+filter")  # an explicit kept beside it is refused
    if "auto" in facts.rollouts:
        assert facts.clashes[0] in ("auto+shadows", "auto+filter")
        assert "auto+shadows" in facts.clashes  # shadows follow uniform's whole batches


def test_every_row_is_a_known_trainer_and_kind() -> None:
    """Rows are keyed by a declared trainer (or "*"), and say what they refuse by their key."""
    names = {f.name for f in FACTS} | {"*"}
    for (name, key), text in MESSAGES.items():
        assert name in names, name
        kind = key.split("+")[0].split(":")[0]
        assert kind in ("kept", "auto", "shadows", "choice", "rollouts", "sampler"), key
        if key.startswith("sampler:"):  # refuses a step sampler the trainer does not run
            assert key.removeprefix("sampler:") in KINDS, key
            assert name not in plan.SAMPLER_TRAINERS[key.removeprefix("sampler:")], key
        if key.startswith("kept+"):
            assert text.startswith(("rollouts: kept", "rollouts='kept'")), key
        if key.startswith("shadows+"):
            assert text.startswith("shadows with"), key


# facts' name -> what auto says, from the facts and MESSAGES only
CASES = [
    # selector, clashes on, epochs, mode, warn, why starts with
    (SKIP, (), 1.0, "kept", False, "the run is 1 epoch, within the 2 epochs"),
    (SKIP, (), None, "kept", False, "the run's length in epochs is not known yet"),
    (SKIP, (), 3.0, "full", False, "the run is 3 epochs, longer than the 2 epochs"),
    (UNIFORM, ("auto+shadows",), 1.0, "full", False, "selector 'uniform' passes over no prompt"),
    (GRESO, (), 1.0, "full", False, "selector 'greso': "),
    (SKIP, ("auto+shadows",), 1.0, "full", True, "shadows follow uniform's whole batches"),
]


@pytest.mark.parametrize("facts", AUTO, ids=lambda f: f.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].name}-{c[1]}-{c[2]}")
def test_auto_answers_every_trainer_from_its_facts(facts: TrainerFacts, case: tuple) -> None:
    selector, on, epochs, mode, warn, why = case
    got = auto(facts, selector, plan.clashes(facts, dict.fromkeys(on, True)), epochs)
    assert got[0] == mode and got[2] is warn and got[1].startswith(why), got


@pytest.mark.parametrize("facts", AUTO, ids=lambda f: f.name)
def test_each_kept_clash_keeps_auto_full_with_its_refusal(facts: TrainerFacts) -> None:
    """A clash a trainer declares makes auto full with a warning in the words of the refusal
    an explicit kept gets there, joined in the declared order."""
    worded = [
        c for c in facts.clashes if c not in plan.WORDED_BY_STEP or (facts.name, c) in MESSAGES
    ]
    fields = {"mode": "fixed", "gen_batch_size": 8, "loss": "clip_cov", "setting": "frontier"}
    lines = [message(facts, c, **fields) for c in worded]
    on = {c: {k: v for k, v in fields.items() if "{" + k in MESSAGES.get((facts.name, c), "")}
          or True for c in reversed(worded)}  # fmt: skip
    assert plan.clashes(facts, on) == lines  # the declared order, whatever the caller's
    mode, why, warn = auto(facts, SKIP, plan.clashes(facts, on), 1.0)
    assert (mode, warn, why) == ("full", True, "; ".join(lines))
    with pytest.raises(KeyError, match="declares no clash kept\\+nothing"):
        plan.clashes(facts, {"kept+nothing": True})


def test_vllm_and_outside_and_no_auto() -> None:
    """vLLM is named where the trainer declares modes; a run off the trainer that shrinks is
    full without a warning; a trainer without auto refuses to be asked."""
    kept = auto(TRL, SKIP, [], 1.0, vllm_mode="server")[1]
    assert kept.endswith(" (vLLM, vllm_mode: server, is sent only those)")
    assert "vLLM" not in auto(VERL, SKIP, [], 1.0, vllm_mode="server")[1]
    outside = message(TRL, "auto+trainer", trainer="rloo")
    assert auto(TRL, SKIP, [], 1.0, outside=outside) == ("full", outside, False)
    assert auto(TRL, UNIFORM, [], 1.0, outside=outside)[1].startswith("selector 'uniform'")
    with pytest.raises(ValueError, match="tinker has no rollouts: auto"):
        auto(TINKER, SKIP, [], 1.0)


@pytest.mark.parametrize("facts", AUTO, ids=lambda f: f.name)
def test_log_and_choice_lines_name_the_trainer(
    facts: TrainerFacts, caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("test_plan")
    with caplog.at_level(logging.INFO, logger="test_plan"):
        plan.auto_log(log, facts, "kept", "why", False)
        plan.auto_log(log, facts, "full", "because", True)
    kept, full = (r.getMessage() for r in caplog.records)
    assert kept.endswith(f" among {facts.name}'s batch (the same steps and schedule, fewer "
                         f"{facts.saves})")  # fmt: skip
    assert full.startswith(f"frontier-rft: rollouts: auto generates {facts.name}'s whole batch")
    assert f"among {facts.name}'s batch" in plan.auto_choice(facts, "kept", "why")
    assert (
        plan.auto_choice(facts, "full", "w") == "rollouts will be full (uniform's bill) because w"
    )


def test_the_walk_refusal_is_typed_only_in_the_table() -> None:
    """The adapters take "does not walk the data" from MESSAGES (`kept+selector`,
    `rollouts:fewer_steps+selector`), never typed again beside the table."""
    folder = Path(plan.__file__).parent
    typed = [
        str(path.relative_to(folder))
        for path in sorted(folder.rglob("*.py"))
        if path.name != "plan.py" and "does not walk the data" in path.read_text()
    ]
    assert typed == []
    assert "does not walk the data" in message("tinker", "kept+selector", selector="x")
