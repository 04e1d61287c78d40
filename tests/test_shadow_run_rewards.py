"""A weighted TRL run replayed with its own weights: the frontier-rft TRL adapter records the
run's reward functions and `reward_weights` in its output dir (`frontier_rewards.json`), and
`frontier shadow replay` sums TRL's reward columns with them, without `--reward-column`
(issue 72, item 6); `--reward-column` still overrides, the replay says where the weights came
from, and a bad record is refused in one line (docs/shadow.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.cli.main import main
from frontier_rft.shadow import reward_record
from frontier_rft.shadow.foreign_logs import read_foreign_log
from frontier_rft.shadow.replay import replay, reward_note
from frontier_rft.shadow.run_rewards import (
    MAX_REWARDS_CHARS,
    REWARDS_FILE,
    read_run_rewards,
    write_run_rewards,
)
from test_shadow_replay_logs import _same

WEIGHTS = {"accuracy": 1.0, "format": 0.5}
RANGE = (0.0, 1.5)  # the weighted sum's range, mapped onto [0, 1] for the rules' selectors


def _rewards(seed: int = 3, steps: int = 6, batch: int = 3, pool: int = 6) -> list:
    """Per step: prompt ids (by first appearance) and each completion's (accuracy, format),
    with groups where accuracy + format is constant but the weighted sum is not."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(pool) for _ in range(steps)])
    out, ids_of = [], {}
    for t in range(steps):
        ids = order[t * batch : (t + 1) * batch]
        acc = (rng.random((batch, 4)) < 0.5).astype(float)
        fmt = 1.0 - acc if t % 2 else (rng.random((batch, 4)) < 0.5).astype(float)
        out.append(([ids_of.setdefault(int(i), len(ids_of)) for i in ids], acc, fmt))
    return out


def _trl_run(out: Path, rows: list) -> Path:
    """A TRL output dir as a weighted run leaves it: completions/ with both reward functions'
    columns (unweighted) and a log_extra column, and trainer_state.json naming the two."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    (out / "completions").mkdir(parents=True)
    for t, (ids, acc, fmt) in enumerate(rows):
        table = [
            {
                "step": t + 1,
                "prompt": f"prompt {i}",
                "completion": f"{t}.{j}",
                "accuracy": float(acc[g, j]),
                "format": float(fmt[g, j]),
                "solution": 42.0,  # log_extra: never a reward
                "advantage": 0.0,
            }
            for g, i in enumerate(ids)
            for j in range(4)
        ]
        pd.DataFrame(table).to_parquet(out / "completions" / f"completions_{t + 1:05d}.parquet")
    entry = {"step": 1} | {f"rewards/{name}/mean": 0.5 for name in WEIGHTS}
    (out / "trainer_state.json").write_text(json.dumps({"log_history": [entry]}))
    return out


def _summed(path: Path, rows: list, weights: dict[str, float]) -> Path:
    """frontier's own reward log of the same steps, each reward the weighted sum."""
    path.write_text(
        "".join(
            reward_record(t, 6, 0, np.array(ids), weights["accuracy"] * a + weights["format"] * f)
            for t, (ids, a, f) in enumerate(rows)
        )
    )
    return path


def test_a_weighted_run_replays_with_the_weights_it_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rewards()
    out = _trl_run(tmp_path / "run", rows)
    rules = ["greso", "screen2"]
    weighted = replay(_summed(tmp_path / "w.jsonl", rows, WEIGHTS), rules, reward_range=RANGE)
    ones = dict.fromkeys(WEIGHTS, 1.0)
    unweighted = replay(_summed(tmp_path / "u.jsonl", rows, ones), rules, reward_range=RANGE)
    with pytest.raises(AssertionError):  # the weights change what the rules see
        _same(weighted, unweighted)
    # before the run's record: trainer_state.json's names, each weighted 1
    _same(replay(out, rules, reward_range=RANGE), unweighted)
    assert "each weighted 1 (TRL keeps reward_weights only in training_args.bin" in str(
        reward_note(out)
    )
    write_run_rewards(out, list(WEIGHTS), list(WEIGHTS.values()))
    for log in (out, out / "completions"):
        _same(replay(log, rules, reward_range=RANGE), weighted)
    recorded = (
        "reward: 1 x accuracy + 0.5 x format: the run's reward_weights, as the frontier-rft "
        f"TRL adapter recorded them ({out / REWARDS_FILE})."
    )
    for log in (out, out / "completions", out / "completions" / "completions_00002.parquet"):
        assert reward_note(log) == recorded
    steps, _, _ = read_foreign_log(out, "trl")
    np.testing.assert_array_equal(steps[1][2], rows[1][1] + 0.5 * rows[1][2])
    # the CLI says where the weights came from
    args = ["shadow", "replay", str(out), "--rule", "screen2", "--reward-range", "0", "1.5"]
    assert main(args) == 0
    assert (
        "reward: 1 x accuracy + 0.5 x format: the run's reward_weights" in capsys.readouterr().out
    )
    # --reward-column still overrides the record
    given = [("accuracy", 1.0), ("format", 1.0)]
    _same(replay(out, rules, rewards=given, reward_range=RANGE), unweighted)
    assert main([*args, "--reward-column", "accuracy", "--reward-column", "format=1"]) == 0
    assert "reward: 1 x accuracy + 1 x format: as --reward-column names them." in (
        capsys.readouterr().out
    )


def test_the_record_names_a_column_the_table_lacks_in_one_line(tmp_path: Path) -> None:
    out = _trl_run(tmp_path / "run", _rewards())
    write_run_rewards(out, ["accuracy", "length"], [1.0, 0.1])
    with pytest.raises(ValueError, match=r"no reward column 'length' \(named by .*frontier_rew"):
        replay(out, ["screen2"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not a record of reward functions"),
        ('{"reward_funcs": ["a", "b"], "reward_weights": [1.0]}', "one finite number each"),
        ('{"reward_funcs": ["a"], "reward_weights": [NaN]}', "one finite number each"),
        ('{"reward_funcs": ["a"], "reward_weights": [true]}', "one finite number each"),
        ('{"reward_funcs": [], "reward_weights": []}', "one finite number each"),
        ('[["a", 1.0]]', "one finite number each"),
        ('{"reward_funcs": ["a", "a"], "reward_weights": [1, 2]}', "two reward functions are"),
        ("[" * 10_000, "not a record of reward functions"),
        (" " * (MAX_REWARDS_CHARS + 1), "not a record of reward functions"),
    ],
)
def test_a_bad_record_is_refused_in_one_line(
    text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _trl_run(tmp_path / "run", _rewards())
    (out / REWARDS_FILE).write_text(text)
    with pytest.raises(ValueError, match=problem) as err:
        read_run_rewards(out)
    assert "\n" not in str(err.value) and REWARDS_FILE in str(err.value)
    assert main(["shadow", "replay", str(out), "--rule", "screen2"]) == 2
    err_text = capsys.readouterr().err.strip()
    assert problem in err_text and "Traceback" not in err_text
    assert len(err_text.splitlines()) <= 2  # and "(add --debug ...)"


def test_the_record_round_trips_and_is_replaced_whole(tmp_path: Path) -> None:
    assert read_run_rewards(tmp_path) is None
    path = write_run_rewards(tmp_path / "new", ["a", "b"], [0.75, 0.25])
    assert path == tmp_path / "new" / REWARDS_FILE
    assert read_run_rewards(tmp_path / "new") == [("a", 0.75), ("b", 0.25)]
    write_run_rewards(tmp_path / "new", ["c"], [2.0])  # a second train() of the same dir
    assert read_run_rewards(tmp_path / "new") == [("c", 2.0)]
    assert [p.name for p in (tmp_path / "new").iterdir()] == [REWARDS_FILE]
    (tmp_path / "dir" / REWARDS_FILE).mkdir(parents=True)
    with pytest.raises(ValueError, match="is not a regular file"):
        read_run_rewards(tmp_path / "dir")
