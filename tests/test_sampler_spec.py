"""One spec of the step sampler, `SamplerSpec(kind, config)`, at every door (issue 61 item 2).

A new kind is its module, one row of `sampling.spec.KINDS` and one row of
`integrations.plan.SAMPLER_TRAINERS`: the fixture below adds a trivial kind that way, and
the tests reach it from every door that accepts it, and see it refused, in the plan's words,
where one does not."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from frontier_rft.bench.real_rl import entries
from frontier_rft.core.config import check
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Selector
from frontier_rft.integrations import plan
from frontier_rft.integrations.skyrl.config import SKYRL
from frontier_rft.integrations.tinker_facts import TINKER
from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.fewer_config import TRL
from frontier_rft.integrations.verl.config import VERL, VerlSamplerConfig
from frontier_rft.sampling.base import WrapsSelector
from frontier_rft.sampling.dynamic_sampling import DynamicSamplingConfig
from frontier_rft.sampling.sampler_file import load_sampler, save_sampler
from frontier_rft.sampling.sampler_flags import FLAG_NAMES, SamplerFlags, sampler_settings
from frontier_rft.sampling.spec import KINDS, KindRow, SamplerSpec
from frontier_rft.sampling.step import RolloutFn, StepSamples, fresh_batch, run_round
from frontier_rft.sampling.step_plan import StepPlan, Wrap
from frontier_rft.selectors import make_selector
from frontier_rft.simulation import runner
from frontier_rft.simulation.runner import (
    DYNAMIC_SAMPLING,
    Entry,
    RunSpec,
    run_one,
    sampler_spec,
    spelled,
)
from frontier_rft.simulation.scenario import SCENARIOS
from frontier_rft.training.config import TrainConfig

ADAPTERS = (TRL, VERL, SKYRL, TINKER)


# ---- the trivial kind: its module (here, in the test) --------------------------------------
@dataclass(frozen=True)
class KeepFirstConfig:
    """KeepFirst's settings."""

    share: float = 0.5
    """Share of the step's groups trained (the first ones, at least one)."""

    def __post_init__(self) -> None:
        check(0 < self.share <= 1, f"share must be in (0, 1], got {self.share!r}")


class KeepFirst(WrapsSelector):
    """One round of batch_size prompts; only the first ceil(share x batch_size) are trained."""

    kind: ClassVar[str] = "keep_first"

    def __init__(self, selector: Selector, config: KeepFirstConfig | None = None):
        self.inner = selector
        self.config = config or KeepFirstConfig()

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        one = run_round(self.inner, step, batch_size, group_size, rollout)
        self.inner.flush()
        kept = max(1, math.ceil(self.config.share * batch_size))
        picks = [(0, g) for g in range(kept)]
        return StepSamples(step, (one,), fresh_batch((one,), picks, step, 0))

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()


@pytest.fixture
def keep_first(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The trivial kind added as a new kind is: one row of the spec, one row of the plan
    (no adapter runs it)."""
    monkeypatch.setitem(KINDS, KeepFirst.kind, KindRow(KeepFirst, KeepFirstConfig))
    monkeypatch.setitem(plan.SAMPLER_TRAINERS, KeepFirst.kind, ())
    yield KeepFirst.kind


def _selector(seed: int = 0) -> Selector:
    return make_selector("uniform", TaskPool(num_tasks=32), seed=seed)


def _rollout(ids: np.ndarray) -> np.ndarray:
    return np.tile([1.0, 0.0], ids.shape[0] * 2)  # group size 4, every group mixed


# ---- the table ------------------------------------------------------------------------------
def test_every_kind_is_a_row_of_the_spec_and_of_the_plan() -> None:
    """The spec's kinds are the plan's, each a sampler class of that kind."""
    assert set(KINDS) == set(plan.SAMPLER_TRAINERS)
    for kind, row in KINDS.items():
        assert row.sampler.kind == kind
        assert set(row.extras) <= {"seed", "posterior"}
        assert set(row.flags) <= set(FLAG_NAMES), kind  # a flat flag is a SamplerFlags field


def test_a_spec_checks_its_kind_and_config() -> None:
    """A spec is frozen; its config is its kind's (None: the defaults); a wrong one is one line."""
    assert SamplerSpec() == SamplerSpec("passthrough", None)
    assert SamplerSpec("allocation").config == KINDS["allocation"].config()
    with pytest.raises(ValueError, match=r"sampler must be one of .*got 'nope'"):
        SamplerSpec("nope")
    with pytest.raises(ValueError, match="config must be a PilotCommitConfig, got dict"):
        SamplerSpec("pilot_commit", {"pilot": 2})
    with pytest.raises(ValueError, match="takes no settings"):
        SamplerSpec.read("passthrough", {"oversample": 2})
    with pytest.raises(ValueError, match="budget"):
        SamplerSpec.read("allocation", {"budget": -1})


@pytest.mark.parametrize(
    "kind", ["dynamic_sampling", "allocation", "fewer_rollouts", "pilot_commit"]
)
def test_flat_flags_and_the_spec_convert_both_ways(kind: str) -> None:
    """Every flagged kind's spec spelt as the flat fields (the ledger's digests are taken from
    them) reads back as the same spec."""
    row = KINDS[kind]
    assert row.config is not None
    spec = SamplerSpec(kind, row.config())
    flags = SamplerFlags.of_spec(spec)
    assert flags.spec() == spec and flags.sampler() == spec.pair()
    assert SamplerFlags.of(*spec.pair()) == flags


# ---- the trivial kind at each door ---------------------------------------------------------
def test_a_new_kind_runs_in_the_reference_trainer(keep_first: str, tmp_path: Any) -> None:
    """TrainConfig names it by sampler and sampler_config, builds it, and its state file saves
    and loads it: the reference trainer's door."""
    config = TrainConfig(sampler=keep_first, sampler_config={"share": 0.25})
    assert config.sampler_spec() == SamplerSpec(keep_first, KeepFirstConfig(0.25))
    sampler = config.step_sampler(_selector())
    assert isinstance(sampler, KeepFirst)
    samples = sampler.sample(0, 8, 4, _rollout)
    assert samples.train.task_ids.shape == (2,)  # a quarter of the step's 8 groups
    save_sampler(sampler, tmp_path / "s.npz", with_inner=False)
    loaded = load_sampler(tmp_path / "s.npz", _selector())
    assert isinstance(loaded, KeepFirst) and loaded.config == KeepFirstConfig(0.25)
    with pytest.raises(ValueError, match="share must be in"):
        TrainConfig(sampler=keep_first, sampler_config={"share": 2.0})


def test_a_new_kind_runs_in_the_simulator(keep_first: str) -> None:
    """A simulated entry names it by its spec; the record says which."""
    cfg = SCENARIOS["small-pool"].replace(num_tasks=32, eval_tasks=16)
    spec = SamplerSpec(keep_first, KeepFirstConfig(0.5))
    entry = Entry("keep-first", "uniform", sampler=spec)
    assert entry.sampler is spec
    rec = run_one(RunSpec(cfg, entry, 0, steps=3, batch=8, rollouts=4))
    assert rec["sampler"] == [keep_first, {"share": 0.5}]
    assert rec["rollouts"] == [32] * 3  # it rolls out the whole batch, trains half of it
    with pytest.raises(ValueError, match="sampler must be a SamplerSpec"):
        Entry("x", "uniform", sampler=keep_first)  # type: ignore[arg-type]
    plain = run_one(RunSpec(cfg, Entry("u", "uniform"), 0, steps=1, batch=8, rollouts=4))
    assert "sampler" not in plain  # the records of every entry without one are as they were


def test_a_new_kind_has_no_flat_spelling(keep_first: str) -> None:
    """The flat flags (frontier train's --dynamic-sampling ..., the bench's entry fields) spell
    only the kinds that had them: a new kind is named by sampler and sampler_config."""
    spec = SamplerSpec(keep_first, KeepFirstConfig())
    with pytest.raises(ValueError, match="has no flags of its own: name it by sampler"):
        SamplerFlags.of_spec(spec)
    assert sampler_settings(keep_first, {"share": 1.0}) == KeepFirstConfig(1.0)


FACTS = (
    "plain",
    "uneven_groups",
    "holds_groups",
    "rescuable",
    "rolls_fewer",
    "replays",
    "splits_groups",
    "frees_slots",
    "rolls_kept",
)
"""What a door may ask of a kind (`KindRow.fact`): of the kind, or of the kind set by a config."""


def test_every_kinds_facts_are_read_from_its_row() -> None:
    """Each fact is a bool its class states, asked of the row (or the spec), never of the name."""
    for kind, row in KINDS.items():
        spec = SamplerSpec(kind)
        for fact in FACTS:
            assert type(row.fact(fact, spec.config)) is bool, (kind, fact)
            assert spec.fact(fact) == row.fact(fact, spec.config)
    assert [k for k in KINDS if SamplerSpec(k).fact("plain")] == ["passthrough"]
    kept = SamplerSpec("fewer_rollouts")
    screen = SamplerSpec.read("fewer_rollouts", {"skip": False, "screen": 2})
    assert (kept.fact("rolls_kept"), kept.fact("splits_groups")) == (True, False)
    assert (screen.fact("rolls_kept"), screen.fact("splits_groups")) == (False, True)
    assert not any(SamplerSpec(k).fact("replays") for k in KINDS)  # only a wrap replays


def test_a_new_kinds_facts_decide_what_its_plan_takes(
    keep_first: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a plan takes follows the facts a kind's class states, with no edit elsewhere:
    backfill wraps a kind that frees slots, `rollouts` is kept where it rolls out the kept
    prompts, a run ends by its passes only around a plain step."""
    spec = SamplerSpec(keep_first, KeepFirstConfig(0.5))
    backfill = (Wrap.of("backfill", capacity=4, max_age=2, max_uses=2),)
    with pytest.raises(ValueError, match="sampler 'keep_first' never does"):
        StepPlan(spec, backfill)
    assert StepPlan(spec).rollouts == "full"
    with pytest.raises(ValueError, match="ended by its passes"):
        StepPlan(spec, ends_by="passes")
    # a fact of the kind set by its config: a classmethod of it
    monkeypatch.setattr(KeepFirst, "frees_slots", classmethod(lambda cls, c: c.share < 1))
    monkeypatch.setattr(KeepFirst, "rolls_kept", classmethod(lambda cls, c: c.share < 1))
    monkeypatch.setattr(KeepFirst, "plain", True)
    sampler = StepPlan(spec, backfill).build(_selector())
    assert sampler.replays and sampler.kind == keep_first
    assert StepPlan(spec).rollouts == "kept"
    assert StepPlan(spec, ends_by="passes").ends_by == "passes"
    whole = SamplerSpec(keep_first, KeepFirstConfig(1.0))  # a fact of the kind set so
    with pytest.raises(ValueError, match="sampler 'keep_first' never does"):
        StepPlan(whole, backfill)


@pytest.mark.parametrize("facts", ADAPTERS, ids=lambda f: f.name)
def test_an_adapter_refuses_a_kind_its_plan_row_does_not_name(
    keep_first: str, facts: plan.TrainerFacts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the plan's row names no trainer, each refuses it in one line, the plan's; naming
    one in that row is all it takes for it to accept the kind."""
    with pytest.raises(ValueError) as err:
        plan.check_sampler(facts, keep_first)
    text = str(err.value)
    assert "\n" not in text and f"{facts.name} runs no step sampler 'keep_first'" in text
    assert "frontier train --sampler keep_first" in text
    monkeypatch.setitem(plan.SAMPLER_TRAINERS, keep_first, (facts.name,))
    plan.check_sampler(facts, keep_first)


# ---- every door converts into the spec, into kinds its trainer runs --------------------------
@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({}, "passthrough"),
        ({"rollouts": "full"}, "passthrough"),
        ({"rollouts": "kept"}, "fewer_rollouts"),
        ({"rollouts": "full", "screen": 2}, "fewer_rollouts"),
        ({"rollouts": "full", "dynamic_sampling": "dapo"}, "dynamic_sampling"),
    ],
)
def test_trls_yaml_converts_into_the_spec(fields: dict[str, Any], kind: str) -> None:
    config = FrontierConfig(**fields)
    spec = config.sampler_spec()
    assert spec.kind == kind and TRL.name in plan.SAMPLER_TRAINERS[kind]
    assert config.fewer_rollouts_settings() == (spec.config if kind == "fewer_rollouts" else None)
    assert config.dynamic_sampling_settings() == (
        spec.config if kind == "dynamic_sampling" else None
    )


def test_verl_and_skyrl_run_fewer_rollouts_and_refuse_a_filter() -> None:
    for facts in (VERL, SKYRL):
        assert facts.name in plan.SAMPLER_TRAINERS["fewer_rollouts"]
    with pytest.raises(ValueError, match="on verl, dynamic sampling is verl's own filter"):
        VerlSamplerConfig.from_fields({"dynamic_sampling": "fixed"}, 8, "data.sampler.frontier")


def test_every_bench_entry_converts_into_the_spec_and_back() -> None:
    """Each committed bench entry's spec, spelt back as the flat fields it sets, is the spec
    again (the ledger's digests are taken from those fields: tests/test_bench_ledger_pins)."""
    for entry in (*entries.MAIN_ENTRIES, *entries.EFFECT_ENTRIES):
        spec = entry.sampler
        if not KINDS[spec.kind].flags and spec.kind != "passthrough":
            assert entry.sampler_flags() == {}  # a kind without flags is named by its spec alone
            continue
        assert entries.flags(**entry.sampler_flags()) == spec, entry.label
    with pytest.raises(ValueError, match=r"BenchEntry 'x': .*prior_forgetting has no flag"):
        entries.BenchEntry(
            "x", "uniform", sampler=sampler_spec(allocation={"prior_forgetting": 0.9})
        )


def test_every_simulator_spelling_converts_into_the_spec_and_back() -> None:
    """A simulated entry's record names its sampler as `sampler_spec` takes it (the records of
    entries spelt by the simulator's flags are as they were); a spec the flags do not spell is
    recorded by its pair."""
    spelt: list[dict[str, Any]] = [
        {},
        *({"dynamic_sampling": mode} for mode in DYNAMIC_SAMPLING[1:]),
        {"allocation": {}},
        {"allocation": {"pilot": 4, "commit": "mixed", "prior_forgetting": 0.5}},
        {"fewer_rollouts": {"rollouts": "kept"}},
        {"fewer_rollouts": {"screen": 4, "loss_scale": "kept"}},
        {"fewer_rollouts": {"rollouts": "kept", "screen": 4}},
    ]
    for fields in spelt:
        record = spelled(sampler_spec(**fields))
        assert record == {**dict.fromkeys(record), **fields}, fields
        assert sampler_spec(**record) == sampler_spec(**fields)
    odd = SamplerSpec("dynamic_sampling", DynamicSamplingConfig(oversample=2.0))
    assert spelled(odd) == {**spelled(SamplerSpec()), "sampler": list(odd.pair())}
    assert spelled(SamplerSpec("cgrpo"))["sampler"] == ["cgrpo", SamplerSpec("cgrpo").fields()]


def test_a_new_kind_has_a_ledger_definition_of_its_own(keep_first: str) -> None:
    """A bench run of a new kind is not mistaken for plain GRPO's: its entry definition (whose
    digest keys the ledger) records its spec, where the older kinds keep their own keys."""
    from frontier_rft.bench.real_rl.ledger import definition_digest, entry_definition

    plain = entry_definition(TrainConfig())
    mine = entry_definition(TrainConfig(sampler=keep_first, sampler_config={"share": 0.25}))
    assert mine == {**plain, "sampler": [keep_first, {"share": 0.25}]}
    assert definition_digest(mine) != definition_digest(plain)
    assert "sampler" not in entry_definition(TrainConfig(sampler="pilot_commit"))


def test_the_architecture_page_names_each_door_that_exists() -> None:
    """docs/architecture.md's table of doors names conversions that exist."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    section = page.split("## One step-sampler spec at every door")[1].split("\n## ")[0]
    named = set(re.findall(r"`(\w+)\.(spec|sampler_spec|of_spec|spelled|flags)`", section))
    owners = {
        "SamplerFlags": SamplerFlags,
        "TrainConfig": TrainConfig,
        "FrontierConfig": FrontierConfig,
        "runner": runner,
        "entries": entries,
    }
    assert {name for name, _ in named} == set(owners)
    for name, method in named:
        assert callable(getattr(owners[name], method)), (name, method)
    assert "`KINDS`" in page and "`SAMPLER_TRAINERS`" in page
