"""`frontier bench-rl --pool-size`: bounded in the command's own terms before any work.

The lower bound is one training step's batch; the upper bound is what the testbed's task
levels hold for each seed's pool, computed exactly from the generator's own stream.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from frontier_rft.bench.real_rl import testbed as bench
from frontier_rft.cli.bench_rl import _check_pool_size
from frontier_rft.cli.common import UsageError
from frontier_rft.cli.main import _subparser, build_parser, main
from frontier_rft.tasks.base import TasksExhausted
from frontier_rft.tasks.countdown import generate_countdown
from frontier_rft.tasks.suite import (
    SplitTooLarge,
    countdown_levels,
    heldout_split,
    load_task,
    train_split,
)

SUITE = load_task("countdown", 0.0)
FULL_LEVELS = bench.testbed("full").train.levels  # 2x20,3x20: 622 distinct 2-number tasks


def _args(size: int, seeds: list[int], scale: str = "toy") -> argparse.Namespace:
    return argparse.Namespace(pool_size=size, seeds=seeds, scale=scale, no_progress=True)


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    runs = tmp_path / "runs"
    argv = ["bench-rl", "--scale", "toy", "--runs", str(runs), "--no-progress", *flags]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals exit
        code = int(exc.code or 0)
    assert not runs.exists(), "refused after work had started"
    return code, capsys.readouterr().err


def test_a_pool_below_one_step_names_the_smallest_pool_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(tmp_path, capsys, "--pool-size", "7")
    assert code == 2
    assert "--pool-size 7 is smaller than one training step" in err
    assert "8 distinct prompts per step; pass --pool-size 8 or more" in err
    assert "batch_size" not in err and "train_size" not in err  # the library's words
    _check_pool_size(bench.testbed("toy"), _args(8, [0]))  # one step's batch is enough


def test_a_pool_the_levels_cannot_fill_names_the_largest_pool_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(tmp_path, capsys, "--pool-size", "3000")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--pool-size 3000 is more than the --scale toy testbed's task levels" in err
    assert "at most 989 distinct training prompts for seed 0; pass --pool-size 989 or less" in err
    # no advice bench-rl has no flag for
    assert "widen" not in err and "2x30" not in err and "levels '" not in err
    _check_pool_size(bench.testbed("toy"), _args(989, [0, 1]))  # the bound itself is accepted


def test_a_huge_pool_is_refused_with_the_same_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(tmp_path, capsys, "--pool-size", "100000000", "--seeds", "3")
    assert code == 2
    assert "at most 989 distinct training prompts for seed 3" in err


def test_the_bound_is_the_smallest_pool_among_the_seeds() -> None:
    # The gpu testbed's 2x50 level also draws 2x20 tasks, so its pools differ by seed.
    tb = bench.testbed("gpu")
    caps = {}
    for seed in (0, 1):
        with pytest.raises(SplitTooLarge) as caught:
            train_split(SUITE, 1400, tb.pool_seed_base + seed, tb.train.levels)
        caps[seed] = caught.value.capacity
    assert caps[0] != caps[1]
    worst = min(caps, key=lambda s: caps[s] or 0)
    with pytest.raises(UsageError, match=rf"at most {caps[worst]} .* for seed {worst};"):
        _check_pool_size(tb, _args(1400, [0, 1], "gpu"))


def test_zero_is_refused_and_the_help_says_what_the_default_is() -> None:
    bench_rl = _subparser(build_parser(), "bench-rl")
    assert bench_rl is not None
    help_text = " ".join(bench_rl.format_help().split())
    pool_help = help_text[help_text.index("--pool-size N ") :][:300]
    assert (
        "(default: standard 512, gpu 512, fast 512, fast-nucleus 512, fast-format 512, "
        "fast-format-lr4 512, full 512, toy 32," in pool_help
    )  # each scale named
    assert "default: 0" not in pool_help
    assert bench_rl.parse_args([]).pool_size is None  # the default is the testbed's pool
    with pytest.raises(SystemExit):
        bench_rl.parse_args(["--pool-size", "0"])


# ------------------------------------------------------------------ the bound is exact


@pytest.mark.parametrize("seed", [100, 101])
def test_the_reported_capacity_is_exactly_the_largest_split(seed: int) -> None:
    for levels in (FULL_LEVELS, bench.testbed("gpu").train.levels):
        with pytest.raises(SplitTooLarge) as caught:
            train_split(SUITE, 5000, seed, levels)
        cap = caught.value.capacity
        assert cap is not None
        assert len(train_split(SUITE, cap, seed, levels)) == cap
        with pytest.raises(SplitTooLarge):
            train_split(SUITE, cap + 1, seed, levels)


def test_full_testbed_capacity_by_hand() -> None:
    """2x20 holds 622 distinct (numbers, target) tasks; levels alternate, so a draw of
    int(1.25 n) + 8 items fits while it is at most 2 x 622 = 1244: n = 989."""
    with pytest.raises(TasksExhausted) as caught:
        generate_countdown(5000, 100, levels=countdown_levels("2x20"))
    assert caught.value.drawn == 622
    with pytest.raises(SplitTooLarge) as split:
        train_split(SUITE, 1000, 100, FULL_LEVELS)
    assert split.value.capacity == 989 and int(1.25 * 989) + 8 == 1244


def test_an_exhausted_generator_says_how_many_it_drew_and_that_many_works() -> None:
    with pytest.raises(TasksExhausted) as caught:
        generate_countdown(3000, 7, levels=countdown_levels("2x10,3x10"))
    drawn = caught.value.drawn
    again = generate_countdown(drawn, 7, levels=countdown_levels("2x10,3x10"))
    assert len(again) == drawn


def test_a_held_out_split_past_its_levels_names_its_capacity() -> None:
    with pytest.raises(SplitTooLarge, match="distinct held-out tasks") as caught:
        heldout_split(SUITE, 5000, 0, FULL_LEVELS)
    cap = caught.value.capacity
    assert cap is not None and len(heldout_split(SUITE, cap, 0, FULL_LEVELS)) == cap
