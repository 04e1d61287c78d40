"""Shadows count generated tokens where the log holds completion lengths: the share of the
run's tokens a rule would have saved equals a hand-computed one (and differs from its share of
rollouts when the groups it leaves out are long), an old reward log without lengths still
replays and says its tokens are not in it, TRL and verl logs count their completion texts'
characters, labelled as such, and the adapters' live shadows (RunShadows) count the lengths
they are given, regrouped as the rewards are."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from frontier_rft import TaskPool, make_selector
from frontier_rft.cli.main import main
from frontier_rft.metrics_log import JsonlLogger
from frontier_rft.shadow import (
    build_shadow,
    load_shadow,
    read_reward_log,
    reward_record,
    save_shadow,
    shadow_config,
)
from frontier_rft.shadow.foreign_logs import characters
from frontier_rft.shadow.live import RunShadows
from frontier_rft.shadow.replay import replay
from frontier_rft.shadow.rule import Shadow, ShadowConfig
from helpers import assert_state_equal
from test_shadow import _SkipOdd

# One step of four prompts x 4 rollouts: an all-wrong group that ran to the length limit, a
# mixed one, a short all-right one, and a mixed one.
REWARDS = np.array([[0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1], [0, 1, 0, 0]], dtype=np.float64)
LENGTHS = np.array([[100] * 4, [10, 20, 30, 40], [5] * 4, [20] * 4], dtype=np.int64)
# screen2 leaves out the groups whose first 2 rewards are equal: 0 and 2. Per step it spends
# 4 + 4 + 2 + 2 = 12 of 16 rollouts (saves 25%) and 100 + 80 (kept 1, 3) + 200 + 10 (the first
# two completions of 0 and 2) = 390 of 600 tokens (saves 210, 35%): the all-wrong group is long.
SCREEN2_ROLLOUTS, SCREEN2_TOKENS = 4 / 16, 210 / 600


def _log(path: Path, steps: int = 2, lengths: bool = True) -> Path:
    path.write_text(
        "".join(
            reward_record(t, 4, 0, np.arange(4), REWARDS, LENGTHS if lengths else None)
            for t in range(steps)
        )
    )
    return path


def test_screen_token_share_equals_hand_computed_and_differs_from_rollouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path / "rewards.jsonl")
    (shadow,) = replay(log, ["screen2"])
    total = shadow.passes()[-1]
    assert total["rollouts_saved_share"] == pytest.approx(SCREEN2_ROLLOUTS)
    assert total["tokens"] == 1200 and total["tokens_saved"] == 420
    assert total["tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
    m = shadow.metrics()
    assert (m["tokens_saved"], m["tokens_saved_step"]) == (420, 210)
    assert m["tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
    assert main(["shadow", "replay", str(log), "--rule", "screen2"]) == 0
    out = capsys.readouterr().out
    assert "| screen2 | all | 2 | 32 | 8 | 25.0% | 35.0% |" in out
    assert "counted in generated tokens (the trainer's own counts), over every step" in out


def test_skipped_long_groups_save_more_tokens_than_rollouts_hand_computed() -> None:
    sel = _SkipOdd(TaskPool(num_tasks=4))
    sel._times_seen = np.zeros(4, dtype=np.int64)
    shadow = Shadow(ShadowConfig(selector="uniform"), sel, pool_size=4)
    rewards = {0: [1, 1, 1, 1], 1: [0, 0, 0, 0], 2: [0, 1, 1, 1], 3: [0, 0, 1, 0]}
    lengths = {0: [5] * 4, 1: [100] * 4, 2: [10, 20, 30, 40], 3: [50] * 4}

    def step(t: int, ids: list[int]) -> dict[str, float]:
        r = np.concatenate([rewards[i] for i in ids]) * 1.0
        shadow.observe(t, np.array(ids), r, 4, np.concatenate([lengths[i] for i in ids]))
        return shadow.metrics()

    m = step(0, [0, 1, 2, 3])  # nothing seen: all kept
    assert (m["rollouts_saved"], m["tokens_saved"], m["tokens_saved_step"]) == (0, 0, 0)
    m = step(1, [3, 2, 1, 0])  # 3 and 1 skipped: 8 of 16 rollouts, 200 + 400 of 720 tokens
    assert (m["rollouts_saved_step"], m["tokens_saved_step"]) == (8, 600)
    m = step(2, [1, 3])  # both skipped: charged one group's round at the step's mean length
    assert m["rollouts_saved_step"] == 8 - 4
    assert m["tokens_saved_step"] == 600 - 4 * 600 / 8
    assert m["rollouts_saved_share"] == pytest.approx(12 / 40)
    assert m["tokens_saved_share"] == pytest.approx(900 / 2040)


def test_an_old_log_without_lengths_replays_and_says_tokens_are_not_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _log(tmp_path / "old.jsonl", lengths=False)
    assert "lengths" not in old.read_text()
    new = _log(tmp_path / "new.jsonl")
    assert [s.lengths for s in read_reward_log(old)] == [None, None]
    (a,), (b,) = replay(old, ["screen2"]), replay(new, ["screen2"])
    assert a.passes()[-1]["rollouts_saved_share"] == b.passes()[-1]["rollouts_saved_share"]
    assert a.passes()[-1]["token_steps"] == 0 and "tokens_saved" not in a.metrics()
    assert main(["shadow", "replay", str(old), "--rule", "screen2"]) == 0
    out = capsys.readouterr().out
    assert "| screen2 | all | 2 | 32 | 8 | 25.0% | - |" in out
    assert "tokens: not in this log" in out
    # a log continued by a newer trainer: token shares over the steps that hold lengths
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        reward_record(0, 4, 0, np.arange(4), REWARDS)
        + reward_record(1, 4, 0, np.arange(4), REWARDS, LENGTHS)
    )
    (c,) = replay(mixed, ["screen2"])
    assert c.passes()[-1]["tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
    assert main(["shadow", "replay", str(mixed), "--rule", "screen2"]) == 0
    assert "over 1 of 2 steps (the rest hold none)" in capsys.readouterr().out


def test_live_shadows_count_the_lengths_they_are_given_regrouped_as_the_rewards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As an adapter reports a step: a rollout a row, the prompts' rows interleaved (verl
    # reorders a batch), each prompt's completions in their order; prompt 4 lost a completion
    # (unscorable), so it has no whole group and is left out, its long completions with it.
    ids = np.r_[np.repeat(np.arange(4), 4), [4, 4, 4]]
    rewards = np.r_[REWARDS.reshape(-1), [0.0, 0.0, 0.0]]
    lengths = np.r_[LENGTHS.reshape(-1), [5000, 5000, 5000]]
    order = np.argsort(np.tile(np.arange(4), 5)[: ids.size], kind="stable")  # interleaved
    live = RunShadows([shadow_config("screen2")], make_selector("uniform", TaskPool(8)), 0)
    for t in range(2):
        live.observe(t, ids[order], rewards[order], 4, lengths[order])
    # By hand (REWARDS, LENGTHS above): screen2 leaves out prompts 0 and 2 after their first
    # two completions, 600 - 390 = 210 of each step's 600 tokens.
    (shadow,) = live.shadows
    total = shadow.passes()[-1]
    assert (total["tokens"], total["tokens_saved"]) == (1200, 420)
    assert total["rollouts"] == 32 and total["rollouts_saved_share"] == SCREEN2_ROLLOUTS
    m = live.metrics()
    assert (m["shadow/screen2/tokens_saved"], m["shadow/screen2/tokens_saved_step"]) == (420, 210)
    assert m["shadow/screen2/tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
    assert "| screen2 | all | 2 | 32 | 8 | 25.0% | 35.0% |" in live.summary()
    # Lengths that are not one per reward are refused before any shadow moves.
    with pytest.raises(ValueError, match="one per reward"):
        live.observe(2, ids, rewards, 4, lengths[:-1])
    assert shadow.passes()[-1]["steps"] == 2
    # The end-of-run record (the TRL adapter's metrics log): its replay shows the tokens share.
    metrics = tmp_path / "frontier_metrics.jsonl"
    with JsonlLogger(metrics) as logger:
        logger.log({}, step=2, **live.summary_record())
    assert main(["shadow", "replay", str(metrics)]) == 0
    out = capsys.readouterr().out
    assert "| screen2 | all | 2 | 32 | 8 | 25.0% | 35.0% |" in out
    assert "counted in the trainer's generated tokens, over every step (1,200 in all)" in out
    # Without lengths (a run scored by reward models alone): the note says why.
    bare = RunShadows([shadow_config("screen2")], make_selector("uniform", TaskPool(8)), 0)
    bare.observe(0, ids, rewards, 4)
    with JsonlLogger(metrics) as logger:
        logger.log({}, step=1, **bare.summary_record())
    assert main(["shadow", "replay", str(metrics)]) == 0
    assert "given no completion lengths: a run scored by reward models" in capsys.readouterr().out


@pytest.mark.parametrize(
    "lengths",
    [
        [[1, 2]],
        [[1, 2], [3]],
        [[1, -2], [3, 4]],
        [[1, 2.5], [3, 4]],
        [[1, True], [3, 4]],
        [[1, 2**31 + 1], [3, 4]],
        7,
    ],
)
def test_bad_lengths_get_one_line_errors(
    lengths: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {"step": 0, "pool_size": 4, "seed": 0, "task_ids": [0, 1]}
    record |= {"rewards": [[1.0, 0.0], [0.0, 0.0]], "lengths": lengths}
    path = tmp_path / "rewards.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match="lengths must be one list of completion token counts"):
        replay(path, ["screen2"])
    assert main(["shadow", "replay", str(path), "--rule", "screen2"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_token_counts_round_trip_and_a_state_saved_before_them_loads(tmp_path: Path) -> None:
    pool, config = TaskPool(num_tasks=4), shadow_config("greso+screen2")
    shadow = build_shadow(config, pool, seed=1)
    for t in range(3):
        shadow.observe(t, np.arange(4), REWARDS.reshape(-1), 4, LENGTHS.reshape(-1))
    save_shadow(shadow, tmp_path / "s.npz")
    loaded = load_shadow(tmp_path / "s.npz", config, pool)
    assert_state_equal(loaded.state_dict(), shadow.state_dict())
    assert loaded.metrics() == shadow.metrics()
    old = shadow.state_dict()
    del old["tokens"], old["tokens_last"]  # as saved by a version before token counts
    before = build_shadow(config, pool, seed=1)
    before.load_state_dict(old)
    assert "tokens_saved" not in before.metrics()
    assert before.metrics()["rollouts_saved"] == shadow.metrics()["rollouts_saved"]
    with pytest.raises(ValueError, match="one completion length"):
        before.observe(3, np.arange(4), REWARDS.reshape(-1), 4, LENGTHS.reshape(-1)[:-1])
    bad = shadow.state_dict()
    bad["tokens"][0, 2] = bad["tokens"][0, 1] + 1  # more tokens saved than generated
    with pytest.raises(ValueError, match="do not match"):
        before.load_state_dict(bad)
    assert "tokens_saved" not in before.metrics()  # unchanged


def test_trl_and_verl_logs_count_characters_labelled_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = [f"prompt {i}" for i in range(4)]
    trl = tmp_path / "completions.jsonl"  # TRL's table as JSON lines, one row per completion
    verl = tmp_path / "rollouts"
    verl.mkdir()
    rows = []
    for t in range(2):
        step = []
        for i in range(4):
            for j in range(4):
                text = "yz"[t] * int(LENGTHS[i, j])  # each step's own generation
                rows.append({"step": t + 1, "prompt": prompts[i], "completion": text})
                rows[-1]["reward"] = float(REWARDS[i, j])
                step.append({"input": prompts[i], "output": text, "score": REWARDS[i, j]})
                step[-1]["step"] = t + 1
        (verl / f"{t + 1}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in step))
    trl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for log in (trl, verl):
        (shadow,) = replay(log, ["screen2"])
        assert shadow.passes()[-1]["tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
        assert main(["shadow", "replay", str(log), "--rule", "screen2"]) == 0
        out = capsys.readouterr().out
        assert "| 25.0% | 35.0% |" in out
        assert "counted in characters of the completion text (not tokens" in out
    # a conversation's length is its messages' contents; a completion without text gives none
    for row in rows:
        row["completion"] = [{"role": "assistant", "content": row["completion"]}]
    trl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert replay(trl, ["screen2"])[0].passes()[-1]["tokens"] == 1200
    for row in rows:
        del row["completion"]
    trl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["shadow", "replay", str(trl), "--rule", "screen2"]) == 0
    assert "tokens: not in this log" in capsys.readouterr().out


def test_tokenizer_counts_a_trl_log_and_is_refused_for_a_rewards_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (shadow,) = replay(
        _trl_words(tmp_path / "c.jsonl"),
        ["screen2"],
        count=lambda texts: [len(text.split()) for text in texts],
    )
    assert shadow.passes()[-1]["tokens_saved_share"] == pytest.approx(SCREEN2_TOKENS)
    with pytest.raises(ValueError, match="drop --tokenizer"):
        replay(_log(tmp_path / "rewards.jsonl"), ["screen2"], count=characters)
    args = ["shadow", "replay", str(tmp_path / "c.jsonl"), "--rule", "screen2"]
    code = main(args)
    code_bad = main([*args, "--tokenizer", str(tmp_path / "no-such-tokenizer")])
    assert (code, code_bad) == (0, 2)
    assert "--tokenizer" in capsys.readouterr().err


def _trl_words(path: Path) -> Path:
    """A TRL log whose completions hold LENGTHS words each (a tokenizer of whitespace)."""
    rows = [
        {
            "step": t + 1,
            "prompt": f"p{i}",
            "completion": " ".join([f"w{t}"] * int(LENGTHS[i, j])),
            "reward": float(REWARDS[i, j]),
        }
        for t in range(2)
        for i in range(4)
        for j in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_tokenizer_option_counts_the_run_tokenizers_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from frontier_rft.lm.tokenizer import train_tokenizer

    log = _trl_words(tmp_path / "c.jsonl")
    texts = [json.loads(line)["completion"] for line in log.read_text().splitlines()]
    tokenizer = train_tokenizer(["w0 w1 w2 " * 50, "twelve 12 and 345"] * 20, vocab_size=300)
    tokenizer.save_pretrained(tmp_path / "tok")
    want = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    assert (
        main(
            [
                "shadow",
                "replay",
                str(log),
                "--rule",
                "screen2",
                "--tokenizer",
                str(tmp_path / "tok"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"counted in {tmp_path / 'tok'}'s tokens of the completion text" in out
    assert f"({want:,} in all)" in out and want != sum(len(t) for t in texts)


class _Calls:
    """A tokenizer that counts the calls made to it and the texts each call held."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer, self.batches = tokenizer, []

    def __call__(self, texts: object, **kwargs: object) -> object:
        self.batches.append(1 if isinstance(texts, str) else len(texts))  # type: ignore[arg-type]
        return self.tokenizer(texts, **kwargs)  # type: ignore[operator]


@pytest.mark.parametrize("fmt", ["trl", "verl"])
def test_tokenizer_counts_a_chunk_at_a_time_and_each_completion_as_one_at_a_time(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 72: `--tokenizer` called the tokenizer once per completion (17 CPU-minutes on a
    1.1 GB TRL log). It now encodes a chunk of completions in one batch call, and every
    completion's count is the one the per-text call gives: across chunks, steps and files,
    a conversation's messages summed, a step with a completion without text giving none."""
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import frontier_rft.shadow.foreign_logs as foreign_logs
    from frontier_rft.cli.shadow import _ProgressCount
    from frontier_rft.lm.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(["w0 w1 w2 " * 50, "twelve 12 and 345 é"] * 20, vocab_size=300)

    def one(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    rng = np.random.default_rng(0)
    log = tmp_path / "log"
    (log / "completions").mkdir(parents=True)
    want = []  # per step, the per-text counts of its groups (None: a completion without text)
    texts = 0
    for t in range(5):
        rows, lengths = [], np.zeros((4, 4), dtype=np.int64)
        for i in range(4):
            for j in range(4):
                words = rng.choice(["w0", "w1 12", "twelve", "345 é", "and"], rng.integers(0, 30))
                text = " ".join(words) + ("\n" if j % 2 else "")
                row: dict[str, object] = {"step": t + 1, "prompt": f"p{i}"}
                row["reward"] = float(REWARDS[i, j])
                if t == 3 and (i, j) == (2, 1):
                    row["completion"] = None  # no text: this step gives no lengths
                elif fmt == "trl" and t % 2:  # a conversation: its messages' counts summed
                    more = f"{t} and {j}"
                    row["completion"] = [
                        {"role": "assistant", "content": text},
                        {"role": "tool", "content": more},
                    ]
                    lengths[i, j], texts = one(text) + one(more), texts + 2
                else:
                    row["completion"], lengths[i, j], texts = text, one(text), texts + 1
                rows.append(row)
        want.append(None if t == 3 else lengths)
        if fmt == "trl":
            pd.DataFrame(rows).to_parquet(log / "completions" / f"completions_{t + 1:05d}.parquet")
        else:
            verl = [
                {"step": r["step"], "input": r["prompt"], "output": r["completion"]}
                | {"score": r["reward"]}
                for r in rows
            ]
            (log / f"{t + 1}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verl))
    monkeypatch.setattr(foreign_logs, "CHUNK_ROWS", 7)  # chunks cross groups, steps, files
    calls = _Calls(tokenizer)
    steps, _, _ = foreign_logs.read_foreign_log(log, fmt, count=_ProgressCount(calls, "tok"))
    got = [None if lengths is None else lengths.tolist() for _, _, _, lengths in steps]
    assert got == [None if w is None else w.tolist() for w in want]
    completions = 5 * 16
    assert len(calls.batches) == -(-completions // 7) and sum(calls.batches) == texts
    # a chunk is also counted once it holds CHUNK_CHARS characters of text (bounded memory)
    monkeypatch.setattr(foreign_logs, "CHUNK_ROWS", 4096)
    monkeypatch.setattr(foreign_logs, "CHUNK_CHARS", 100)
    calls.batches.clear()
    again, _, _ = foreign_logs.read_foreign_log(log, fmt, count=_ProgressCount(calls, "tok"))
    assert [None if s[3] is None else s[3].tolist() for s in again] == got
    assert 1 < len(calls.batches) < completions and sum(calls.batches) == texts
