"""Shadows (wrappers/shadow.py) and the reward-log replay (training/shadows.py): the keep rule
is the selector's own, counts on scripted pools equal hand-computed ones, state round-trips,
and hostile logs and rules get one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_state_equal, world_pool
from frontier_rft import SELECTORS, Feedback, TaskPool, make_selector
from frontier_rft.cli.main import main
from frontier_rft.selectors.uniform import UniformSelector
from frontier_rft.training.shadows import (
    CAVEAT,
    build_shadow,
    load_shadow,
    replay,
    replay_table,
    reward_record,
    save_shadow,
    shadow_config,
)
from frontier_rft.wrappers.shadow import Shadow, ShadowConfig

WALKERS = tuple(sorted(name for name, cls in SELECTORS.items() if cls.walks_windows()))
"""Every selector that walks the data answers keeps (discovered, so a new one is checked)."""


def _trained(name: str, seed: int = 3):  # type: ignore[no-untyped-def]
    """A selector past its first epoch, with streaks and posteriors to skip by."""
    pool = world_pool(30)
    sel = make_selector(name, pool, seed=seed)
    rng = np.random.default_rng(0)
    for step in range(8):
        ids = sel.select_window(10)
        rewards = (rng.random((ids.size, 4)) < (ids % 3 == 0)[:, None] * 1.0).astype(float)
        sel.update(Feedback(np.repeat(ids, 4), rewards.reshape(-1), step=step))
    sel.flush()
    return sel


# ---------------------------------------------------------------------------- keeps
@pytest.mark.parametrize("name", WALKERS)
def test_keeps_is_the_rule_select_window_applies(name: str) -> None:
    """On the window select_window would walk, keeps decides the same and leaves the
    selector (RNG, walk, clock) where select_window leaves it: one rule, one home."""
    a, b = _trained(name), _trained(name)
    walk = a._walk
    assert walk.left >= 6  # the window stays inside the epoch
    window = walk.order[walk.cursor : walk.cursor + 6].copy()
    mask = a.keeps(window)
    taken = b.select_window(6)
    if mask.any():
        assert taken.tolist() == window[mask].tolist()
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
        assert a._walk.cursor == b._walk.cursor and a._walk.epoch == b._walk.epoch
    if name == "uniform":
        assert mask.all()


def test_keeps_refuses_bad_ids_and_non_walkers_changing_nothing() -> None:
    sel = _trained("greso")
    before = sel.state_dict()
    for bad in ([], [0, 0], [-1], [30], [[1, 2]], [0.5]):
        with pytest.raises(ValueError, match="keeps expects"):
            sel.keeps(np.array(bad))
    assert_state_equal(sel.state_dict(), before)
    with pytest.raises(ValueError, match="does not walk the data"):
        make_selector("bots", world_pool(30)).keeps(np.array([0, 1]))


# ---------------------------------------------------------------------------- hand counts
def test_screen_counts_equal_hand_computed() -> None:
    shadow = Shadow(ShadowConfig(screen=2), None, pool_size=4)
    # pass 1: an easy group, a mixed one whose first 2 agree, a mixed one continued, a hard one
    groups = [[1, 1, 1, 1], [0, 0, 1, 0], [1, 0, 1, 1], [0, 0, 0, 0]]
    shadow.observe(0, np.array([0, 1, 2, 3]), np.array(groups, dtype=float).reshape(-1), 4)
    m = shadow.metrics()
    # spent 2 + 2 + 4 + 2 of 16; 3 left out, 2 of them zero-variance; the mixed one lost
    # holds |A| 1.5/std as the continued one does: half the step's
    assert m["rollouts_saved"] == 6 and m["rollouts_saved_step"] == 6
    assert m["screened_out"] == 3 and m["skipped"] == 0
    assert m["skip_precision"] == pytest.approx(2 / 3)
    assert m["informative_lost"] == 1
    assert m["abs_advantage_lost_share"] == pytest.approx(0.5)
    # pass 2 (4 prompts drawn so far): one mixed continued, one mixed screened out
    shadow.observe(1, np.array([2, 0]), np.array([0, 1, 0, 1, 1, 1, 0, 0.0]), 4)
    m = shadow.metrics()
    assert m["epoch"] == 2 and m["rollouts_saved_epoch"] == 2 and m["rollouts_saved"] == 8
    assert m["rollouts_saved_share"] == pytest.approx(8 / 24)
    assert m["skip_precision"] == pytest.approx(2 / 4)
    assert m["informative_lost"] == 2 and m["informative_lost_step"] == 1
    assert m["abs_advantage_lost_share"] == pytest.approx(0.5)
    first, second, total = shadow.passes()
    assert (first["pass"], first["rollouts_saved"], second["rollouts_saved"]) == (1, 6, 2)
    assert total["pass"] == 0 and total["steps"] == 2 and total["rollouts"] == 24


class _SkipOdd(UniformSelector):
    """A scripted skip: passes over odd prompts that have had a group (a hand-checkable rule)."""

    def _keeps(self, ids):  # type: ignore[no-untyped-def]
        super()._keeps(ids)
        return ~((ids % 2 == 1) & (self._times_seen[ids] > 0))

    def _observe(self, batch):  # type: ignore[no-untyped-def]
        self._times_seen[batch.task_ids] += batch.counts


def _scripted(screen: int = 0) -> Shadow:
    sel = _SkipOdd(TaskPool(num_tasks=4))
    sel._times_seen = np.zeros(4, dtype=np.int64)
    return Shadow(ShadowConfig(selector="uniform", screen=screen), sel, pool_size=4)


def test_skip_counts_and_feedback_equal_hand_computed() -> None:
    shadow = _scripted(screen=2)
    groups = {0: [1, 1, 1, 1], 1: [0, 0, 0, 0], 2: [0, 1, 1, 1], 3: [0, 0, 1, 0]}

    def step(t: int, ids: list[int]) -> dict[str, float]:
        shadow.observe(t, np.array(ids), np.concatenate([groups[i] for i in ids]) * 1.0, 4)
        return shadow.metrics()

    m = step(0, [0, 1, 2, 3])  # nothing seen: all kept; screen 2 leaves out 0, 1, 3
    assert (m["skipped"], m["screened_out"], m["rollouts_saved"]) == (0, 3, 6)
    # the rule saw 2 rewards of 0, 1 and 3 and all 4 of 2 (its kept groups, as screened)
    assert shadow.selector._times_seen.tolist() == [2, 2, 4, 2]
    m = step(1, [3, 2, 1, 0])  # odd prompts 3 and 1 skipped; 0 screened out, 2 continued
    assert (m["skipped"], m["screened_out"], m["rollouts_saved_step"]) == (2, 4, 16 - 6)
    # left out this step: 3 (mixed), 1 (hard), 0 (easy) -> precision so far 4 of 6
    assert m["informative_lost_step"] == 1 and m["informative_lost"] == 2
    assert m["skip_precision"] == pytest.approx(4 / 6)
    assert shadow.selector._times_seen.tolist() == [4, 2, 8, 2]
    m = step(2, [1, 3])  # both skipped: charged one group's first round (2 rollouts)
    assert m["rollouts_saved_step"] == 8 - 2 and m["skipped"] == 4


def test_greso_shadow_skips_nothing_in_the_first_pass_and_folds_what_it_saw() -> None:
    pool = TaskPool(num_tasks=6)
    shadow = build_shadow(shadow_config("greso+screen2"), pool, seed=0)
    ids = np.arange(6)
    rewards = np.tile([1.0, 1.0, 0.0, 1.0], 6)  # first 2 agree: all screened out
    shadow.observe(0, ids, rewards, 4)
    m = shadow.metrics()
    assert m["skipped"] == 0 and m["screened_out"] == 6 and m["rollouts_saved"] == 12
    assert m["skip_precision"] == 0.0  # all six were mixed over their 4
    # greso was fed 2 rewards per group, all 1: six easy streaks of one
    assert shadow.selector.metrics()["feedback/rollouts"] == 12
    assert shadow.selector.metrics()["greso/easy_streak_tasks"] == 6


# ---------------------------------------------------------------------------- state
def test_state_round_trips_and_resumes_exactly(tmp_path: Path) -> None:
    pool = TaskPool(num_tasks=8)
    config = shadow_config("greso+screen2")
    rng = np.random.default_rng(1)
    steps = [(rng.permutation(8)[:4], (rng.random(16) < 0.5) * 1.0) for _ in range(12)]
    straight = build_shadow(config, pool, seed=5)
    for t, (ids, r) in enumerate(steps):
        straight.observe(t, ids, r, 4)
    half = build_shadow(config, pool, seed=5)
    for t, (ids, r) in enumerate(steps[:7]):
        half.observe(t, ids, r, 4)
    save_shadow(half, tmp_path / "s.npz")
    resumed = load_shadow(tmp_path / "s.npz", config, pool)
    for t, (ids, r) in enumerate(steps[7:], start=7):
        resumed.observe(t, ids, r, 4)
    assert resumed.metrics() == pytest.approx(straight.metrics(), nan_ok=True)
    assert_state_equal(resumed.state_dict(), straight.state_dict())
    with pytest.raises(ValueError, match="holds shadow 'greso\\+screen2', not 'greso'"):
        load_shadow(tmp_path / "s.npz", shadow_config("greso"), pool)


def test_rejected_steps_change_nothing() -> None:
    shadow = build_shadow(shadow_config("greso+screen2"), TaskPool(num_tasks=4), seed=0)
    before = shadow.state_dict()
    for ids, rewards, n, match in [
        ([0, 1], [1.0] * 4, 2, "needs groups of more than 2"),
        ([0, 0], [1.0] * 8, 4, "distinct ids"),
        ([0, 9], [1.0] * 8, 4, "distinct ids"),
        ([0, 1], [1.0] * 7, 4, "finite rewards"),
        ([0, 1], [np.nan] * 8, 4, "finite rewards"),
        ([0, 1], [2.0] * 8, 4, "must lie in"),
    ]:
        with pytest.raises(ValueError, match=match):
            shadow.observe(0, np.array(ids), np.array(rewards), n)
    assert_state_equal(shadow.state_dict(), before)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "non-empty"),
        ("gerso", "did you mean 'greso'"),
        ("bots", "re-draws from the whole pool"),
        ("screen1", "k >= 2"),
        ("greso+skip", "cannot read 'skip'"),
        ("screen4+screen2", "cannot read 'screen2'"),
        ("greso+", "cannot read ''"),
        (["greso"], "non-empty string"),
    ],
)
def test_rules_are_refused_in_one_line(text: object, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        shadow_config(text)
    assert "\n" not in str(info.value)


def test_rule_names_round_trip() -> None:
    for text in ("greso", "skip", "screen4", "greso+screen4", "screen4+greso"):
        config = shadow_config(text)
        assert shadow_config(config.name) == config
    assert shadow_config("screen4+greso").name == "greso+screen4"


# ---------------------------------------------------------------------------- replay
def _log(path: Path, steps: int = 10, pool: int = 6, batch: int = 3, seed: int = 0) -> list:
    rng = np.random.default_rng(2)
    rows, lines = [], []
    order = np.concatenate([rng.permutation(pool) for _ in range(steps)])
    for t in range(steps):
        ids = order[t * batch : (t + 1) * batch]
        r = (rng.random((batch, 4)) < (ids[:, None] % 3) / 2).astype(float)
        rows.append((ids, r))
        lines.append(reward_record(t, pool, seed, ids, r))
    path.write_text("".join(lines))
    return rows


def test_replay_is_live_shadows_fed_the_same_steps(tmp_path: Path) -> None:
    rows = _log(tmp_path / "rewards.jsonl", seed=4)
    replayed = replay(tmp_path / "rewards.jsonl", ["greso", "screen2", "greso+screen2"])
    for shadow in replayed:
        live = build_shadow(shadow.config, TaskPool(num_tasks=6), seed=4)
        for t, (ids, r) in enumerate(rows):
            live.observe(t, ids, r.reshape(-1), 4)
        np.testing.assert_equal(live.passes(), shadow.passes())
        assert_state_equal(live.state_dict(), shadow.state_dict())
    table = replay_table(replayed)
    assert table.count("| greso |") == 6  # five passes of 6 prompts, and all


def test_replay_command_prints_the_table_and_the_caveat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log(tmp_path / "rewards.jsonl")
    log = str(tmp_path / "rewards.jsonl")
    assert main(["shadow", "replay", log, "--rule", "greso", "--rule", "screen2"]) == 0
    out = capsys.readouterr().out
    assert "| screen2 | all |" in out and CAVEAT in out


def _line(**fields: object) -> str:
    record = {"step": 0, "pool_size": 4, "seed": 0, "task_ids": [0, 1]}
    record["rewards"] = [[1.0, 0.0], [0.0, 0.0]]
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v != "DROP"}) + "\n"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "holds no step"),
        (_line()[:-9], "is cut off .* delete that line"),
        ("{not json\n", "is not JSON"),
        ("[1, 2]\n", "is not a JSON object"),
        (_line(task_ids="DROP"), "has no 'task_ids': a replay needs the prompt of each group"),
        (_line(rewards="DROP"), "has no 'rewards'"),
        (_line(task_ids=[0, 0]), "repeats a prompt"),
        (_line(task_ids=[0, -1]), "task_ids must be"),
        (_line(rewards=[[1.0], [0.0]]), "group size >= 2"),
        (_line(rewards=[[1.0, 0.0], [0.0]]), "group size >= 2"),
        (_line(rewards=[[1.0, "x"], [0.0, 1.0]]), "finite numbers"),
        (_line(step=3), "starts to step 3, not 0"),
        (_line() + _line(step=2), "jumps from step 0 to step 2"),
        (_line() + _line(step=1, seed=9), "differs from line 1"),
        (_line(pool_size="DROP"), "names no pool_size; pass --pool-size"),
        (_line(task_ids=[0, 7]), "outside a pool of 4"),
        (_line(rewards=[[1.0, 5.0], [0.0, 0.0]]), "rewards must lie in"),
        ("[" * 100 + "\n", "is not JSON"),
    ],
)
def test_hostile_logs_get_one_line_errors(
    text: str, match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rewards.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        replay(path, ["greso"])
    assert main(["shadow", "replay", str(path), "--rule", "greso"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err


def test_too_large_and_missing_logs_and_unreplayable_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.training.shadows as shadows

    path = tmp_path / "rewards.jsonl"
    path.write_text(_line())
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 10)
    with pytest.raises(ValueError, match="more than the 10 a replay reads; replay its first"):
        replay(path, ["greso"])
    monkeypatch.setattr(shadows, "MAX_LINE_CHARS", 10)
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 1 << 20)
    with pytest.raises(ValueError, match="longer than 10 characters"):
        replay(path, ["greso"])
    with pytest.raises(ValueError, match="cannot read it"):
        replay(tmp_path / "none.jsonl", ["greso"])
    with pytest.raises(ValueError, match="reads prompt features or text"):
        replay(path, ["skip"])
    with pytest.raises(ValueError, match="name a rule"):
        replay(path, [])


def test_replay_figure_is_written_and_bad_paths_get_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    _log(tmp_path / "rewards.jsonl")
    log = str(tmp_path / "rewards.jsonl")
    png = tmp_path / "shadow.png"
    rules = ["--rule", "greso", "--rule", "screen2"]
    assert main(["shadow", "replay", log, *rules, "--figure", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Figure: {png}" in capsys.readouterr().out
    (tmp_path / "file").write_text("")
    for bad, match in [
        (tmp_path / "out.pdf", "ending in .png"),
        (tmp_path / "none" / "out.png", "does not exist"),
        (tmp_path / "file" / "out.png", "does not exist"),
        (tmp_path / "dir.png", "is a directory"),
    ]:
        if bad.name == "dir.png":
            bad.mkdir()
        assert main(["shadow", "replay", log, *rules, "--figure", str(bad)]) == 2
        captured = capsys.readouterr()
        assert match in captured.err and len(captured.err.strip().splitlines()) <= 2
        assert "Traceback" not in captured.err and "| greso |" not in captured.out
