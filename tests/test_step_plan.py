"""StepPlan, a run's step decided once (sampling/step_plan.py): the chain it builds, the clashes
it refuses before anything is built, and the one line it is printed as; TrainConfig's plan
beside the sampler it used to build by hand."""

from __future__ import annotations

import pytest

from frontier_rft.sampling.backfill import Backfill
from frontier_rft.sampling.dynamic_sampling import DynamicSampling
from frontier_rft.sampling.fewer_rollouts import FewerRollouts, FewerRolloutsConfig
from frontier_rft.sampling.hard_groups import HardGroups
from frontier_rft.sampling.passthrough import PassThrough
from frontier_rft.sampling.rescue import Rescue
from frontier_rft.sampling.spec import KINDS, SamplerSpec
from frontier_rft.sampling.step_plan import WRAPS, StepPlan, StepRows, Wrap
from frontier_rft.training.config import FEWER_STEPS_REFUSALS, TrainConfig
from helpers import build, world_pool

KEPT = SamplerSpec(FewerRollouts.kind, FewerRolloutsConfig())
BACKFILL = Wrap.of("backfill", capacity=16, max_age=2, max_uses=1)


def test_wraps_are_the_table_of_their_classes_innermost_first() -> None:
    assert list(WRAPS.items()) == [
        ("hard_groups", HardGroups),
        ("rescue", Rescue),
        ("backfill", Backfill),
    ]
    for name, cls in WRAPS.items():
        assert cls.name == name and isinstance(cls.settings, tuple) and cls.settings


def test_the_plan_builds_the_chain_innermost_first() -> None:
    plan = StepPlan(KEPT, (Wrap.of("rescue", extra=3), BACKFILL))
    sampler = plan.build(build("greso", world_pool(30), seed=0))
    assert isinstance(sampler, Backfill) and isinstance(sampler.wraps, Rescue)
    assert isinstance(sampler.wraps.wraps, FewerRollouts)
    assert (sampler.capacity, sampler.max_age, sampler.max_uses) == (16, 2, 1)
    assert sampler.wraps.extra == 3 and sampler.kind == FewerRollouts.kind
    assert plan.rollouts == "kept" and plan.wraps[0] == Wrap("rescue", (("extra", 3),))
    # what a trainer reads is the outermost class's facts
    assert sampler.holds_groups and not sampler.uneven_groups and not sampler.rescuable


def test_the_plan_is_one_line() -> None:
    plan = StepPlan(KEPT, (Wrap.of("rescue", extra=3),), reason="greso skips within uniform's step")
    assert plan.words() == (
        "sampler fewer_rollouts with rescue (extra 3), rollouts kept, ended by steps "
        "(greso skips within uniform's step)"
    )
    assert StepPlan(ends_by="passes").words() == "sampler passthrough, ended by passes"


@pytest.mark.parametrize(
    ("wraps", "needle"),
    [
        ((BACKFILL, Wrap.of("rescue", extra=3)), "innermost first"),
        ((BACKFILL, BACKFILL), "each appear once"),
    ],
)
def test_wraps_out_of_order_or_twice_are_refused(wraps: tuple[Wrap, ...], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        StepPlan(KEPT, wraps)


def test_a_wrap_its_sampler_cannot_take_is_refused_in_its_own_words() -> None:
    with pytest.raises(ValueError) as refused:
        StepPlan(SamplerSpec(), (BACKFILL,))
    assert str(refused.value) == Backfill.refusal(PassThrough.kind, None)
    screen = SamplerSpec(FewerRollouts.kind, FewerRolloutsConfig(screen=2))
    with pytest.raises(ValueError, match="with screening drops or splits"):
        StepPlan(screen, (Wrap.of("rescue", extra=3),))
    with pytest.raises(ValueError, match="drops or splits"):
        StepPlan(SamplerSpec(DynamicSampling.kind), (Wrap.of("rescue", extra=3),))


def test_a_run_ended_by_passes_takes_plain_steps_only() -> None:
    StepPlan(ends_by="passes")
    for plan in (
        {"sampler": KEPT},
        {"wraps": (Wrap.of("rescue", extra=2),)},
    ):
        with pytest.raises(ValueError, match="shapes its steps itself"):
            StepPlan(ends_by="passes", **plan)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ends_by"):
        StepPlan(ends_by="epochs")


@pytest.mark.parametrize(
    ("name", "settings", "needle"),
    [
        ("replay", {}, "wrap"),
        ("rescue", {}, "takes the settings extra"),
        ("backfill", {"capacity": 1}, "capacity, max_age, max_uses"),
    ],
)
def test_a_wrap_is_named_with_all_its_settings(name: str, settings: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        Wrap.of(name, **settings)


@pytest.mark.parametrize(
    ("name", "settings", "needle"),
    [
        ("rescue", {"extra": 0}, r"^rescue must be an int in \[1, 1048576\], got 0$"),
        ("hard_groups", {"extra": -3}, r"^hard_groups must be an int in \[1, 1048576\]"),
        ("rescue", {"extra": 2.0}, r"^rescue must be an int"),
        ("rescue", {"extra": True}, r"^rescue must be an int"),
        ("backfill", {"capacity": 0, "max_age": 2, "max_uses": 1}, r"^backfill_buffer must"),
        ("backfill", {"capacity": 4, "max_age": -1, "max_uses": 1}, r"^backfill_max_age must"),
        ("backfill", {"capacity": 4, "max_age": 2, "max_uses": "2"}, r"^backfill_max_uses must"),
    ],
)
def test_a_wrap_whose_build_would_refuse_its_settings_is_refused_when_made(
    name: str, settings: dict, needle: str
) -> None:
    """A plan that cannot run is refused when made, not only when built (issue 91, item 21):
    `Wrap.of`, `Wrap(...)` and so `StepPlan` check a wrap's settings as its build does."""
    with pytest.raises(ValueError, match=needle):
        Wrap.of(name, **settings)
    with pytest.raises(ValueError, match=needle):
        Wrap(name, tuple((k, settings[k]) for k in WRAPS[name].settings))


def test_each_wrap_refuses_each_kind_it_cannot_wrap_in_one_line() -> None:
    for cls in WRAPS.values():
        for kind, row in KINDS.items():
            why = cls.refusal(kind, SamplerSpec(kind).config)
            assert (
                why is None
                or ("\n" not in why and why.endswith(f"set {cls.name} 0"))
                or (cls is Backfill and why.endswith("set backfill off"))
            ), (cls.name, kind, why)
            if cls is Rescue:  # rescue's need is the wrapped kind's class fact
                assert (why is None) == row.fact("rescuable"), kind


def test_train_config_plans_what_its_fields_say() -> None:
    config = TrainConfig(
        selector="greso",
        sampler="fewer_rollouts",
        hard_groups=2,
        rescue=4,
        backfill="replay",
        backfill_buffer=8,
    )
    plan = config.step_plan()
    assert plan.sampler == config.sampler_spec() and plan.ends_by == "steps"
    assert plan.wraps == (
        Wrap.of("hard_groups", extra=2),
        Wrap.of("rescue", extra=4),
        Wrap.of("backfill", capacity=8, max_age=4, max_uses=1),
    )
    assert TrainConfig(selector="skip", fewer_steps=True).step_plan().ends_by == "passes"
    default = TrainConfig()
    assert default.step_plan() == StepPlan(rows=StepRows(default.batch_size, default.group_size))
    assert plan.rows == StepRows(config.batch_size, config.group_size)


@pytest.mark.parametrize(
    ("fields", "clash"),
    [
        ({"selector": "bots"}, "selector"),
        ({"selector": "greso", "sampler": "dynamic_sampling"}, "sampler"),
        ({"selector": "greso", "rescue": 2}, "rescue"),
    ],
)
def test_fewer_steps_refusals_come_from_one_table(fields: dict, clash: str) -> None:
    fields = {"fewer_steps": True, **fields}
    want = FEWER_STEPS_REFUSALS[clash].format(
        selector=fields["selector"], sampler=fields.get("sampler", "passthrough"), rescue=2
    )
    with pytest.raises(ValueError) as refused:
        TrainConfig(**fields)
    assert str(refused.value) == want
