"""`frontier shadow replay` on the logs a new user has: TRL's extra columns never summed into
the reward, a log bounded by its rows rather than its size on disk, TRL's and verl's epochs
and step numbers, `skip` replayed from their prompt text as a live shadow over the same
prompts (and its live route where a log holds no text), a live TRL run's end-of-run summary
read back, and hostile pools and files refused in one line (docs/shadow.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.cli.main import main
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.integrations.pool import PoolColumns, build_pool
from frontier_rft.metrics_log import JsonlLogger
from frontier_rft.shadow import (
    build_shadow,
    replay_table,
    reward_record,
    shadow_config,
)
from frontier_rft.shadow.foreign_logs import MAX_PROMPT_CHARS, MAX_ROWS
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.replay import MAX_POOL, replay
from frontier_rft.shadow.rule import PASS_KEYS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "shadow.md"
_PROMPTS = [f"Use 3, 5 and 7 to make {t}." for t in range(40)]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err
    return err


def _rows(steps: int = 6, batch: int = 3, pool: int = 6, seed: int = 2) -> list:
    """Per step: prompt ids (by first appearance) and their groups of 4 rewards in {0, 1}."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(pool) for _ in range(steps)])
    rows, ids_of = [], {}
    for t in range(steps):
        ids = order[t * batch : (t + 1) * batch]
        r = (rng.random((batch, 4)) < (ids[:, None] % 3) / 2).astype(float)
        rows.append(([ids_of.setdefault(int(i), len(ids_of)) for i in ids], r))
    return rows


def _trl_dir(
    out: Path, rows: list, text: int = 8, prompts: list | None = None, **extra: object
) -> Path:
    """TRL's output_dir: completions/completions_<step>.parquet as GRPOTrainer.log writes
    them (steps from 1; the reward column `accuracy`, then log_extra's, then advantage);
    `prompts[i]` is prompt i's cell (default: _PROMPTS)."""
    prompts = _PROMPTS if prompts is None else prompts
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    (out / "completions").mkdir(parents=True)
    for t, (ids, r) in enumerate(rows):
        table = [
            {
                "step": t + 1,
                "prompt": prompts[i],
                "completion": f"{t}.{j} " + "x" * text,
                "accuracy": float(reward),
                **extra,
                "advantage": 0.0,
            }
            for i, group in zip(ids, r, strict=True)
            for j, reward in enumerate(group)
        ]
        pd.DataFrame(table).to_parquet(out / "completions" / f"completions_{t + 1:05d}.parquet")
    return out


def _trainer_state(out: Path, *names: str) -> None:
    """TRL's trainer_state.json: log_history entries hold rewards/<name>/mean and /std."""
    entry = {"step": 1, "loss": 0.1}
    for name in names:
        entry |= {f"rewards/{name}/mean": 0.5, f"rewards/{name}/std": 0.4}
    (out / "trainer_state.json").write_text(json.dumps({"log_history": [entry]}))


def _rewards_jsonl(path: Path, rows: list, pool: int = 6) -> Path:
    path.write_text(
        "".join(reward_record(t, pool, 0, np.array(ids), r) for t, (ids, r) in enumerate(rows))
    )
    return path


def _same(a: list, b: list) -> None:
    """The same rollout and signal counts per rule and pass (tokens: other units)."""
    np.testing.assert_equal(_passes(a), _passes(b))


def _passes(shadows: list) -> list:
    return [
        [{k: v for k, v in p.items() if not k.startswith("token")} for p in s.passes()]
        for s in shadows
    ]


# ---------------------------------------------------------------------------- 1. extra columns
def test_a_log_extra_column_is_never_summed_into_the_reward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    want = replay(_rewards_jsonl(tmp_path / "rewards.jsonl", rows), ["greso", "screen2"])
    # a reward function that logs the gold answer (log_extra): never a reward
    out = _trl_dir(tmp_path / "run", rows, solution=42.0)
    for reward_range in (None, (0.0, 2.0)):
        with pytest.raises(ValueError, match=r"columns accuracy, solution may each be") as err:
            replay(out, ["greso"], reward_range=reward_range)
        assert "--reward-column" in str(err.value) and "\n" not in str(err.value)
    args = ["shadow", "replay", str(out), "--rule", "greso"]
    for more in ([], ["--reward-range", "0", "2"]):
        assert main([*args, *more]) == 2
        err = _one_line(capsys)
        assert "--reward-column" in err and "--reward-range" not in err
    # named by hand, or by TRL's own trainer_state.json: the replay of the rewards alone
    _same(replay(out, ["greso", "screen2"], rewards=[("accuracy", 1.0)]), want)
    (out / "checkpoint-4").mkdir()
    _trainer_state(out / "checkpoint-4", "accuracy")  # a checkpoint's, the output dir's absent
    _same(replay(out, ["greso", "screen2"]), want)
    _same(replay(out / "completions", ["greso", "screen2"]), want)
    assert main(args) == 0 and "| greso | all |" in capsys.readouterr().out
    # a trainer state naming a function the table lacks: one line naming where it came from
    _trainer_state(out, "accuracy", "format")
    with pytest.raises(ValueError, match=r"no reward column 'format' \(named by .*trainer_state"):
        replay(out, ["greso"])
    (out / "trainer_state.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"trainer_state.json: not TRL's trainer state"):
        replay(out, ["greso"])


# ---------------------------------------------------------------------------- 2. rows, not bytes
def test_a_log_large_on_disk_is_read_by_its_columns_and_bounded_by_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    import frontier_rft.shadow.foreign_logs as foreign
    import frontier_rft.shadow.log_reading as log_reading
    import frontier_rft.shadow.replay as shadows

    rows = _rows()
    # long completions and a long log_extra column: megabytes on disk, 72 completions
    out = _trl_dir(tmp_path / "run", rows, text=20_000, solution="y" * 20_000)
    _trainer_state(out, "accuracy")
    on_disk = sum(f.stat().st_size for f in (out / "completions").iterdir())
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", on_disk // 10)  # the bound of rewards.jsonl
    read: list[list[str]] = []
    batches = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        read.append(list(kwargs["columns"]))  # type: ignore[call-overload]
        return batches(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    want = replay(_rewards_jsonl(tmp_path / "rewards.jsonl", rows), ["screen2"])
    _same(replay(out, ["screen2"]), want)
    assert read and all(cols == ["step", "prompt", "completion", "accuracy"] for cols in read)
    # the bound is on completions read, and its message says what to drop
    monkeypatch.setattr(foreign, "MAX_ROWS", 20)
    with pytest.raises(ValueError, match=r"more than 20 completions.*replay its first steps"):
        replay(out, ["screen2"])
    assert main(["shadow", "replay", str(out), "--rule", "screen2"]) == 2
    assert "completions_<step>.parquet files to a directory" in _one_line(capsys)
    table = tmp_path / "run.table.json"  # a wandb export: a step's table on one line
    table.write_text(json.dumps({"columns": ["step", "prompt", "r"], "data": [[1, "p", 1]] * 9}))
    monkeypatch.setattr(log_reading, "MAX_LINE_CHARS", 50)
    with pytest.raises(
        ValueError, match="longer than 50 characters; replay the run's completions/"
    ):
        replay(table, ["screen2"])


# ---------------------------------------------------------------------------- 3. passes, steps
def _epochs() -> list:
    """Two epochs of a pool of 5 in batches of 2: each epoch drops its remainder (TRL's
    RepeatSampler, verl's drop_last), 2 steps an epoch; the 5th prompt is first seen in the
    second epoch."""
    r = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    return [([0, 1], r), ([2, 3], r), ([4, 0], r), ([1, 2], r)]


def _verl(out: Path, rows: list, prompts: list | None = None) -> Path:
    """verl's rollout_data_dir: <global_step>.jsonl from 1, a line per sample; `prompts[i]`
    is prompt i's decoded text (default: _PROMPTS)."""
    prompts = _PROMPTS if prompts is None else prompts
    out.mkdir()
    for t, (ids, r) in enumerate(rows):
        lines = [
            json.dumps({"input": prompts[i], "output": "x", "score": s, "step": t + 1})
            for i, group in zip(ids, r, strict=True)
            for s in group
        ]
        (out / f"{t + 1}.jsonl").write_text("\n".join(lines) + "\n")
    return out


def test_trl_and_verl_passes_drop_each_epochs_remainder_and_steps_are_the_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _epochs()
    logs = [_trl_dir(tmp_path / "trl", rows), _verl(tmp_path / "verl", rows)]
    for log in logs:
        shadow = replay(log, ["screen2"])[0]
        assert [p["steps"] for p in shadow.passes()] == [2.0, 2.0, 4.0]  # passes 1, 2, all
        assert shadow.pool_size == 5 and shadow.pass_size == 4
    # frontier train's own log walks the whole pool: a pass is its 5 prompts
    frontier = replay(_rewards_jsonl(tmp_path / "rewards.jsonl", rows, pool=5), ["screen2"])[0]
    assert [p["steps"] for p in frontier.passes()] == [3.0, 1.0, 4.0]
    assert main(["shadow", "replay", str(logs[0]), "--rule", "screen2"]) == 0
    assert "a pool of 5 prompts, 4 of them a pass" in capsys.readouterr().out
    # a message names the step as the log does (TRL's and verl's from 1)
    bad = [*rows[:2], (rows[2][0], rows[2][1] * 5.0), rows[3]]
    for log in (_trl_dir(tmp_path / "trl5", bad), _verl(tmp_path / "verl5", bad)):
        with pytest.raises(ValueError, match=r": step 3: shadow 'greso': rewards must lie in"):
            replay(log, ["greso"])


# ---------------------------------------------------------------------------- 4. skip
_TEXTS = [
    "Add 3 and 5.",
    "Multiply the primes below twenty.",
    "Integrate x squared from zero to one.",
    "Name a colour.",
    "Prove that the square root of two is irrational.",
    "Sort these words by length: cat, horse, ox.",
]
"""Six prompts whose text features differ (_PROMPTS differ in digits only, which the
featurizer reads as '0')."""


def _live(rules: list[str], rows: list, prompts: list[str]) -> list:
    """Shadows of `rules` fed `rows` as the TRL adapter feeds them (a rollout each), beside
    uniform over a pool of `prompts` with no features: an adapter's default pool."""
    pool = TaskPool(num_tasks=len(prompts), prompts=prompts)
    live = RunShadows([shadow_config(r) for r in rules], make_selector("uniform", pool), 0)
    for t, (ids, r) in enumerate(rows):
        live.observe(t, np.repeat(np.array(ids), 4), r.reshape(-1), 4)
    return live.shadows


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_skip_replays_from_trl_and_verl_logs_as_a_live_shadow_over_their_prompts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, rules = _rows(steps=12), ["skip", "skip+screen2", "greso"]
    live = _live(rules, rows, _TEXTS)
    assert live[0].passes()[-1]["skipped"] > 0  # the rule has decisions to compare
    for log in (
        _trl_dir(tmp_path / "trl", rows, prompts=_TEXTS),
        _verl(tmp_path / "verl", rows, _TEXTS),
    ):
        with warnings.catch_warnings():  # the replay's note says it instead
            warnings.simplefilter("error", EvidenceWarning)
            replayed = replay(log, rules)
        _same(replayed, live)
        assert replayed[0].selector is not None
        assert replayed[0].selector.evidence["features"] == "text"
        assert replayed[0].selector.pool.prompts == tuple(_TEXTS)
        # the features came from the log's text: over other prompts the live shadow differs
        with pytest.raises(AssertionError):
            _same(replayed[:2], _live(rules[:2], rows, [f"task {w}" for w in "abcdef"]))
        assert main(["shadow", "replay", str(log), "--rule", "skip"]) == 0
        out = capsys.readouterr().out
        assert "| skip | all |" in out
        fmt = "TRL's `prompt` column" if log.name == "trl" else "verl's `input`"
        assert f"features (skip): derived from the text of the log's prompts, {fmt}" in out
        assert "live shadow may differ" in out
    # a rule that reads no features keeps no text and says nothing of features
    assert main(["shadow", "replay", str(tmp_path / "trl"), "--rule", "greso"]) == 0
    assert "features (" not in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_skip_replays_a_conversation_as_the_adapters_pool_holds_it(tmp_path: Path) -> None:
    rows = _rows(steps=4)
    chats = [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
        for text in _TEXTS
    ]
    shadow = replay(_trl_dir(tmp_path / "trl", rows, prompts=chats), ["skip"])[0]
    # the TRL adapter's pool of a dataset whose prompt column holds these conversations
    adapter = build_pool(lambda c: {"prompt": chats}[c], ["prompt"], 6, PoolColumns())
    assert shadow.selector is not None and shadow.selector.pool.prompts == adapter.prompts
    assert adapter.prompts is not None and adapter.prompts[0] == (
        "system: Be brief.\nuser: Add 3 and 5."
    )
    _same([shadow], _live(["skip"], rows, list(adapter.prompts)))
    # a --pool-size beyond the log's prompts: those it never shows have no text
    wider = replay(tmp_path / "trl", ["skip"], pool_size=8)[0]
    assert wider.selector is not None and wider.selector.pool.prompts[6:] == ("", "")


def test_the_prompt_text_kept_for_skip_is_bounded_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import frontier_rft.shadow.foreign_logs as foreign

    rows = _rows()
    logs = [
        _trl_dir(tmp_path / "trl", rows, prompts=_TEXTS),
        _verl(tmp_path / "verl", rows, _TEXTS),
    ]
    monkeypatch.setattr(foreign, "MAX_PROMPT_CHARS", 50)  # the six prompts hold 187
    for log in logs:
        with pytest.raises(ValueError, match=r"more than 50 characters of text") as err:
            replay(log, ["skip"])
        assert "replay its first steps" in str(err.value) and "\n" not in str(err.value)
        assert main(["shadow", "replay", str(log), "--rule", "skip"]) == 2
        assert "more than 50 characters of text" in _one_line(capsys)
        replay(log, ["greso", "screen2"])  # rules that read no text keep none
    assert MAX_PROMPT_CHARS == 1 << 27


def test_skip_names_the_live_route_where_the_log_holds_no_prompt_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _epochs()
    log = _rewards_jsonl(tmp_path / "rewards.jsonl", rows, pool=5)
    for rule in ("skip", "skip+screen2"):
        with pytest.raises(ValueError, match="reads prompt features or text") as err:
            replay(log, [rule])
        assert f"frontier train --shadows {rule}" in str(err.value)
        assert "rewards.jsonl (prompt ids only)" in str(err.value) and "\n" not in str(err.value)
    assert main(["shadow", "replay", str(log), "--rule", "skip"]) == 2
    assert "frontier train --shadows skip" in _one_line(capsys)
    with pytest.raises(ValueError, match=r"names a TRL log's columns; .* is a verl log"):
        replay(_verl(tmp_path / "verl", rows), ["greso"], rewards=[("accuracy", 1.0)])


# ---------------------------------------------------------------------------- 5. live summary
def test_live_shadows_print_the_replays_table_at_the_end_and_replay_reads_it_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(steps=8)
    rules = ["greso", "screen2", "greso+screen2"]
    want = replay(_rewards_jsonl(tmp_path / "rewards.jsonl", rows), rules)
    live = RunShadows(
        [shadow_config(r) for r in rules], make_selector("uniform", TaskPool(num_tasks=6)), 0
    )
    for t, (ids, r) in enumerate(rows):  # as the TRL adapter feeds them: a rollout each
        live.observe(t, np.repeat(np.array(ids), 4), r.reshape(-1), 4)
    table = replay_table(want)
    assert table in live.summary()
    metrics = tmp_path / "out" / "frontier_metrics.jsonl"
    with JsonlLogger(metrics) as logger:  # the adapter's metrics log: per step, then the end
        logger.log(live.metrics(), step=8)
        logger.log({}, step=8, **live.summary_record())
    assert set(live.summary_record()["shadow_passes"]["greso"][0]) == set(PASS_KEYS)
    for given in (metrics, metrics.parent):
        assert main(["shadow", "replay", str(given)]) == 0
        out = capsys.readouterr().out
        assert table in out and "(step 8)" in out and "tokens: not in this log" in out
    # a metrics log without a summary, or with rules asked of it: one line each
    assert main(["shadow", "replay", str(metrics), "--rule", "greso"]) == 2
    assert "--rule cannot apply" in _one_line(capsys)
    metrics.write_text(metrics.read_text().splitlines()[0] + "\n")
    assert main(["shadow", "replay", str(metrics)]) == 2
    assert "holds no end-of-run shadow summary" in _one_line(capsys)
    metrics.write_text('{"step": 1, "time": 0, "shadow_passes": {"greso": [{"pass": 1}]}}\n')
    assert main(["shadow", "replay", str(metrics)]) == 2
    assert "is not a summary of shadows' passes" in _one_line(capsys)
    assert main(["shadow", "replay", str(tmp_path / "rewards.jsonl")]) == 2
    assert "name a rule to replay" in _one_line(capsys)
    assert RunShadows([], make_selector("uniform", TaskPool(num_tasks=6)), 0).summary() == ""


# ---------------------------------------------------------------------------- 6. huge pools
@pytest.mark.parametrize(
    ("pool", "flag"), [(2**33, None), (2**40, None), (4, 10**12), (4, MAX_POOL + 1)]
)
def test_a_huge_pool_is_refused_in_one_line_before_allocating(
    pool: int, flag: int | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "rewards.jsonl"
    log.write_text(reward_record(0, pool, 0, np.array([0, 1]), np.array([[1.0, 0.0]] * 2)))
    more = [] if flag is None else ["--pool-size", str(flag)]
    with pytest.raises(ValueError, match=f"more than the {MAX_POOL:,} prompts a replay holds"):
        replay(log, ["greso"], pool_size=flag)
    assert main(["shadow", "replay", str(log), "--rule", "greso", *more]) == 2
    assert "pass the run's --pool-size" in _one_line(capsys)
    assert build_shadow(shadow_config("greso"), TaskPool(num_tasks=8), 0).pool_size == 8


# ---------------------------------------------------------------------------- 7. not files
def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    return subprocess.run(
        [sys.executable, "-m", "frontier_rft", "shadow", "replay", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,  # a FIFO with no writer would block the read forever
        env=env,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_a_pipe_is_refused_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "rewards.jsonl"
    os.mkfifo(fifo)
    other = tmp_path / "log.jsonl"
    os.mkfifo(other)
    for args in ([str(fifo)], [str(other)], [str(other), "--format", "trl"]):
        done = _cli(*args, "--rule", "greso")
        assert done.returncode == 2, done.stderr
        assert "is not a regular file" in done.stderr and "Traceback" not in done.stderr
    line = reward_record(0, 4, 0, np.array([0, 1]), np.array([[1.0, 0.0]] * 2))
    done = _cli("/dev/stdin", "--format", "frontier", "--rule", "greso", stdin=line)
    assert done.returncode == 2 and "is not a regular file" in done.stderr


# ---------------------------------------------------------------------------- the page
def test_the_page_says_what_the_replay_does() -> None:
    page = DOCS.read_text()
    for fact in (
        "trainer_state.json",
        "log_extra",
        "--reward-column",
        "remainder",
        "from 1",
        "`rollouts: full`",
        "frontier_metrics.jsonl",
        f"{MAX_POOL:,}",
        "regular file",
        f"2^{MAX_ROWS.bit_length() - 1}",
        f"2^{MAX_PROMPT_CHARS.bit_length() - 1}",
        "self_embeddings",
    ):
        assert fact in page, fact
    assert "exceeds 1 GiB" not in page  # only rewards.jsonl has a byte bound


def test_the_pool_size_help_states_the_bound_the_replay_enforces(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from frontier_rft.cli.main import main
    from frontier_rft.shadow.replay import MAX_POOL

    with pytest.raises(SystemExit):
        main(["shadow", "replay", "--help"])
    assert f"at most 2^{MAX_POOL.bit_length() - 1}" in " ".join(capsys.readouterr().out.split())
