"""benchmarks/meter_geometry.py: the meter's two readings compared on the same metered steps,
on planted columns worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import benchmark_script


def test_the_two_readings_are_compared_on_the_steps_both_read() -> None:
    """Seed 0 meters steps 0 and 2; Adam's geometry reads only step 2 (no moments at step 0).
    Plain on step 2 alone: 30 / 1 = 30 rows (with step 0, 20 / 1 would be 20); Adam's: 12 / 2
    = 6 rows; their ratio 0.2. The run ended at 9 prompts a step."""
    cols = {
        "noise/trace": [10.0, None, 30.0],
        "noise/grad_sq": [1.0, None, 1.0],
        "noise/intra": [5.0, None, 15.0],
        "noise/adam/trace": [None, None, 12.0],
        "noise/adam/grad_sq": [None, None, 2.0],
        "noise/adam/intra": [None, None, 3.0],
        "train/prompts": [4.0, 4.0, 9.0],
    }
    with benchmark_script("meter_geometry") as script:
        out = script.summary({0: cols})
    assert out["plain"]["b_simple"] == pytest.approx(30.0)
    assert out["plain"]["intra_share"] == pytest.approx(0.5)
    assert out["adam"]["b_simple"] == pytest.approx(6.0)
    assert out["ratio_per_seed"] == [pytest.approx(0.2)]
    assert out["last_prompts"] == [9.0]
    signal = out["adam"]["signal"]
    assert signal["grad_sq_ci"] == pytest.approx([2.0, 2.0])
    assert (signal["grad_sq"], signal["trace"], signal["b_at_least"]) == pytest.approx((2, 12, 6))


def test_a_signal_bound_at_or_below_zero_allows_no_noise_scale() -> None:
    """Steps reading |G|^2 of -1 and -3 (mean -2, every resample <= -1): no signal above the
    noise, so no least noise scale either; +1 and +3 allow 4 / 3 at least (trace 4 over the
    upper bound 3)."""
    for grads, least in (([-1.0, -3.0], None), ([1.0, 3.0], 4.0 / 3.0)):
        cols = {"noise/trace": [4.0, 4.0], "noise/grad_sq": grads}
        with benchmark_script("meter_geometry") as script:
            got = script.signal_bound({0: cols}, "noise/", resamples=200)
        assert got["grad_sq"] == pytest.approx(sum(grads) / 2)
        assert got["b_at_least"] == (None if least is None else pytest.approx(least))


def test_an_entry_with_two_definitions_is_refused_by_name(tmp_path: Path) -> None:
    for digest in ("aaaa1111", "bbbb2222"):
        (tmp_path / "uniform-auto" / digest).mkdir(parents=True)
    with benchmark_script("meter_geometry") as script, pytest.raises(SystemExit, match="aaaa"):
        script.definition_dir(tmp_path, "uniform-auto")


@pytest.mark.parametrize("stem", ["meter_geometry_std_tuning", "meter_geometry_format_lr4_tuning"])
def test_the_committed_readings_reproduce(
    stem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script, run with the command a committed result names, on the committed ledger
    records, gives its figures again."""
    import json
    import shlex

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)  # the command names the ledger relative to the repository
    committed = json.loads((repo / "benchmarks" / "results" / f"{stem}.json").read_text())
    argv = shlex.split(committed["command"])[2:]  # after `python benchmarks/meter_geometry.py`
    with benchmark_script("meter_geometry") as script:
        assert script.main([*argv, "--out", str(tmp_path)]) == 0
    got = json.loads((tmp_path / f"{stem}.json").read_text())
    for key in ("summary", "seeds", "code", "fit"):
        assert got.get(key) == committed.get(key), key
