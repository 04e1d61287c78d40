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
