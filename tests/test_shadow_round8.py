"""`frontier shadow replay` after issue 91's review: gzipped verl step files are read and a
dump rotated into `1.jsonl`, `2.jsonl.gz`, ... replays every step (items 8, 23); an archive
or a gzipped parquet file is refused in one line that says what is read (item 8); a replay of
a one-reward table names its column, and a misspelt --reward-column gets a did-you-mean
(item 10); a reward log replays `skip` over the pool's prompts given beside it (item 5)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import sys
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.cli.main import main
from frontier_rft.shadow import reward_record, shadow_config
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.replay import evidence_note, read_prompts, replay, reward_note

_TEXTS = [
    "Spell a river.",
    "Count the vowels in banana.",
    "Translate hello into French.",
    "Which planet is largest?",
    "Reverse the word stressed.",
    "List three prime numbers, smallest first.",
]
"""Six prompts whose text features differ (digits read as '0' would not)."""


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err
    return err


def _rows(steps: int = 6, batch: int = 3, pool: int = 6) -> list:
    """Per step: `batch` prompt ids walking the pool in order, and their groups of 4 rewards
    (prompt i solved at rate (i mod 3) / 2: every third prompt never, so skip has some)."""
    rng = np.random.default_rng(2)
    walk = [[(t * batch + i) % pool for i in range(batch)] for t in range(steps)]
    return [(ids, (rng.random((batch, 4)) < np.array(ids)[:, None] % 3 / 2) * 1.0) for ids in walk]


def _verl_lines(rows: list, t: int) -> str:
    ids, r = rows[t]
    return "".join(
        json.dumps({"input": _TEXTS[i], "output": "x" * (i + 1), "score": s, "step": t + 1}) + "\n"
        for i, group in zip(ids, r, strict=True)
        for s in group
    )


def _verl(out: Path, rows: list, packed: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    """verl's rollout_data_dir, the steps in `packed` gzipped as log rotation leaves them."""
    out.mkdir()
    for t in range(len(rows)):
        text = _verl_lines(rows, t)
        if t + 1 in packed:
            (out / f"{t + 1}.jsonl.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (out / f"{t + 1}.jsonl").write_text(text)
    return out


def _passes(shadows: list) -> str:
    return json.dumps([s.passes() for s in shadows])


# ---------------------------------------------------------------------------- items 8, 23
def test_a_verl_dump_of_gzipped_or_rotated_step_files_replays_every_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    want = _passes(replay(_verl(tmp_path / "plain", rows), ["greso", "screen2"]))
    every = set(range(1, len(rows) + 1))
    for name, packed in (("gz", every), ("rotated", every - {1})):
        log = _verl(tmp_path / name, rows, packed)
        for fmt in (None, "verl"):
            shadows = replay(log, ["greso", "screen2"], log_format=fmt)
            assert shadows[0].passes()[-1]["steps"] == len(rows), (name, fmt)
            assert _passes(shadows) == want
        assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 0
        assert f"Replay of {log}: {len(rows)} steps" in capsys.readouterr().out


def test_a_step_in_two_files_or_compressed_otherwise_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(steps=3)
    twice = _verl(tmp_path / "twice", rows)
    (twice / "2.jsonl.gz").write_bytes(gzip.compress(_verl_lines(rows, 1).encode()))
    with pytest.raises(ValueError, match=r"step 2 is in both 2.jsonl and 2.jsonl.gz") as err:
        replay(twice, ["greso"])
    assert "\n" not in str(err.value)
    other = _verl(tmp_path / "other", rows)
    (other / "3.jsonl").rename(other / "3.jsonl.bz2")
    with pytest.raises(ValueError, match=r"3.jsonl.bz2: .*<step>.jsonl or <step>.jsonl.gz"):
        replay(other, ["greso"])
    for log in (twice, other):
        assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 2
        _one_line(capsys)


def _tar_gz(path: Path, folder: Path) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    path.write_bytes(buffer.getvalue())
    return path


def test_an_archive_or_a_gzipped_parquet_is_refused_saying_what_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = _rows(steps=2)
    completions = tmp_path / "run" / "completions"
    completions.mkdir(parents=True)
    for t, (ids, r) in enumerate(rows):
        table = [
            {"step": t + 1, "prompt": _TEXTS[i], "completion": "c", "accuracy": float(x)}
            for i, group in zip(ids, r, strict=True)
            for x in group
        ]
        pd.DataFrame(table).to_parquet(completions / f"completions_{t + 1:05d}.parquet")
    replay(tmp_path / "run", ["greso"])  # the unpacked log replays
    archive = _tar_gz(tmp_path / "completions.tar.gz", completions)
    renamed = tmp_path / "log.bin"  # no telling name: the archive's own bytes tell
    renamed.write_bytes(archive.read_bytes())
    verl_archive = _tar_gz(tmp_path / "dump.tgz", _verl(tmp_path / "dump", rows))
    one = completions / "completions_00001.parquet"
    gzipped = tmp_path / "completions_00001.parquet.gz"
    gzipped.write_bytes(gzip.compress(one.read_bytes()))
    packed_dir = tmp_path / "packed" / "completions"
    packed_dir.mkdir(parents=True)
    (packed_dir / gzipped.name).write_bytes(gzipped.read_bytes())
    cases = [
        (archive, "a tar archive", "tar xzf"),
        (renamed, "a tar archive", "tar xzf"),
        (verl_archive, "a tar archive", "tar xzf"),
        (gzipped, "a gzipped parquet file", "gunzip"),
        (tmp_path / "packed", "a gzipped parquet file", "gunzip"),
    ]
    for log, what, fix in cases:
        for fmt in (None, "trl") if log.is_dir() else (None, "trl", "verl"):
            with pytest.raises(ValueError, match=what) as err:
                replay(log, ["greso"], log_format=fmt)
            message = str(err.value)
            assert "\n" not in message and fix in message, message
            assert "gzip is read for single JSON-lines and CSV files" in message
        assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 2
        assert what in _one_line(capsys)


def test_a_gzipped_csv_table_replays_as_the_plain_one(tmp_path: Path) -> None:
    rows = _rows(steps=3)
    plain, packed = tmp_path / "table.csv", tmp_path / "table.csv.gz"
    with open(plain, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "prompt", "completion", "accuracy"])
        for t, (ids, r) in enumerate(rows):
            for i, group in zip(ids, r, strict=True):
                writer.writerows([t + 1, _TEXTS[i], "c", x] for x in group)
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert _passes(replay(packed, ["greso"])) == _passes(replay(plain, ["greso"]))


# ---------------------------------------------------------------------------- item 10
def _table(path: Path, column: str = "accuracy", **extra: object) -> Path:
    rows = _rows(steps=3)
    path.write_text(
        "".join(
            json.dumps({"step": t + 1, "prompt": _TEXTS[i], "completion": "c", column: x, **extra})
            + "\n"
            for t, (ids, r) in enumerate(rows)
            for i, group in zip(ids, r, strict=True)
            for x in group.tolist()
        )
    )
    return path


def test_a_one_reward_table_names_its_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _table(tmp_path / "table.jsonl")
    note = reward_note(log)
    assert note is not None and note.startswith("reward: 1 x accuracy: "), note
    assert "the table's one column besides step, prompt, completion and advantage" in note
    assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 0
    assert "reward: 1 x accuracy: " in capsys.readouterr().out


def test_a_misspelt_reward_column_gets_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    log = _table(tmp_path / "table.jsonl", advantage=0.0)
    parquet = tmp_path / "completions_00001.parquet"
    pd.read_json(log, lines=True).query("step == 1").to_parquet(parquet)
    for path in (log, parquet):
        with pytest.raises(ValueError, match=r"no reward column 'acuracy' \(did you mean "):
            replay(path, ["greso"], rewards=[("acuracy", 1.0)])
        args = ["shadow", "replay", str(path), "--rule", "greso", "--reward-column", "acuracy"]
        assert main(args) == 2
        assert "did you mean 'accuracy'?" in _one_line(capsys)


# ---------------------------------------------------------------------------- item 5
def _log(path: Path, rows: list, pool: int = 6, seed: int = 0) -> Path:
    path.write_text(
        "".join(reward_record(t, pool, seed, np.array(i), r) for t, (i, r) in enumerate(rows))
    )
    return path


def _prompts(path: Path, texts: list) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_a_reward_log_replays_skip_over_the_pools_prompts_as_a_live_shadow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, rules = _rows(steps=12), ["skip", "skip+screen2", "greso"]
    pool = TaskPool(num_tasks=6, prompts=_TEXTS)
    live = RunShadows([shadow_config(r) for r in rules], make_selector("uniform", pool), 0)
    for t, (ids, r) in enumerate(rows):
        live.observe(t, np.repeat(np.array(ids), 4), r.reshape(-1), 4)
    assert live.shadows[0].passes()[-1]["skipped"] > 0
    log = _log(tmp_path / "rewards.jsonl", rows)
    with pytest.raises(ValueError, match=r"--prompts FILE"):  # the route is named
        replay(log, ["skip"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        replayed = replay(log, rules, prompts=tuple(_TEXTS))
    assert _passes(replayed) == _passes(live.shadows)
    assert replayed[0].selector is not None and replayed[0].selector.pool.prompts == tuple(_TEXTS)
    file = _prompts(tmp_path / "prompts.jsonl", _TEXTS)
    assert main(["shadow", "replay", str(log), "--rule", "skip", "--prompts", str(file)]) == 0
    out = capsys.readouterr().out
    assert "| skip | all |" in out and f"derived from the text of {file}" in out
    assert evidence_note(replayed, log, prompts=str(file)).startswith("features (skip, skip+")
    # a chat conversation reads as the adapters' pools hold it; a .gz as it is
    chats = [[{"role": "user", "content": t}] for t in _TEXTS]
    packed = tmp_path / "chats.jsonl.gz"
    packed.write_bytes(gzip.compress(_prompts(tmp_path / "c.jsonl", chats).read_bytes()))
    assert main(["shadow", "replay", str(log), "--rule", "skip", "--prompts", str(packed)]) == 0
    capsys.readouterr()


def test_a_prompts_file_that_is_not_the_logs_pool_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(steps=2)
    log = _log(tmp_path / "rewards.jsonl", rows)
    with pytest.raises(ValueError, match=r"--prompts gives 5 prompts; the log's pool holds 6"):
        replay(log, ["skip"], prompts=tuple(_TEXTS[:5]))
    short = _prompts(tmp_path / "short.jsonl", _TEXTS[:5])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"a"\n{"x": 1}\n')
    empty = _prompts(tmp_path / "empty.jsonl", [])
    cases = [
        (short, r"gives 5 prompts; the log's pool holds 6"),
        (bad, r"bad.jsonl: line 2 is not a prompt"),
        (empty, r"empty.jsonl: holds no prompt"),
        (tmp_path / "none.jsonl", r"none.jsonl: cannot read it"),
    ]
    for path, match in cases:
        if path != short:
            with pytest.raises(ValueError, match=match) as err:
                read_prompts(path)
            assert "\n" not in str(err.value)
        assert main(["shadow", "replay", str(log), "--rule", "skip", "--prompts", str(path)]) == 2
        assert re.search(match, _one_line(capsys))
    verl = _verl(tmp_path / "verl", rows)
    with pytest.raises(ValueError, match=r"--prompts gives a rewards.jsonl's pool"):
        replay(verl, ["skip"], prompts=tuple(_TEXTS))


@pytest.mark.filterwarnings("ignore::frontier_rft.features.derive.EvidenceWarning")
def test_the_end_of_run_line_quotes_the_yardstick_measured_by_the_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'Switch when the shadow shows little lost' has a number: the yardstick the committed
    benchmark measured, per regime, quoted where the run ends and where the replay ends."""
    from frontier_rft.shadow.live import SWITCH_YARDSTICK, switch_note

    result = json.loads(
        (
            Path(__file__).resolve().parents[1] / "benchmarks/results/shadow_yardstick.json"
        ).read_text()
    )
    for name, regime in result["regimes"].items():
        mean = regime["all"]["abs_advantage_lost_share"]["mean"]
        assert f"{mean:.0%} (`{name}`" in SWITCH_YARDSTICK, (name, mean)
    assert "SmolLM2" in SWITCH_YARDSTICK and "fast-format-lr4" in SWITCH_YARDSTICK
    docs = (Path(__file__).resolve().parents[1] / "docs/shadow.md").read_text()
    assert SWITCH_YARDSTICK.split(":", 1)[1].strip()[:60] in " ".join(docs.split())
    # the line is said where a skip shadow is shown, and only there
    pool = TaskPool(num_tasks=6, prompts=_TEXTS)
    live = RunShadows([shadow_config("skip")], make_selector("uniform", pool), 0)
    rows = _rows(steps=4)
    for t, (ids, r) in enumerate(rows):
        live.observe(t, np.repeat(np.array(ids), 4), r.reshape(-1), 4)
    assert SWITCH_YARDSTICK in live.summary()
    assert switch_note(["greso", "screen4"]) == ""
    greso = RunShadows([shadow_config("greso")], make_selector("uniform", pool), 0)
    assert SWITCH_YARDSTICK not in greso.summary()
    log = _log(tmp_path / "rewards.jsonl", rows)
    file = _prompts(tmp_path / "prompts.jsonl", _TEXTS)
    assert main(["shadow", "replay", str(log), "--rule", "skip", "--prompts", str(file)]) == 0
    assert SWITCH_YARDSTICK in capsys.readouterr().out
    assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 0
    assert SWITCH_YARDSTICK not in capsys.readouterr().out


def test_the_committed_yardstick_is_rebuilt_from_the_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One seed per regime replayed again gives the committed figures (the whole benchmark,
    `python benchmarks/shadow_yardstick.py`, takes minutes)."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "shadow_yardstick", root / "benchmarks" / "shadow_yardstick.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, script)  # its dataclass looks itself up
    spec.loader.exec_module(script)
    committed = json.loads((root / "benchmarks/results/shadow_yardstick.json").read_text())
    assert [r.name for r in script.REGIMES] == list(committed["regimes"])
    regime = script.REGIMES[-1]
    seed, record, log = script.uniform_runs(regime)[0]
    got = json.loads(json.dumps(script.replay_seed(record, log)))
    assert got == committed["regimes"][regime.name]["per_seed"][str(seed)]
    # a pool that does not regenerate as the run's is refused, not replayed
    bad = script.read_record(record)
    bad["info"]["config"]["train_seed"] += 1
    with pytest.raises(SystemExit, match="not the run's pool"):
        script.pool_prompts(bad)
