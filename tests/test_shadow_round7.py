"""`frontier shadow replay` after issue 83's review: a gzipped log's bound counts what it
decompresses to, blank lines included (item 18); a cut-off .gz is refused naming the
truncation with or without --format (item 22); a gzipped TRL JSON-lines table replays as the
plain one (item 6)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from frontier_rft.cli.main import main
from frontier_rft.shadow import reward_record
from frontier_rft.shadow.replay import replay


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) <= 2 and "Traceback" not in err, err
    return err


def _reward_log(steps: int = 4) -> str:
    import numpy as np

    return "".join(
        reward_record(t, 4, 0, np.array([t % 4, (t + 1) % 4]), np.array([[0, 1], [1, 1.0]]))
        for t in range(steps)
    )


def test_a_gzipped_log_of_blank_lines_is_bounded_by_its_decompressed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One valid step then blank lines: the bound counts the blank lines' bytes, which the
    reader skips (before the fix it counted records and replayed with exit 0)."""
    import frontier_rft.shadow.replay as shadows

    text = _reward_log(1) + "\n" * 200_000
    packed = tmp_path / "seed0.rewards.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    assert packed.stat().st_size < 10_000
    monkeypatch.setattr(shadows, "MAX_LOG_BYTES", 100_000)
    with pytest.raises(ValueError, match=r"decompresses to more than the 100,000 bytes"):
        replay(packed, ["greso"])
    assert main(["shadow", "replay", str(packed), "--rule", "greso"]) == 2
    assert "decompresses to more than" in _one_line(capsys)


def test_a_gzipped_trl_log_of_blank_lines_is_bounded_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.shadow.log_reading as log_reading

    rows = [{"step": 1, "prompt": p, "completion": "c", "r": r} for p in "ab" for r in (0, 1)]
    text = "".join(json.dumps(r) + "\n" for r in rows) + "\n" * 200_000
    packed = tmp_path / "table.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    monkeypatch.setattr(log_reading, "MAX_GZIP_BYTES", 100_000)
    with pytest.raises(ValueError, match=r"decompresses to more than the 100,000 bytes"):
        replay(packed, ["greso"], log_format="trl")


@pytest.mark.parametrize("fmt", [None, "frontier"])
def test_a_cut_off_gz_is_refused_naming_the_truncation_with_or_without_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str | None
) -> None:
    cut = tmp_path / "seed0.rewards.jsonl.gz"
    cut.write_bytes(gzip.compress(_reward_log(40).encode())[:-30])
    with pytest.raises(ValueError, match="cut off before its end"):
        replay(cut, ["greso"], log_format=fmt)
    argv = ["shadow", "replay", str(cut), "--rule", "greso"] + (["--format", fmt] if fmt else [])
    assert main(argv) == 2
    assert "truncated" in _one_line(capsys)


def test_a_gzipped_trl_json_lines_table_replays_as_the_plain_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"step": s, "prompt": p, "completion": f"c{s}{p}{i}", "r": float((s + i) % 2)}
        for s in (1, 2, 3)
        for p in "abc"
        for i in range(2)
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    plain, packed = tmp_path / "table.jsonl", tmp_path / "table.jsonl.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    want = json.dumps([s.passes() for s in replay(plain, ["greso"])])
    assert json.dumps([s.passes() for s in replay(packed, ["greso"])]) == want
    assert json.dumps([s.passes() for s in replay(packed, ["greso"], log_format="trl")]) == want
    assert main(["shadow", "replay", str(packed), "--rule", "greso"]) == 0


def _small_trl(path: Path) -> Path:
    rows = [
        {"step": s, "prompt": f"Use 3 and {p} to make {p * 2}.", "completion": f"c{s}{p}{i}"}
        | {"r": float((s + i + p) % 2)}
        for s in (1, 2, 3, 4)
        for p in range(3)
        for i in range(2)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_trl_replay_takes_the_runs_recorded_seed_and_says_which_seed_it_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from frontier_rft.shadow.run_rewards import write_run_rewards

    log = _small_trl(tmp_path / "out" / "completions" / "table.jsonl")
    assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 0
    assert "Seed of the rules' draws: 0 (the log records none; pass --seed" in (
        capsys.readouterr().out
    )
    write_run_rewards(tmp_path / "out", ["r"], [1.0], seed=7)
    assert [s.seed for s in replay(log, ["greso"])] == [7]
    assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 0
    out = capsys.readouterr().out
    assert "Seed of the rules' draws: 7 (the run's, from" in out and "frontier_rewards.json" in out
    assert main(["shadow", "replay", str(log), "--rule", "greso", "--seed", "3"]) == 0
    assert "Seed of the rules' draws: 3 (--seed)." in capsys.readouterr().out
    write_run_rewards(tmp_path / "out", ["r"], [1.0])  # an older adapter's: no seed
    assert [s.seed for s in replay(log, ["greso"])] == [0]
    (tmp_path / "out" / "frontier_rewards.json").write_text(
        json.dumps({"reward_funcs": ["r"], "reward_weights": [1.0], "seed": -1})
    )
    assert main(["shadow", "replay", str(log), "--rule", "greso"]) == 2
    assert "seed must be an int >= 0" in _one_line(capsys)


def test_a_small_skip_replay_leaks_no_sklearn_warning(tmp_path: Path) -> None:
    import warnings

    log = _small_trl(tmp_path / "t.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay(log, ["skip"])


class _Words:
    """A tokenizer of one token a word."""

    def __call__(self, texts: list[str], **kwargs: object) -> dict:
        return {"input_ids": [t.split() for t in texts]}


def test_tokenizer_progress_gives_the_logs_known_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.cli.shadow as cli_shadow

    log = _small_trl(tmp_path / "t.jsonl")

    def progress(name: str) -> object:
        return cli_shadow._ProgressCount(_Words(), name, every=0.0)

    monkeypatch.setattr(cli_shadow, "_tokenizer_count", progress)
    argv = ["shadow", "replay", str(log), "--rule", "greso", "--tokenizer", "tok"]
    assert main(argv) == 0
    assert "(the log holds 24 completions)" in capsys.readouterr().err


class _Tokenizer:
    """A fast tokenizer's refusal of a lone surrogate (tokenizers' TypeError), one token a
    word."""

    def __call__(self, texts: list[str], **kwargs: object) -> dict:
        for t in texts:
            t.encode("utf-8")  # raises on a lone surrogate, as the Rust tokenizer refuses it
        return {"input_ids": [t.split() for t in texts]}


def test_tokenizer_progress_gives_the_logs_total_and_a_lone_surrogate_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import frontier_rft.cli.shadow as cli_shadow

    rows = [
        {"step": 1, "input": p, "output": text, "score": float(i)}
        for p in "ab"
        for i, text in enumerate(["one \ud800 two", "three"])
    ]
    log = tmp_path / "verl"
    log.mkdir()
    (log / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "\\ud800" in (log / "1.jsonl").read_text()  # valid JSON, not valid Unicode

    def progress(name: str) -> object:
        return cli_shadow._ProgressCount(_Tokenizer(), name, every=0.0)

    monkeypatch.setattr(cli_shadow, "_tokenizer_count", progress)
    argv = ["shadow", "replay", str(log), "--rule", "greso", "--tokenizer", "tok"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "(the log holds 4 completions)" in captured.err
    assert "lone surrogate" in captured.err and "U+FFFD" in captured.err
    assert "(8 in all)" in captured.out  # 3 + 1 words in each of two groups, U+FFFD a word
