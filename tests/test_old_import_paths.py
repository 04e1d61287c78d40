"""Users' imports of the old module paths still work and give the very objects of the new
homes (issue 61: the step samplers moved from `wrappers/` to `sampling/`)."""

from __future__ import annotations

import importlib

import pytest

import frontier_rft.sampling as sampling

MOVED = [
    "allocation",
    "allocation_rule",
    "base",
    "dynamic_sampling",
    "fewer_rollouts",
    "filtered_batch",
    "passthrough",
    "pilot_commit",
    "sampler_file",
    "sampler_flags",
    "step",
    "wrapper_file",
]


@pytest.mark.parametrize("name", MOVED)
def test_an_old_sampler_module_path_is_the_moved_module(name: str) -> None:
    old = importlib.import_module(f"frontier_rft.wrappers.{name}")
    new = importlib.import_module(f"frontier_rft.sampling.{name}")
    assert old is new
    public = [n for n in vars(new) if not n.startswith("__")]
    assert public and all(getattr(old, n) is getattr(new, n) for n in public)


def test_the_old_package_names_are_the_new_objects() -> None:
    from frontier_rft.wrappers.dynamic_sampling import DynamicSamplingConfig
    from frontier_rft.wrappers.sampler_file import load_sampler, save_sampler
    from frontier_rft.wrappers.sampler_flags import SamplerFlags, build_sampler

    from frontier_rft.wrappers import DynamicSampling, PassThrough, Sampler, StepSamples

    assert DynamicSampling is sampling.DynamicSampling and PassThrough is sampling.PassThrough
    assert Sampler is sampling.Sampler and StepSamples is sampling.StepSamples
    assert DynamicSamplingConfig is sampling.DynamicSamplingConfig
    from frontier_rft.sampling import sampler_file, sampler_flags

    assert load_sampler is sampler_file.load_sampler and save_sampler is sampler_file.save_sampler
    assert SamplerFlags is sampler_flags.SamplerFlags
    assert build_sampler is sampler_flags.build_sampler


def test_the_shadow_feature_is_one_room_and_its_old_paths_still_resolve() -> None:
    """Issue 61 item 5: the rule, the live run, the replay and the log readers live in
    `frontier_rft.shadow`; the four old module paths give its very objects."""
    import frontier_rft.wrappers.shadow as old_rule

    import frontier_rft.integrations.shadows as old_live
    import frontier_rft.shadow as shadow
    import frontier_rft.training.foreign_logs as old_logs
    import frontier_rft.training.shadows as old_replay
    from frontier_rft.shadow import foreign_logs, live, replay, rule

    assert old_rule is rule
    assert old_live.RunShadows is live.RunShadows is shadow.RunShadows
    assert old_live.SHADOW_FILE == live.SHADOW_FILE
    for name in old_replay.__all__:
        home = next(m for m in (replay, live, rule) if hasattr(m, name))
        assert getattr(old_replay, name) is getattr(home, name)
    for name in old_logs.__all__:
        assert getattr(old_logs, name) is getattr(foreign_logs, name)
    # The reference trainer's shadows and the adapters' are built by one function.
    assert old_replay.build_shadow is live.build_shadow
