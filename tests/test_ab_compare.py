"""`frontier ab compare`: two arms' logs read, compared at the largest rollout count every
run reached, the verdict in words (one run per arm: not judged; several: a paired
bootstrap interval), and a figure that says what it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from frontier_rft.bench.real_rl.ab import compare_arms, read_run
from frontier_rft.cli.main import main


def write_run(
    folder: Path,
    scores: list[float],
    *,
    per_eval: int = 32,
    name: str = "frontier_metrics.jsonl",
    distinct_step: int = 3,
    epochs: float | None = None,
    step_s: float | None = None,
    first_eval: int = 0,
) -> Path:
    """A TRL adapter's log: training records, and an evaluation every 10 steps carrying
    the rollouts delivered and the distinct prompts trained so far (and, given `epochs`,
    TRL's epoch, reaching `epochs` at the last; given `step_s`, each record's time stamp,
    `step_s` seconds a step; from the evaluation numbered `first_eval` on)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, score in enumerate(scores):
        step = 10 * i
        budget = {"curriculum/trl/rollouts_delivered": i * per_eval,
                  "curriculum/tasks/distinct_trained": i * distinct_step}  # fmt: skip
        if step_s is not None:
            budget["time"] = 1000.0 + step * step_s
        if step:
            lines.append({"step": step, "loss": 0.1, **budget})
        epoch = {} if epochs is None else {"epoch": epochs * i / (len(scores) - 1)}
        if i >= first_eval:
            lines.append({"step": step, "eval_reward": score, "eval_loss": 0.0, **budget,
                          **epoch})  # fmt: skip
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def _blocks(text: str) -> dict[str, list[str]]:
    """The output's blocks by their head ('At equal steps', 'Final against final'): the
    head's line and the indented lines under it."""
    out: dict[str, list[str]] = {}
    head = ""
    for line in text.splitlines():
        found = re.match(r"At equal [^,:]+|Final against final", line)
        if found:
            head = found.group(0)
            out[head] = [line]
        elif line.startswith("  ") and head:
            out[head].append(line)
        else:
            head = ""
    return out


def test_one_run_per_arm_is_compared_but_not_judged(tmp_path: Path) -> None:
    a = write_run(tmp_path / "uniform", [0.1, 0.2, 0.3])
    b = write_run(tmp_path / "greso", [0.1, 0.25, 0.4], distinct_step=2)
    result = compare_arms(a, b)
    assert result.rollouts.budget == 64 and result.metric == "eval_reward"
    assert result.rollouts.difference == pytest.approx(0.1)
    np.testing.assert_allclose(result.rollouts.distinct, [[6, 4]])
    assert result.rollouts.interval is None
    assert result.rollouts.verdict.startswith(
        "Not judged: with one run per arm, whether B - A = +0.1000"
    )
    text = result.table()
    assert "A (uniform) 0.3000, B (greso) 0.4000, B - A +0.1000" in text
    assert "distinct prompts trained: A 6, B 4" in text


def test_seeds_are_paired_by_name_and_the_interval_decides(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for seed in range(4):
        base = [0.1, 0.2 + rng.normal(0, 0.05), 0.3 + rng.normal(0, 0.05)]
        write_run(tmp_path / "same" / "uniform" / f"seed-{seed}", base)
        write_run(tmp_path / "same" / "greso" / f"seed-{seed}", [s + 0.001 for s in base])
        noisy = [base[0], base[1], base[2] + rng.normal(0, 0.05)]
        write_run(tmp_path / "noisy" / "greso" / f"seed-{seed}", noisy)
    above = compare_arms(tmp_path / "same" / "uniform", tmp_path / "same" / "greso")
    assert above.paired_by == ", paired by folder name" and len(above.pairs) == 4
    assert above.rollouts.verdict.startswith("B is above A beyond the seed-to-seed noise")
    assert "over 4 seed pairs" in above.rollouts.verdict
    within = compare_arms(tmp_path / "same" / "uniform", tmp_path / "noisy" / "greso")
    lo, hi = within.rollouts.interval or (1.0, 1.0)
    assert lo <= 0 <= hi and within.rollouts.verdict.startswith("Within noise:")


def test_the_common_budget_is_read_at_evaluations_and_a_resume_keeps_the_last_record(
    tmp_path: Path,
) -> None:
    """Issue 88: a score at a budget is the latest evaluation at or before it, never
    interpolated between evaluations (it was 0.25 + 0.15 x 16/32 = 0.325 here)."""
    a = write_run(tmp_path / "a", [0.0, 0.2, 0.4])  # 64 rollouts by the end
    b = write_run(tmp_path / "b", [0.0, 0.3], per_eval=48)  # 48
    with open(a / "frontier_metrics.jsonl", "a") as fh:  # a resumed run re-logs step 10
        fh.write(json.dumps({"step": 10, "eval_reward": 0.25,
                             "curriculum/trl/rollouts_delivered": 32}) + "\n")  # fmt: skip
    run = read_run(a)
    np.testing.assert_allclose(run.score, [0.0, 0.25, 0.4])
    result = compare_arms(a, b)
    assert result.rollouts.budget == 48
    # By hand: A evaluated at 0, 32 and 64 rollouts (0.0, 0.25 re-logged, 0.4); its latest
    # evaluation at or before 48 is the one at 32, 0.25. B's last is at 48 itself, 0.3.
    np.testing.assert_allclose(result.rollouts.scores, [[0.25, 0.3]])


def test_frontier_train_runs_are_read_too(tmp_path: Path) -> None:
    for arm, final in (("uniform", 0.3), ("bots", 0.35)):
        rows = [{"step": 0, "eval/mean_score": 0.1},
                {"step": 5, "train/rollouts_total": 80, "train/reward_mean": 0.2},
                {"step": 5, "eval/mean_score": final}]  # fmt: skip
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = compare_arms(tmp_path / "uniform", tmp_path / "bots")
    assert result.metric == "eval/mean_score" and result.rollouts.budget == 80
    assert result.rollouts.difference == pytest.approx(0.05)


def test_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path / "a" / "seed-0", [0.1, 0.2])
    write_run(tmp_path / "a" / "seed-1", [0.1, 0.2])
    write_run(tmp_path / "b" / "seed-0", [0.1, 0.2])
    (tmp_path / "no_eval").mkdir()
    (tmp_path / "no_eval" / "frontier_metrics.jsonl").write_text('{"step": 1, "loss": 0.1}\n')
    t = str(tmp_path)
    cases = [
        ([f"{t}/a", f"{t}/b"], "arm A has 2 runs and arm B 1: runs are compared seed by seed"),
        ([f"{t}/a", f"{t}/none"], "none: no such run directory"),
        ([f"{t}/a", f"{t}/no_eval"], "no held-out score 'eval_reward'; run with an evaluation "
         "(TRL: eval_strategy: steps"),
        ([f"{t}/no_eval", f"{t}/a"], "no held-out score (eval_reward, TRL's, or eval/mean_score"),
        ([f"{t}/a/seed-0", f"{t}/a/seed-1", "--metric", "eval_rewards/x/mean"],
         "no held-out score 'eval_rewards/x/mean'"),
        ([f"{t}/a/seed-0", f"{t}/a/seed-1", "--metric", "eval_rewrd"],
         "no held-out score 'eval_rewrd' (did you mean 'eval_reward'?)"),
    ]  # fmt: skip
    for argv, phrase in cases:
        assert main(["ab", "compare", *argv, "--out", "none"]) == 2, argv
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if " error: " in line]
        assert len(errors) == 1 and phrase in errors[0], (argv, err)


@pytest.mark.parametrize(
    ("step", "shown"),
    [(None, "(none)"), ("ten", "('ten')"), (float("nan"), "(nan)"), (-10, "(-10)"),
     (2.5, "(2.5)"), (True, "(True)"), ([10], "([10])")],
)  # fmt: skip
def test_an_evaluation_without_a_usable_step_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step: object, shown: str
) -> None:
    """Issue 47: evaluations with a missing, string or NaN step ended in an IndexError."""
    good = write_run(tmp_path / "a", [0.1, 0.2])
    record: dict[str, object] = {"eval_reward": 0.3, "curriculum/trl/rollouts_delivered": 32}
    if step is not None:
        record["step"] = step
    bad = tmp_path / "b"
    bad.mkdir()
    log = bad / "frontier_metrics.jsonl"
    log.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match="has no usable step"):
        read_run(bad)
    assert main(["ab", "compare", str(good), str(bad), "--out", "none"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if " error: " in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert f"{log}: an evaluation (eval_reward = 0.3) has no usable step {shown}" in errors[0]


def test_the_command_prints_and_draws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    for seed in range(3):
        write_run(tmp_path / "uniform" / f"s{seed}", [0.1, 0.2 + 0.01 * seed, 0.3])
        write_run(tmp_path / "greso" / f"s{seed}", [0.1, 0.21, 0.3 + 0.02 * seed])
    png = tmp_path / "ab.png"
    code = main(["ab", "compare", str(tmp_path / "uniform"), str(tmp_path / "greso"),
                 "--out", str(png)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "A/B: held-out eval_reward, each run read at its latest evaluation at or before " \
        "each budget (never between evaluations)" in out  # fmt: skip
    assert f"Figure: {png}" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "32", "64"]  # one row per evaluation
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _with_passes(folder: Path, groups: int, pool: int) -> None:
    """Append the selector's own counts (what the adapters log in every training record)."""
    with open(folder / "frontier_metrics.jsonl", "a") as fh:
        record = {"step": 99, "loss": 0.1, "curriculum/feedback/groups": groups,
                  "curriculum/tasks/pool_size": pool}  # fmt: skip
        fh.write(json.dumps(record) + "\n")


def test_identical_arms_are_flagged_with_why(tmp_path: Path) -> None:
    for seed in range(3):  # greso in its first pass over a large pool: uniform's choices
        for arm in ("uniform", "greso"):
            folder = write_run(tmp_path / arm / f"seed-{seed}", [0.1, 0.2 + 0.01 * seed, 0.3])
            _with_passes(folder, groups=8, pool=64)
    result = compare_arms(tmp_path / "uniform", tmp_path / "greso")
    assert result.identical
    assert result.rollouts.verdict == "Not judged: the arms are identical (B chose what A chose)."
    text = result.table()
    assert "Passes over the pool by the end (groups fed back / pool size): A 0.12, B 0.12." in text
    assert "The arms are identical" in text and "B made 0.12 passes" in text
    assert "docs/ab_test.md" in text


def test_a_short_run_that_differs_is_judged_and_its_passes_said(tmp_path: Path) -> None:
    for seed in range(3):
        _with_passes(write_run(tmp_path / "uniform" / f"s{seed}", [0.1, 0.2, 0.3]), 64, 64)
        b = write_run(tmp_path / "greso" / f"s{seed}", [0.1, 0.2, 0.3 + 0.01 * (seed + 1)])
        _with_passes(b, 64, 64)
    result = compare_arms(tmp_path / "uniform", tmp_path / "greso")
    assert not result.identical and result.rollouts.verdict.startswith("B is above A")
    text = result.table()
    assert "B made 1.00 passes over its pool" in text and "The arms are identical" not in text
    # Long enough: no note, and a log without the counts says nothing about passes.
    for seed in range(3):
        _with_passes(tmp_path / "greso" / f"s{seed}", 192, 64)
    assert (
        "passes over its pool" not in compare_arms(tmp_path / "uniform", tmp_path / "greso").table()
    )
    plain = compare_arms(
        write_run(tmp_path / "a", [0.1, 0.2]), write_run(tmp_path / "b", [0.1, 0.3])
    )
    assert "Passes" not in plain.table()


def test_a_kept_arm_is_compared_at_equal_rollouts_and_final_against_final(
    tmp_path: Path,
) -> None:
    """Issue 63: a kept arm reaches uniform's last step with fewer rollouts, so at equal
    rollouts uniform is read at 75% of its schedule; the evidence for kept is final
    against final. Both are shown, labelled, and its passes are the trainer's epochs (2,
    as check-config's auto counts them), not the groups fed back (1.5): no "short" note."""
    for seed in range(3):
        a = write_run(tmp_path / "uniform" / f"s{seed}", [0.1, 0.2, 0.3, 0.4, 0.5], epochs=2.0)
        _with_passes(a, 128, 64)
        b = write_run(
            tmp_path / "skip" / f"s{seed}", [0.1, 0.2, 0.3, 0.4, 0.5 - 0.01 * (seed + 1)],
            per_eval=24, epochs=2.0,
        )  # fmt: skip
        _with_passes(b, 96, 64)  # 3/4 of uniform's prompts rolled out
    result = compare_arms(tmp_path / "uniform", tmp_path / "skip")
    # By hand: skip's last evaluation is at 4 x 24 = 96 rollouts, and uniform evaluated at
    # 96 = 3 x 32 too (0.4), so its latest evaluation at or before the budget is that one.
    assert result.rollouts.budget == 96  # skip's last evaluation: uniform at 3/4 of its schedule
    assert result.rollouts.difference == pytest.approx(0.48 - 0.4)
    text = result.table()
    assert "At equal rollouts, read at 96 rollouts (the most every run reached)" in text
    assert (
        "Final against final, each run's last evaluation (the same steps where both arms ran "
        "one schedule, as with rollouts: kept), held-out eval_reward (mean over 3 seeds): "
        "A (uniform) 0.5000 at 128 rollouts, B (skip) 0.4800 at 96 rollouts (0.75x A's), "
        "B - A -0.0200."
    ) in text
    blocks = _blocks(text)
    assert blocks["At equal rollouts"][1].startswith("  B is above A beyond the seed-to-seed")
    assert blocks["Final against final"][1].startswith("  B is below A beyond the seed-to-seed")
    assert "Passes over the pool by the end (the trainer's epoch, as num_train_epochs and " \
        "check-config count it): A 2.00, B 2.00." in text  # fmt: skip
    assert "shorter than about 2" not in text


def test_the_passes_agree_with_check_configs_auto() -> None:
    """The A/B's count of passes is the trainer's epoch: the number `planned_epochs`
    (check-config's and the adapters' `auto`) gives the same run."""
    from frontier_rft.bench.real_rl.ab import EPOCH_KEY
    from frontier_rft.integrations.plan import planned_epochs

    # 64 prompts, 16 steps of 8 new prompts: 2 epochs, whatever share a kept step rolled out
    assert planned_epochs(3, steps=16, prompts_per_step=8, rows=64) == 2.0
    assert EPOCH_KEY == "epoch"  # the key transformers' Trainer.log adds to every record


def test_without_matplotlib_the_verdict_prints_and_the_figure_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 63: after a plain `[trl]` install docs/ab_test.md's last step exited 2 (no
    matplotlib). The verdict prints, the figure is skipped with a one-line note, exit 0."""
    import sys

    for module in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.delitem(sys.modules, "frontier_rft.reporting.ab_plots", raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    for seed in range(3):
        write_run(tmp_path / "uniform" / f"s{seed}", [0.1, 0.2, 0.3])
        write_run(tmp_path / "greso" / f"s{seed}", [0.1, 0.21, 0.3 + 0.02 * (seed + 1)])
    png = tmp_path / "ab.png"
    code = main(["ab", "compare", str(tmp_path / "uniform"), str(tmp_path / "greso"),
                 "--out", str(png)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and not png.exists()
    assert "\n  B is above A beyond the seed-to-seed noise" in captured.out
    note = [line for line in captured.err.splitlines() if line.strip()]
    assert note == [
        "No figure: matplotlib is not installed (the verdict above stands); to draw it: "
        "pip install 'frontier-rft[plot]'"
    ]


def _frontier_train_run(folder: Path, score: float, groups: int) -> None:
    """A `frontier train` run of 16 steps of 8 prompts over a pool of 64 (2 passes on its
    schedule), `groups` of them fed back (fewer under `rollouts: kept`)."""
    folder.mkdir(parents=True)
    rows = [{"step": 0, "eval/mean_score": 0.1},
            {"step": 16, "train/rollouts_total": 8 * groups, "train/reward_mean": 0.2,
             "curriculum/feedback/groups": groups, "curriculum/tasks/pool_size": 64},
            {"step": 16, "eval/mean_score": score}]  # fmt: skip
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    info = {"config": {"batch_size": 8}, "model_dir": "m", "train_tasks": 64}
    (folder / "run.json").write_text(json.dumps(info))


def test_the_passes_of_frontier_train_and_verl_runs_count_a_kept_steps_prompts(
    tmp_path: Path,
) -> None:
    """Issue 72: without TRL's epoch, passes were groups fed back / pool, which leaves out
    what a kept step passed over: a kept arm of 2 passes read 1.50 and was told to
    subsample. A `frontier train` run counts its schedule from run.json, a verl run its
    adapter's `verl/epoch`."""
    for seed in range(3):
        _frontier_train_run(tmp_path / "uniform" / f"s{seed}", 0.3, 128)
        _frontier_train_run(tmp_path / "skip" / f"s{seed}", 0.3 + 0.01 * seed, 96)
    text = compare_arms(tmp_path / "uniform", tmp_path / "skip").table()
    assert "Passes over the pool by the end (steps x batch_size / pool, from each run.json): " \
        "A 2.00, B 2.00." in text  # fmt: skip
    assert "passes over its pool: a skip" not in text
    for seed in range(3):
        for arm, groups in (("verl-uniform", 128), ("verl-skip", 96)):
            folder = write_run(tmp_path / arm / f"s{seed}", [0.1, 0.2, 0.3 + 0.01 * seed])
            with open(folder / "frontier_metrics.jsonl", "a") as fh:
                fh.write(json.dumps({"step": 99, "curriculum/verl/epoch": 2.0,
                                     "curriculum/feedback/groups": groups,
                                     "curriculum/tasks/pool_size": 64}) + "\n")  # fmt: skip
    text = compare_arms(tmp_path / "verl-uniform", tmp_path / "verl-skip").table()
    assert "by the end (the trainer's epoch, as num_train_epochs and check-config count it): " \
        "A 2.00, B 2.00." in text  # fmt: skip


def test_the_verl_sampler_logs_its_passes_over_the_data() -> None:
    """`verl/epoch`: steps fed back over the batches an epoch holds, in the default log."""
    from frontier_rft.metrics_log import SUMMARY_KEYS

    assert "verl/epoch" in SUMMARY_KEYS


def test_the_arms_are_compared_at_equal_steps_and_equal_wall_clock_seconds(
    tmp_path: Path,
) -> None:
    """Issue 91 item 4: `ab compare` compared only at equal rollouts and final against
    final. B generates twice A's rollouts a step and takes twice A's seconds a step (the
    records' time stamps); each axis is read at its own budget, each labelled."""
    for seed in range(3):
        write_run(tmp_path / "uniform" / f"s{seed}", [0.1, 0.2, 0.3], step_s=1.0)
        write_run(tmp_path / "dapo" / f"s{seed}", [0.1, 0.25, 0.4 + 0.01 * seed],
                  per_eval=64, step_s=2.0)  # fmt: skip
    result = compare_arms(tmp_path / "uniform", tmp_path / "dapo")
    # By hand: both arms evaluated at steps 0, 10, 20; A at 0, 32, 64 rollouts and 0, 10,
    # 20 s, B at 0, 64, 128 rollouts and 0, 20, 40 s. Equal rollouts: budget 64 (A's last),
    # B's latest evaluation at or before it is step 10's 0.25: B - A = 0.25 - 0.3 = -0.05.
    # Equal steps: budget step 20, every run's last: B - A = mean(0.40, 0.41, 0.42) - 0.3
    # = +0.11. Equal seconds: budget 20 s (A's last), B read at step 10: -0.05.
    steps, seconds = result.readings["steps"], result.readings["seconds"]
    assert (result.rollouts.budget, steps.budget, seconds.budget) == (64, 20, 20)
    np.testing.assert_allclose(steps.scores, [[0.3, 0.4], [0.3, 0.41], [0.3, 0.42]])
    np.testing.assert_allclose(seconds.scores, [[0.3, 0.25]] * 3)
    assert result.rollouts.difference == pytest.approx(-0.05)
    assert result.timed_by == "time"
    blocks = _blocks(result.table())
    assert blocks["At equal steps"][0].startswith(
        "At equal steps, read at step 20 (the most every run reached), held-out eval_reward "
        "(mean over 3 seeds): A (uniform) 0.3000, B (dapo) 0.4100, B - A +0.1100;"
    )
    assert blocks["At equal steps"][1].startswith("  B is above A beyond the seed-to-seed noise")
    assert blocks["At equal rollouts"][1].startswith("  B is below A beyond the seed-to-seed")
    wall = blocks["At equal seconds (wall-clock)"]
    assert wall[0].startswith("At equal seconds (wall-clock), read at 20.00 s (the most every ")
    assert wall[1].startswith("  B is below A beyond the seed-to-seed noise")
    assert wall[2] == (
        "  Timed by seconds from each run's first record to the evaluation's (the records' "
        "time stamps: evaluations and logging included). Wall-clock compares runs that ran "
        "under the same load (e.g. side by side on one machine); otherwise it measures the "
        "machines, not the selectors."
    )
    # Logs without time stamps: said in one line, the other axes still compared.
    plain = compare_arms(
        write_run(tmp_path / "a", [0.1, 0.2]), write_run(tmp_path / "b", [0.1, 0.3])
    ).table()
    assert (
        f"At equal seconds (wall-clock): not compared: {tmp_path / 'a'}'s log has neither "
        "perf/step_s for every step nor a 'time' stamp on its evaluations." in plain
    )


def test_a_run_with_no_evaluation_by_the_budget_is_not_read_there(tmp_path: Path) -> None:
    """Issue 88: a score is never read from after the budget. B was first evaluated at step
    30 (96 rollouts), beyond A's last evaluation (step 20, 64 rollouts): interpolation
    clamped B to that later score; now neither axis compares them, and says why."""
    a = write_run(tmp_path / "a", [0.1, 0.2, 0.3])
    b = write_run(tmp_path / "b", [0.1, 0.2, 0.3, 0.5, 0.6], first_eval=3)
    blocks = _blocks(compare_arms(a, b).table())
    assert blocks["At equal rollouts"] == [
        f"At equal rollouts: not compared: {b} has no evaluation at or before 64."
    ]
    assert blocks["At equal steps"] == [
        f"At equal steps: not compared: {b} has no evaluation at or before 20."
    ]
    assert blocks["Final against final"][0].endswith("B - A +0.3000.")


def _per_step_run(
    folder: Path,
    scores: list[float],
    *,
    rollouts: int,
    step_s: float | None,
    with_info: bool = True,
) -> Path:
    """A `frontier train` run of 4 steps, evaluated at steps 0, 2 and 4: a row per step
    (`rollouts` generated in one call and trained, `step_s` seconds where given) stamped 1 s
    apart, and its run.json (completions of at most 24 tokens)."""
    folder.mkdir(parents=True)
    rows = []
    for step in range(5):
        if step:
            rows.append({"step": step, "time": 100.0 + step, "train/rollouts": rollouts,
                         "train/rollouts_total": rollouts * step, "train/sampling_rounds": 1,
                         "train/trained_rows": rollouts})  # fmt: skip
            if step_s is not None:
                rows[-1]["perf/step_s"] = step_s
        if step % 2 == 0:
            rows.append({"step": step, "time": 100.0 + step, "eval/mean_score": scores[step // 2]})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if with_info:
        info = {"config": {"batch_size": 2, "max_new_tokens": 24}, "model_dir": "m",
                "train_tasks": 8}  # fmt: skip
        (folder / "run.json").write_text(json.dumps(info))
    return folder


def test_seconds_are_the_summed_step_seconds_and_a_device_projects_each_logged_step(
    tmp_path: Path,
) -> None:
    """Issue 91 item 4: a `frontier train` log is timed by its steps' perf/step_s (training
    only), not its time stamps (1 s a step in both arms here), and `device` prices each
    logged step on the shipped curve, as the bench does."""
    a = _per_step_run(tmp_path / "uniform", [0.1, 0.2, 0.3], rollouts=16, step_s=1.0)
    b = _per_step_run(tmp_path / "big", [0.1, 0.25, 0.5], rollouts=64, step_s=1.5)
    result = compare_arms(a, b, device="h200")
    # By hand, wall-clock: A's evaluations at 0, 2, 4 s of summed perf/step_s, B's at 0, 3,
    # 6 s: budget 4 s, B read at step 2 (3 s): B - A = 0.25 - 0.3 = -0.05 (by the time
    # stamps, B would have been read at step 4: +0.2).
    seconds = result.readings["seconds"]
    assert result.timed_by == "perf/step_s" and seconds.budget == pytest.approx(4.0)
    np.testing.assert_allclose(seconds.scores, [[0.3, 0.25]])
    # By hand, h200.json's cells at 24 tokens: a 16-row step is 0.583769 s of generation +
    # 0.179751 s of update = 0.763520 s; a 64-row step 0.775048 + 0.208621 = 0.983669 s.
    # A's evaluations at 0, 1.527040, 3.054080 s; B's at 0, 1.967338, 3.934676 s: budget
    # 3.054080 (A's last), B read at step 2: B - A = -0.05.
    h200 = result.readings["h200"]
    assert h200.budget == pytest.approx(4 * 0.763520)
    np.testing.assert_allclose(h200.scores, [[0.3, 0.25]])
    blocks = _blocks(result.table())
    projected = blocks["At equal H200 seconds (projected)"]
    assert projected[0].startswith("At equal H200 seconds (projected), read at 3.05 H200 s ")
    assert projected[2] == (
        "  A projection, not a measurement: each logged step priced from its shape on the "
        "shipped h200 step-cost curve, as the bench prices it."
    )
    assert blocks["At equal seconds (wall-clock)"][2].startswith(
        "  Timed by the summed perf/step_s of the steps up to each evaluation: training only."
    )
    assert "cpu" not in result.readings  # only the device named
    # Without run.json the completion length is unknown: the projection says so, no guess.
    bare = _per_step_run(tmp_path / "bare", [0.1, 0.25, 0.5], rollouts=64, step_s=1.5,
                         with_info=False)  # fmt: skip
    assert _blocks(compare_arms(a, bare, device="h200").table())[
        "At equal H200 seconds (projected)"
    ] == [
        f"At equal H200 seconds (projected): not compared: the projection is unavailable: "
        f"{bare}: no run.json beside its log giving max_new_tokens, the completion length a "
        "step is priced at."
    ]


def test_a_trl_log_has_no_projection_and_runs_timed_otherwise_are_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 91 item 4: TRL's log has no per-step rows to price, which `--device` says in
    one line; a run timed by perf/step_s is not compared in seconds with one timed by its
    time stamps; a misspelt device is one line, before any log is read."""
    trl = write_run(tmp_path / "trl", [0.1, 0.2, 0.3], step_s=1.0)
    both = write_run(tmp_path / "trl2", [0.1, 0.2, 0.4], step_s=1.0)
    assert main(["ab", "compare", str(trl), str(both), "--device", "h200", "--out", "none"]) == 0
    out = [line for line in capsys.readouterr().out.splitlines() if "H200" in line]
    assert out == [
        f"At equal H200 seconds (projected): not compared: the projection is unavailable: "
        f"{trl}: its log has no per-step rows (train/rollouts and the step's shape, as "
        "frontier train logs them; TRL's and verl's adapters do not) to price a step from."
    ]
    timed = _per_step_run(tmp_path / "timed", [0.1, 0.2, 0.3], rollouts=16, step_s=1.0)
    stamped = _per_step_run(tmp_path / "stamped", [0.1, 0.25, 0.5], rollouts=16, step_s=None)
    mixed = _blocks(compare_arms(timed, stamped).table())
    assert mixed["At equal seconds (wall-clock)"] == [
        "At equal seconds (wall-clock): not compared: the runs were timed differently "
        "(perf/step_s and time): seconds compare only runs timed alike."
    ]
    assert main(["ab", "compare", str(trl), "nowhere", "--device", "h100", "--out", "none"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if " error: " in line]
    assert len(errors) == 1
    assert "--device 'h100': name a shipped step-cost curve, one of cpu, h200 (did you mean " \
        "'h200'?)" in errors[0]  # fmt: skip
