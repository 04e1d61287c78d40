"""Dynamic sampling's settings in the TRL adapter, checked without TRL or torch: the
zero-variance test against hand-computed values, each setting and each refusal, and
`frontier check-config trl` naming every mistake in the new fields."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.trl.dynamic_config import (
    ZERO_VARIANCE_TOL,
    mode_of,
    sampling_config,
    trl_problems,
    zero_variance_groups,
)
from frontier_rft.sampling import DynamicSamplingConfig
from helpers import check_config_apart
from helpers import trl_step_problems as step_problems


def test_zero_variance_is_constant_up_to_float_noise() -> None:
    f32 = np.float32
    noisy = float(f32(0.1) + f32(0.2))  # 0.30000001192..., TRL's float32 sum of two rewards
    rewards = np.array(
        [
            [1.0, 1.0, 1.0, 1.0],  # constant
            [noisy, 0.3, 0.3, 0.3],  # spread 1.2e-8 <= 1e-5 * 1: constant
            [0.0, 0.0, 0.0, 1.0],  # one success: mixed
            [0.5, 0.5, 0.5, 0.5 + 2e-5],  # spread 2e-5 > 1e-5: mixed
            [40.0, 40.0, 40.0, 40.0003],  # spread 3e-4 <= 1e-5 * 40.0003: constant
            [40.0, 40.0, 40.0, 40.001],  # spread 1e-3 > 4.0001e-4: mixed
        ]
    )
    assert zero_variance_groups(rewards, ZERO_VARIANCE_TOL).tolist() == [
        True, True, False, False, True, False
    ]  # fmt: skip
    exact = zero_variance_groups(rewards, 0.0)
    assert exact.tolist() == [True, False, False, False, False, False]  # std == 0 alone


def test_modes_build_the_wrappers_settings() -> None:
    assert sampling_config("off", None) is None
    assert sampling_config("fixed", None) == DynamicSamplingConfig()  # 3x the open slots
    assert sampling_config("dapo", None) == DynamicSamplingConfig.dapo()  # DAPO's full rounds
    assert sampling_config("dapo", {"oversample": 2}) == DynamicSamplingConfig(
        oversample=2, round_rule="dapo"
    )
    assert sampling_config("adaptive", None) == DynamicSamplingConfig(adaptive=True)
    assert sampling_config("greso", None) == DynamicSamplingConfig.greso()
    assert sampling_config("greso", {"max_rounds": 4}) == replace(
        DynamicSamplingConfig.greso(), max_rounds=4
    )
    assert [mode_of(v) for v in (None, False, True, "Adaptive", "off")] == [
        "off", "off", "fixed", "adaptive", "off"
    ]  # fmt: skip
    config = FrontierConfig(
        dynamic_sampling="adaptive", dynamic_sampling_config='{"oversample": 2}'
    )
    assert config.dynamic_sampling_config == {"oversample": 2}  # JSON from the command line
    assert config.dynamic_sampling_settings() == DynamicSamplingConfig(oversample=2, adaptive=True)
    assert FrontierConfig().dynamic_sampling_settings() is None  # off by default


@pytest.mark.parametrize(
    ("fields", "phrases"),
    [
        ({"dynamic_sampling": "adaptve"}, ["dynamic_sampling must be one of off, fixed"]),
        ({"dynamic_sampling": 3}, ["dynamic_sampling must be one of"]),
        ({"dynamic_sampling_config": {"max_rounds": 3}}, ["dynamic_sampling is off"]),
        (
            {"dynamic_sampling": "fixed", "dynamic_sampling_config": {"max_round": 3}},
            ["'max_round' (did you mean 'max_rounds'?)"],
        ),
        (
            {
                "dynamic_sampling": "fixed",
                "dynamic_sampling_config": {"max_surplus": 8, "max_rounds": 0, "adaptive": True},
            },
            [
                "max_surplus 8 is not supported",
                "adaptive is set by dynamic_sampling",
                "max_rounds must be an int in [1, 10000]",
            ],
        ),
        (
            {"dynamic_sampling": "fixed", "dynamic_sampling_config": {"round_rule": "dapo"}},
            ["round_rule is set by dynamic_sampling (fixed, adaptive, greso, dapo)"],
        ),
        ({"dynamic_sampling": "fixed", "dynamic_sampling_config": "{x"}, ["must be a mapping"]),
        ({"dynamic_sampling": "fixed", "dynamic_sampling_config": [1]}, ["must be a mapping"]),
        ({"dynamic_sampling_tol": -1}, ["dynamic_sampling_tol must be a number in [0, 1)"]),
        ({"dynamic_sampling_tol": float("nan")}, ["dynamic_sampling_tol"]),
        ({"dynamic_sampling_tol": True}, ["dynamic_sampling_tol"]),
    ],
)
def test_each_mistake_is_one_message_naming_it(fields: dict, phrases: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        FrontierConfig(**fields)
    text = str(info.value)
    assert "\n" not in text
    for phrase in phrases:
        assert phrase in text, text


def test_trl_settings_dynamic_sampling_cannot_run_with() -> None:
    assert trl_problems({}) == []
    assert trl_problems({"scale_rewards": "none"}) == []
    assert trl_problems({"scale_rewards": False}) == []  # TRL reads False as none
    (batch,) = trl_problems({"scale_rewards": "batch"})
    assert "scale_rewards: batch" in batch and "use scale_rewards: group" in batch
    (agg,) = trl_problems({"multi_objective_aggregation": "normalize_then_sum"})
    assert "sum_then_normalize" in agg
    (rloo,) = trl_problems({}, "rloo")
    assert "trainer 'rloo' is not supported" in rloo
    assert step_problems({"scale_rewards": "batch"}) == []  # dynamic sampling off
    assert step_problems({"dynamic_sampling": "nope", "scale_rewards": "batch"}) == []
    assert len(step_problems({"dynamic_sampling": True, "trainer": "rloo"})) == 1


def test_every_mode_is_a_frontier_config_choice() -> None:
    """One vocabulary: the wrapper's MODES, TRL's DYNAMIC_SAMPLING_MODES and the Literal of
    FrontierConfig.dynamic_sampling name the same modes."""
    from typing import get_args, get_type_hints

    from frontier_rft.integrations.trl.dynamic_config import DYNAMIC_SAMPLING_MODES
    from frontier_rft.sampling.dynamic_sampling import MODES

    literal = get_args(get_type_hints(FrontierConfig)["dynamic_sampling"])
    assert literal == DYNAMIC_SAMPLING_MODES == ("off", *MODES)
    assert FrontierConfig(dynamic_sampling="dapo").dynamic_sampling_settings() == (
        DynamicSamplingConfig.dapo()
    )


@pytest.mark.parametrize("mode", ["fixed", "dapo"])
def test_loss_types_fillers_cannot_be_scaled_for_are_refused(mode: str) -> None:
    """A short dynamic sampling step fills its batch with masked rows: bnpo normalises each
    micro-batch by its own tokens, which no factor undoes; adaptive entropy changes the
    coefficient the adapter scales. Each is one line, in the file check too."""
    (bnpo,) = trl_problems({"loss_type": "bnpo"})
    assert bnpo.startswith("dynamic_sampling with loss_type: bnpo") and "\n" not in bnpo
    assert "use loss_type dapo" in bnpo
    (entropy,) = trl_problems({"use_adaptive_entropy": True})
    assert "dynamic_sampling with use_adaptive_entropy" in entropy
    for ok in ("dapo", "grpo", "dr_grpo", "sapo", "luspo", "cispo", "vespo"):
        assert trl_problems({"loss_type": ok}) == []  # scaled (step_driver.py: _normalise)
    assert step_problems({"dynamic_sampling": mode, "loss_type": "bnpo"}) == [bnpo]
    assert step_problems({"loss_type": "bnpo"}) == []  # dynamic sampling off


def test_check_config_names_every_mistake_without_torch(tmp_path: Path) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(
        "dynamic_sampling: adaptive\n"
        "dynamic_sampling_config: {max_round: 20, max_surplus: 4}\n"
        "dynamic_sampling_tol: 2\n"
        "scale_rewards: batch\n"
    )
    out = check_config_apart("trl", config, 1)
    found = [line for line in out.splitlines() if line.startswith("  - ")]
    for phrase in (
        "max_surplus 4 is not supported",
        "'max_round' (did you mean 'max_rounds'?)",
        "dynamic_sampling_tol must be a number in [0, 1)",
        "dynamic_sampling with scale_rewards: batch",
    ):
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    assert len(found) == 3, out  # the two dynamic_sampling_config mistakes share one line
    config.write_text("dynamic_sampling: adaptive\n")
    assert "the frontier-rft settings are valid" in check_config_apart("trl", config, 0)


def test_the_step_code_reaches_no_private_trainer_attribute() -> None:
    """The step driver and its per-kind rows use TRL's public trainer attributes and the
    AdapterSeam the trainer hands over, never the trainer's private ones (`trainer._...`)."""
    import re
    from pathlib import Path

    import frontier_rft.integrations.trl as trl_adapter

    folder = Path(trl_adapter.__file__).parent
    reach = re.compile(r"\b(?:tr|trainer|self\.trainer)\._\w+")
    names = ("step_driver.py", "driver_kinds.py")
    found = {name: reach.findall((folder / name).read_text()) for name in names}
    assert found == {name: [] for name in names}


@pytest.mark.parametrize("mode", ["fixed", "adaptive", "greso", "dapo"])
def test_a_mode_is_one_sampler_config_in_trl_the_simulator_and_the_bench(mode: str) -> None:
    """TRL's `dynamic_sampling: MODE`, a simulated entry's and a bench-rl entry's spell the
    same DynamicSamplingConfig (the reference trainer offers fixed, adaptive and dapo)."""
    from dataclasses import asdict

    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES, flags
    from frontier_rft.simulation.runner import sampler_spec

    trl = ("dynamic_sampling", asdict(sampling_config(mode, None)))
    assert sampler_spec(dynamic_sampling=mode).pair() == trl
    # the bench spells a mode by the reference trainer's flags, which have no GRESO rounds
    bench = {
        "fixed": {},
        "adaptive": {"adaptive_oversample": True},
        "dapo": {"dapo_round_rule": "dapo"},
    }
    if mode in bench:
        assert flags(dynamic_sampling=True, **bench[mode]).pair() == trl
    entries = {"fixed": "dapo", "adaptive": "dapo-adaptive"}  # the bench's entries in the mode
    if mode in entries:
        entry = next(e for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES) if e.label == entries[mode])
        assert entry.sampler.pair() == trl
