"""Shadows (shadow/rule.py) and the reward-log replay (shadow/replay.py): the keep rule
is the selector's own, counts on scripted pools equal hand-computed ones, state round-trips,
and hostile logs and rules get one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import SELECTORS, Feedback, TaskPool, make_selector
from frontier_rft.cli.main import main
from frontier_rft.selectors.uniform import UniformSelector
from frontier_rft.shadow import (
    build_shadow,
    load_shadow,
    replay_table,
    reward_record,
    save_shadow,
    shadow_config,
)
from frontier_rft.shadow.replay import CAVEAT, replay
from frontier_rft.shadow.rule import Shadow, ShadowConfig
from helpers import assert_state_equal, world_pool

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
    while a._walk.left < 6:  # a window inside one epoch (a skip may end it early)
        a.select_window(1), b.select_window(1)
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


def test_the_ledgers_gzipped_reward_logs_replay_as_the_plain_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench-rl --reward-log keeps uniform's logs gzipped in the ledger
    (seed<s>.rewards.jsonl.gz): replay reads them as they are, bounds what they expand to, and
    refuses a broken one in one line."""
    import gzip

    import frontier_rft.shadow.replay as shadows

    text = "".join(_line(step=s, task_ids=[s % 4, (s + 1) % 4]) for s in range(6))
    plain, packed = tmp_path / "rewards.jsonl", tmp_path / "seed3.rewards.jsonl.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    renamed = tmp_path / "a_log"  # no telling name: the gzip magic and the first line tell
    renamed.write_bytes(packed.read_bytes())
    want = json.dumps([shadow.passes() for shadow in replay(plain, ["greso"])])  # nan == nan
    assert '"steps": 6.0' in want  # the total row, after three passes over the 4 prompts
    for path in (packed, renamed):
        assert json.dumps([shadow.passes() for shadow in replay(path, ["greso"])]) == want
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", len(text) // 2)  # > the .gz's own size
    assert packed.stat().st_size <= len(text) // 2
    with pytest.raises(ValueError, match=r"decompresses to more than the \d+ bytes a replay"):
        replay(packed, ["greso"])
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 1 << 20)
    broken = tmp_path / "cut.rewards.jsonl.gz"
    broken.write_bytes(packed.read_bytes()[:-12])
    with pytest.raises(ValueError, match="not a whole gzip file"):
        replay(broken, ["greso"])
    assert main(["shadow", "replay", str(broken), "--rule", "greso"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err


def test_too_large_and_missing_logs_and_unreplayable_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.shadow.replay as shadows

    path = tmp_path / "rewards.jsonl"
    path.write_text(_line())
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 10)
    with pytest.raises(ValueError, match="more than the 10 bytes a replay reads; replay its first"):
        replay(path, ["greso"])
    monkeypatch.setattr(shadows, "MAX_LINE_CHARS", 10)
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 1 << 20)
    with pytest.raises(ValueError, match="longer than 10 characters"):
        replay(path, ["greso"])
    with pytest.raises(ValueError, match="cannot read it"):
        replay(tmp_path / "none.jsonl", ["greso"], log_format="frontier")
    with pytest.raises(ValueError, match=r"none.jsonl does not exist"):
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


# ---------------------------------------------------------------------------- TRL and verl logs
_PROMPTS = [f"Use 3, 5 and 7 to make {t}." for t in range(6)]


def _trl_rows(rows: list, step0: int = 1) -> list[dict]:
    """TRL's completions table of each step (GRPOTrainer.log): one row per completion, the
    prompt's text, a reward column per function (here `correct` + `format` = the reward)."""
    tables = []
    for t, (ids, r) in enumerate(rows):
        table = []
        for i, group in zip(ids, r, strict=True):
            for j, reward in enumerate(group):
                fmt = 0.25 * (j % 2)
                table.append(
                    {
                        "step": step0 + t,
                        "prompt": _PROMPTS[i],
                        "completion": f"answer {t}.{j}",
                        "correct": float(reward) - fmt,
                        "format": fmt,
                        "advantage": 0.0,
                    }
                )
        tables.append(table)
    return tables


def _verl_dir(rows: list, path: Path) -> Path:
    """verl's rollout_data_dir: <step>.jsonl per step, a line per sample (_write_generations)."""
    path.mkdir()
    for t, (ids, r) in enumerate(rows):
        lines = [
            json.dumps(
                {"input": _PROMPTS[i], "output": "x", "gts": None, "score": s, "step": t + 1}
            )
            for i, group in zip(ids, r, strict=True)
            for s in group
        ]
        (path / f"{t + 1}.jsonl").write_text("\n".join(lines) + "\n")
    return path


_TOKEN_KEYS = ("token_steps", "tokens", "tokens_saved", "tokens_saved_share")


def _same(a: list, b: list) -> None:
    """The same rollout and signal counts (token counts: the logs' lengths differ in unit)."""
    for x, y in zip(a, b, strict=True):
        assert x.name == y.name
        drop = [{k: v for k, v in p.items() if k not in _TOKEN_KEYS} for p in x.passes()]
        np.testing.assert_equal(
            drop, [{k: v for k, v in p.items() if k not in _TOKEN_KEYS} for p in y.passes()]
        )


def _close(a: list, b: list) -> None:
    """The same counts; the |advantage| shares equal up to GRPO's std epsilon (scale)."""
    for x, y in zip(a, b, strict=True):
        assert x.name == y.name
        for p, q in zip(x.passes(), y.passes(), strict=True):
            assert p == pytest.approx(q, rel=1e-6, nan_ok=True)


def _renumbered(rows: list) -> list:
    """The rewards.jsonl a run would write whose prompts were numbered by first appearance."""
    ids: dict[int, int] = {}
    for step_ids, _ in rows:
        for i in step_ids:
            ids.setdefault(int(i), len(ids))
    return [(np.array([ids[int(i)] for i in s]), r) for s, r in rows]


def test_trl_and_verl_logs_replay_to_the_counts_of_the_same_rewards_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rules = ["greso", "screen2", "greso+screen2"]
    rows = _renumbered(_log(tmp_path / "orig.jsonl"))
    (tmp_path / "rewards.jsonl").write_text(
        "".join(reward_record(t, 6, 0, ids, r) for t, (ids, r) in enumerate(rows))
    )
    want = replay(tmp_path / "rewards.jsonl", rules)
    (tmp_path / "run.jsonl").write_text((tmp_path / "rewards.jsonl").read_text())
    _same(want, replay(tmp_path / "run.jsonl", rules))  # told by its first line
    _same(want, replay(tmp_path, rules))  # the run directory
    out = tmp_path / "trl_out"
    (out / "completions").mkdir(parents=True)
    for t, table in enumerate(_trl_rows(rows)):
        pd.DataFrame(table).to_parquet(out / "completions" / f"completions_{t + 1:05d}.parquet")
    # TRL's trainer_state.json names the reward functions (rewards/<name>/mean)
    history = [{"step": 1, "rewards/correct/mean": 0.5, "rewards/format/mean": 0.1}]
    (out / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    _same(want, replay(out, rules))  # the trainer's output_dir, format detected
    _same(want, replay(out / "completions", rules, log_format="trl"))
    verl = _verl_dir(rows, tmp_path / "rollouts")
    _same(want, replay(verl, rules))
    # a wandb table export, and CSV: the same rows
    tables = _trl_rows(rows)
    names = list(tables[0][0])
    export = tmp_path / "completions.table.json"
    export.write_text(
        "\n".join(
            json.dumps({"columns": names, "data": [list(r.values()) for r in t]}) for t in tables
        )
    )
    both = [("correct", 1.0), ("format", 1.0)]  # no trainer_state.json beside these
    _same(want, replay(export, rules, rewards=both))
    pd.DataFrame([r for t in tables for r in t]).to_csv(tmp_path / "c.csv", index=False)
    _same(want, replay(tmp_path / "c.csv", rules, rewards=both))
    assert main(["shadow", "replay", str(out), "--rule", "screen2"]) == 0
    assert "| screen2 | all |" in capsys.readouterr().out


def test_trl_reward_columns_weights_and_relogged_generations(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = _renumbered(_log(tmp_path / "orig.jsonl", steps=4))
    (tmp_path / "rewards.jsonl").write_text(
        "".join(reward_record(t, 6, 0, ids, r) for t, (ids, r) in enumerate(rows))
    )
    want = replay(tmp_path / "rewards.jsonl", ["screen2"])
    comp = tmp_path / "completions"
    comp.mkdir()
    for t, table in enumerate(_trl_rows(rows)):
        for row in table:  # a log_extra column that is no reward, a None from one function
            row["length"] = 99.0
            row["format"], row["correct"] = None, row["correct"] + row["format"]
        df = pd.DataFrame(table)
        # num_iterations=2: each generation trains (and is logged) twice
        df.assign(step=2 * t + 1).to_parquet(comp / f"completions_{2 * t + 1:05d}.parquet")
        df.assign(step=2 * t + 2).to_parquet(comp / f"completions_{2 * t + 2:05d}.parquet")
    cols = [("correct", 1.0), ("format", 1.0)]
    _same(want, replay(comp, ["screen2"], rewards=cols))
    with pytest.raises(ValueError, match=r"columns correct, format, length may each be"):
        replay(comp, ["greso"])  # `length` is never summed in as a reward
    halved = replay(comp, ["greso"], rewards=[("correct", 0.5)])
    assert halved[0].pool_size == 6
    # a completion no function scored: its group left out, as live TRL shadows leave it out
    unscored = [*_GOOD, *[{**r, "step": 2} for r in _GOOD]]
    unscored[4]["r"] = None
    (tmp_path / "two.jsonl").write_text(
        reward_record(0, 2, 0, np.array([0, 1]), np.array([[1.0, 0.0], [1.0, 1.0]]))
        + reward_record(1, 2, 0, np.array([1]), np.array([[1.0, 1.0]]))
    )
    _same(
        replay(tmp_path / "two.jsonl", ["greso"]), replay(_trl_table(tmp_path, unscored), ["greso"])
    )
    # a new generation that happens to repeat the last one's prompts and rewards is counted
    again = [{**r, "step": 2} for r in _GOOD]
    new = [{**r, "step": 2, "completion": "other"} for r in _GOOD]
    for second, steps in ((again, 1), (new, 2)):
        log = _trl_table(tmp_path, [*_GOOD, *second])
        assert replay(log, ["greso"])[0].passes()[-1]["steps"] == steps


def _trl_table(tmp_path: Path, rows: list[dict], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(step: int = 1, prompt: str = "a", reward: object = 1.0, **more: object) -> dict:
    return {"step": step, "prompt": prompt, "completion": "c", "r": reward, **more}


_GOOD = [_row(), _row(reward=0.0), _row(prompt="b"), _row(prompt="b")]


@pytest.mark.parametrize(
    ("rows", "fmt", "match"),
    [
        ([], "trl", "holds no completion"),
        ([_row(), _row(prompt="b")], "trl", "one completion: .*log_unique_prompts=False"),
        ([*_GOOD, _row(prompt="b")], "trl", "groups of 2 and 3 completions"),
        ([*_GOOD, *[_row(3, **r) for r in ({}, {"reward": 0.0})]], "trl", "step 3 follows step 1"),
        ([{"step": 1, "completion": "c", "r": 1.0}], "trl", "has no 'prompt' column"),
        ([_row(reward="yes")], "trl", "holds 'yes', not a reward; name the reward columns"),
        ([_row(reward=None), _row(reward=None)], "trl", "no prompt has a whole group of scored"),
        ([_row(reward=float("inf")), _row()], "trl", "sums to inf; replay finite rewards"),
        ([_row(step=-1)], "trl", "step must be an int"),
        ([{"step": 1, "prompt": "a", "completion": "c"}], "trl", "no reward column"),
        ([[1, 2]], "trl", "not a row of TRL's completions table"),
        ([{"step": 1, "input": "a"}], "verl", "has no 'score'"),
        ([{"step": 1, "input": "a", "score": "NaN"}], "verl", "score must be a finite number"),
        ([{"prompt_x": 1}], None, "cannot tell which log this is; pass --format"),
    ],
)
def test_hostile_trl_and_verl_logs_get_one_line_errors(
    rows: list, fmt: str | None, match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trl_table(tmp_path, rows)
    with pytest.raises(ValueError, match=match):
        replay(path, ["greso"], log_format=fmt)
    args = ["shadow", "replay", str(path), "--rule", "greso"] + (["--format", fmt] if fmt else [])
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err


def test_cut_off_large_and_unreadable_foreign_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.shadow.foreign_logs as foreign
    import frontier_rft.shadow.replay as shadows

    path = _trl_table(tmp_path, _GOOD)
    replay(path, ["greso"], log_format="trl")  # well-formed
    path.write_text(path.read_text()[:-5])
    with pytest.raises(ValueError, match=r"line 4 is cut off .* delete that line"):
        replay(path, ["greso"], log_format="trl")
    _trl_table(tmp_path, _GOOD)
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 10)  # bytes on disk bound no foreign log
    replay(path, ["greso"], log_format="trl")
    monkeypatch.setattr(foreign, "MAX_ROWS", 2)
    with pytest.raises(ValueError, match="more than 2 completions"):
        replay(path, ["greso"], log_format="trl")
    bad = tmp_path / "completions_00001.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"not a readable parquet file|needs pyarrow"):
        replay(bad, ["greso"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"holds no <step>.jsonl or <step>.jsonl.gz file"):
        replay(tmp_path / "empty", ["greso"], log_format="verl")
    with pytest.raises(ValueError, match="--reward-column names a TRL log's columns"):
        replay(path, ["greso"], log_format="verl", rewards=[("r", 1.0)])
    with pytest.raises(ValueError, match="does not exist"):
        replay(tmp_path / "nowhere", ["greso"])


def test_a_log_of_rewards_outside_the_unit_range_replays_with_its_reward_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = ["greso", "screen2", "greso+screen2"]
    rows = _renumbered(_log(tmp_path / "orig.jsonl"))
    want = replay(_verl_dir(rows, tmp_path / "unit"), rules)
    signed = [(ids, 2.0 * r - 1.0) for ids, r in rows]  # a reward function in [-1, 1]
    verl = _verl_dir(signed, tmp_path / "signed")
    with pytest.raises(
        ValueError, match=r"must lie in \[0, 1\], got \[-1, 1\]; pass --reward"
    ) as err:
        replay(verl, rules)
    assert "\n" not in str(err.value)
    _close(want, replay(verl, rules, reward_range=(-1.0, 1.0)))
    _close(want[1:2], replay(verl, ["screen2"]))  # a screen alone reads any rewards
    command = ["shadow", "replay", str(verl), "--rule", "greso", "--reward-range"]
    assert main([*command, "-1", "1"]) == 0
    assert "| greso | all |" in capsys.readouterr().out
    for bad in (["1", "-1"], ["0"], ["a", "b"], ["0", "inf"]):
        try:
            code = main([*command, *bad])
        except SystemExit as exc:  # argparse's own
            code = exc.code
        assert code == 2
        err = capsys.readouterr().err
        assert "--reward-range" in err and "Traceback" not in err


@pytest.mark.parametrize("name", WALKERS)
def test_passes_over_is_whether_a_window_ever_leaves_a_prompt_out(name: str) -> None:
    """`Selector.passes_over` (read by TRL's rollouts: auto) is what the walk does: a selector
    that declares False keeps every window whole on a pool with all-equal groups; the others
    leave prompts out there."""
    sel = make_selector(name, world_pool(30), seed=1)
    taken = 0
    for step in range(12):  # four epochs of 30, every group all-equal
        ids = sel.select_window(10)
        taken += ids.size
        sel.update(Feedback(np.repeat(ids, 4), np.ones(ids.size * 4), step=step))
    assert (taken == 120) == (not type(sel).passes_over), (name, taken)
