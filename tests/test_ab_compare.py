"""`frontier ab compare`: two arms' logs read, compared at the largest rollout count every
run reached, the verdict in words (one run per arm: not judged; several: a paired
bootstrap interval), and a figure that says what it shows."""

from __future__ import annotations

import json
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
) -> Path:
    """A TRL adapter's log: training records, and an evaluation every 10 steps carrying
    the rollouts delivered and the distinct prompts trained so far (and, given `epochs`,
    TRL's epoch, reaching `epochs` at the last)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, score in enumerate(scores):
        step = 10 * i
        budget = {"curriculum/trl/rollouts_delivered": i * per_eval,
                  "curriculum/tasks/distinct_trained": i * distinct_step}  # fmt: skip
        if step:
            lines.append({"step": step, "loss": 0.1, **budget})
        epoch = {} if epochs is None else {"epoch": epochs * i / (len(scores) - 1)}
        lines.append({"step": step, "eval_reward": score, "eval_loss": 0.0, **budget, **epoch})
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def test_one_run_per_arm_is_compared_but_not_judged(tmp_path: Path) -> None:
    a = write_run(tmp_path / "uniform", [0.1, 0.2, 0.3])
    b = write_run(tmp_path / "greso", [0.1, 0.25, 0.4], distinct_step=2)
    result = compare_arms(a, b)
    assert result.budget == 64 and result.metric == "eval_reward"
    assert result.difference == pytest.approx(0.1)
    np.testing.assert_allclose(result.distinct, [[6, 4]])
    assert result.interval is None
    assert result.verdict.startswith("Not judged: with one run per arm, whether B - A = +0.1000")
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
    assert above.verdict.startswith("B is above A beyond the seed-to-seed noise")
    assert "over 4 seed pairs" in above.verdict
    within = compare_arms(tmp_path / "same" / "uniform", tmp_path / "noisy" / "greso")
    lo, hi = within.interval or (1.0, 1.0)
    assert lo <= 0 <= hi and within.verdict.startswith("Within noise:")


def test_the_common_budget_interpolates_and_a_resume_keeps_the_last_record(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a", [0.0, 0.2, 0.4])  # 64 rollouts by the end
    b = write_run(tmp_path / "b", [0.0, 0.3], per_eval=48)  # 48
    with open(a / "frontier_metrics.jsonl", "a") as fh:  # a resumed run re-logs step 10
        fh.write(json.dumps({"step": 10, "eval_reward": 0.25,
                             "curriculum/trl/rollouts_delivered": 32}) + "\n")  # fmt: skip
    run = read_run(a)
    np.testing.assert_allclose(run.score, [0.0, 0.25, 0.4])
    result = compare_arms(a, b)
    assert result.budget == 48
    np.testing.assert_allclose(result.scores, [[0.25 + 0.15 * 16 / 32, 0.3]])


def test_frontier_train_runs_are_read_too(tmp_path: Path) -> None:
    for arm, final in (("uniform", 0.3), ("bots", 0.35)):
        rows = [{"step": 0, "eval/mean_score": 0.1},
                {"step": 5, "train/rollouts_total": 80, "train/reward_mean": 0.2},
                {"step": 5, "eval/mean_score": final}]  # fmt: skip
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = compare_arms(tmp_path / "uniform", tmp_path / "bots")
    assert result.metric == "eval/mean_score" and result.budget == 80
    assert result.difference == pytest.approx(0.05)


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
    assert "A/B: held-out eval_reward against rollouts spent" in out
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
    assert result.verdict == "Not judged: the arms are identical (B chose what A chose)."
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
    assert not result.identical and result.verdict.startswith("B is above A")
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
    assert result.budget == 96  # skip's last evaluation: uniform at 3/4 of its schedule
    assert result.difference == pytest.approx(0.48 - 0.4)
    text = result.table()
    assert "At 96 rollouts, the most every run reached" in text
    assert (
        "Final against final, each run's last evaluation (the same steps where both arms ran "
        "one schedule, as with rollouts: kept), held-out eval_reward (mean over 3 seeds): "
        "A (uniform) 0.5000 at 128 rollouts, B (skip) 0.4800 at 96 rollouts (0.75x A's), "
        "B - A -0.0200."
    ) in text
    assert "\nAt equal rollouts: B is above A beyond the seed-to-seed noise" in text
    assert "\nFinal against final: B is below A beyond the seed-to-seed noise" in text
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
    assert "At equal rollouts: B is above A beyond the seed-to-seed noise" in captured.out
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
