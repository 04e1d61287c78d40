"""METIS selection: judge prompt (appendix A.1), strict parser, judge reward / EMA baseline,
failure accounting, calibration memory, top-B selection, judge records, behaviour vs uniform."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.selectors.metis import HeuristicJudge, METISConfig, METISSelector
from frontier_rft.selectors.metis.judge import (
    ALLOWED_VALUES,
    parse_judgment,
    render_judge_prompt,
    system_message,
    user_message,
)
from helpers import build, drive, mixed_share, world_pool

# ----------------------------------------------------------------------------- prompt template


def test_system_message_is_the_appendix_a1_text() -> None:
    text = system_message()
    lines = text.split("\n")
    assert len(lines) == 3
    assert lines[0].startswith(
        "You are a predictor that estimates the reward variance for a candidate problem. "
        "Reward variance is the variance of the rewards across multiple solution attempts by "
        "the current model on the same problem. High variance means rollouts disagree --- "
    )
    assert lines[0].endswith(
        "Low variance means rollouts agree (the model consistently passes or consistently "
        "fails), so there is little gradient to extract."
    )
    assert lines[1] == (
        "The labeled examples show actual reward variances from recent model performance; "
        "use them to calibrate your prediction."
    )
    assert lines[2] == (
        "Output your final prediction inside \\boxed{}, choosing one number from this list: "
        "[0.00, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.18, 0.20, 0.25]. "
        "Example final line: \\boxed{0.10}."
    )
    # K = 0 (appendix B.4): the calibration paragraph is dropped.
    assert "labeled examples" not in system_message(calibration=False)


def test_user_message_layout() -> None:
    text = user_message([("What is 1+1?", 0.0), ("Hard one", 0.109375)], "Candidate text")
    assert text == (
        "Predict the reward variance for the next problem. The examples below show actual "
        "reward variances from recent model performance. Use them to calibrate your "
        "prediction. Put your final variance prediction inside \\boxed{}.\n"
        '[Example 1]\nPROMPT:\n"""\nWhat is 1+1?\n"""\nREWARD_VARIANCE: 0.000\n'
        '[Example 2]\nPROMPT:\n"""\nHard one\n"""\nREWARD_VARIANCE: 0.109\n'
        '[Candidate]\nPROMPT:\n"""\nCandidate text\n"""'
    )
    assert user_message([], "C", calibration=False) == (
        "Predict the reward variance for the next problem. "
        "Put your final variance prediction inside \\boxed{}.\n"
        '[Candidate]\nPROMPT:\n"""\nC\n"""'
    )
    assert render_judge_prompt("S", "U") == "<|system|>\nS\n<|user|>\nU\n<|assistant|>\n"


class Spy:
    """A judge that records its inputs and answers from a fixed table (default 0.10)."""

    is_llm = True

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[list[str]] = []

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        self.calls.append(list(prompts))
        out = []
        for p in prompts:
            candidate = p.rsplit('[Candidate]\nPROMPT:\n"""\n', 1)[1].split('\n"""', 1)[0]
            out.append(self.answers.get(candidate, "\\boxed{0.10}"))
        return out


def _pool(prompts: list[str]) -> TaskPool:
    return TaskPool(num_tasks=len(prompts), prompts=prompts)


def test_judge_gets_one_call_with_every_candidate_rendered_from_memory() -> None:
    prompts = [f"p{i}" for i in range(10)]
    spy = Spy()
    sel = make_selector("metis", _pool(prompts), seed=0, judge=spy, pool_multiplier=2)
    ids = sel.select(3)
    assert len(spy.calls) == 1 and len(spy.calls[0]) == 6  # m * B candidates, one call
    sel.update(Feedback(np.repeat(ids, 2), np.tile([1.0, 0.0], 3), step=0))
    sel.select(3)
    exemplars = [(prompts[t], 0.25) for t in sorted(ids.tolist())]
    assert sel.exemplars() == sorted(exemplars)  # all three fit in memory (K = 3)
    memory = sel.exemplars()
    for rendered in spy.calls[1]:
        candidate = rendered.rsplit('PROMPT:\n"""\n', 1)[1].split("\n", 1)[0]
        user = user_message(memory, candidate)
        assert rendered == render_judge_prompt(system_message(), user)


def test_config_defaults_are_table_5_and_algorithm_1() -> None:
    """Table 5: lambda = 0.01, K = 3, baseline EMA 0.95, pool multiplier 8; Algorithm 1:
    b_0 = 0; A.1: the eleven answer values; sec. 4.1: failures fall back to 0.0."""
    cfg = METISConfig()
    assert (cfg.judge_loss_weight, cfg.memory_size, cfg.baseline_ema) == (0.01, 3, 0.95)
    assert (cfg.pool_multiplier, cfg.baseline_init, cfg.fallback_prediction) == (8, 0.0, 0.0)
    want = (0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.18, 0.20, 0.25)
    assert cfg.answer_values == want
    spy = Spy()
    sel = make_selector("metis", _pool([f"p{i}" for i in range(100)]), seed=0, judge=spy)
    assert sel.config == cfg
    sel.select(3)
    assert len(spy.calls[0]) == 24  # |C_t| = m * B = 8 * 3


def test_candidate_pool_is_capped_at_the_pool_size() -> None:
    spy = Spy()
    sel = make_selector("metis", _pool(["a", "b", "c", "d"]), seed=0, judge=spy)
    sel.select(3)
    assert len(spy.calls[0]) == 4


# ----------------------------------------------------------------------------- parser

PARSE_CASES = {
    "plain": ("\\boxed{0.12}", 0.12),
    "reasoning then box": ("I think it is moderate.\nTherefore:\n\\boxed{0.15}", 0.15),
    "spaces": ("\\boxed{ 0.10 }", 0.10),
    "leading dot": ("\\boxed{.25}", 0.25),
    "integer zero": ("\\boxed{0}", 0.0),
    "bound 1/4": ("\\boxed{0.25}", 0.25),
    "last box wins": ("\\boxed{0.02} no wait \\boxed{0.20}", 0.20),
    "nested box": ("\\boxed{\\boxed{0.06}}", 0.06),
    "in range, not listed (paper accepts)": ("\\boxed{0.13}", 0.13),
    "appendix B.4 response": ("is 37. \\boxed{0.00}/*\nuser\n... \\boxed{1}.", None),
    "out of range": ("\\boxed{0.30}", None),
    "one": ("\\boxed{1}", None),
    "negative": ("\\boxed{-0.05}", None),
    "negative zero": ("\\boxed{-0.00}", None),
    "fraction": ("\\boxed{\\frac{1}{8}}", None),
    "expression": ("\\boxed{0.1+0.05}", None),
    "exponent": ("\\boxed{1e-1}", None),
    "nan": ("\\boxed{nan}", None),
    "inf": ("\\boxed{inf}", None),
    "empty box": ("\\boxed{}", None),
    "word": ("\\boxed{high}", None),
    "python": ("\\boxed{__import__('os').getcwd()}", None),
    "two dots": ("\\boxed{0.1.2}", None),
    "unclosed last box": ("\\boxed{0.10} then \\boxed{0.2", None),
    "no box": ("The variance is 0.10.", None),
    "empty": ("", None),
    "not a string": (None, None),
}


@pytest.mark.parametrize("case", sorted(PARSE_CASES))
def test_parser(case: str) -> None:
    text, expected = PARSE_CASES[case]
    got = parse_judgment(text)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_parser_with_listed_values_only() -> None:
    assert parse_judgment("\\boxed{0.13}", ALLOWED_VALUES) is None
    assert parse_judgment("\\boxed{0.150}", ALLOWED_VALUES) == pytest.approx(0.15)


def test_parser_is_fast_on_huge_inputs() -> None:
    start = time.perf_counter()
    assert parse_judgment("x" * 10_000_000 + "\\boxed{0.2}") == pytest.approx(0.2)
    assert parse_judgment("\\boxed{" + "9" * 1_000_000 + "}") is None
    assert parse_judgment("\\boxed{" * 200_000) is None
    assert parse_judgment("{" * 1_000_000 + "\\boxed{0.1}" + "}" * 1_000_000) == pytest.approx(0.1)
    assert time.perf_counter() - start < 1.0


# ----------------------------------------------------------------------------- reward and baseline

P4 = ["alpha", "beta", "gamma", "delta"]
ANSWERS = {
    "alpha": "\\boxed{0.25}",
    "beta": "\\boxed{0.10}",
    "gamma": "garbage",
    "delta": "\\boxed{9}",
}


def _step(sel: METISSelector, step: int, batch: int) -> np.ndarray:
    ids = sel.select(batch)
    # alpha: two successes of four (v = 1/4); everything else always solved (v = 0).
    rewards = {0: [1.0, 0.0, 1.0, 0.0]}
    flat = np.concatenate([rewards.get(int(t), [1.0] * 4) for t in ids])
    sel.update(Feedback(np.repeat(ids, 4), flat, step=step))
    sel.flush()
    return ids


def test_judge_reward_advantage_and_ema_baseline_match_hand_values() -> None:
    sel = make_selector("metis", _pool(P4), seed=0, judge=Spy(ANSWERS))
    assert isinstance(sel, METISSelector)
    ids = _step(sel, 0, batch=2)
    assert sorted(ids.tolist()) == [0, 1]  # top-2 predictions 0.25 and 0.10
    recs = {r.task_id: r for r in sel.judge_records(0)}
    # R = 1 - (4 (v_hat - v))^2: alpha 1 - 0 = 1; beta 1 - (0.4)^2 = 0.84; b_0 = 0.
    assert recs[0].reward == pytest.approx(1.0) and recs[0].advantage == pytest.approx(1.0)
    assert recs[1].reward == pytest.approx(0.84) and recs[1].advantage == pytest.approx(0.84)
    assert recs[1].realised_variance == 0.0 and recs[0].realised_variance == 0.25
    b1 = 0.05 * 0.92
    assert sel.metrics()["metis/judge_baseline"] == pytest.approx(b1)
    _step(sel, 1, batch=2)
    recs = {r.task_id: r for r in sel.judge_records(1)}
    assert recs[1].baseline == pytest.approx(b1)  # advantage uses b before this batch's update
    assert recs[1].advantage == pytest.approx(0.84 - b1)
    assert sel.metrics()["metis/judge_baseline"] == pytest.approx(0.95 * b1 + 0.05 * 0.92)
    assert sel.metrics()["metis/judge_reward_mean"] == pytest.approx(0.92)
    assert sel.metrics()["metis/calibration_mae"] == pytest.approx(0.05)
    assert sel.metrics()["metis/calibration_corr"] == pytest.approx(1.0)


def test_failed_judgments_fall_back_to_zero_and_are_scored() -> None:
    sel = make_selector("metis", _pool(P4), seed=0, judge=Spy(ANSWERS))
    _step(sel, 0, batch=4)
    recs = {r.task_id: r for r in sel.judge_records(0)}
    assert recs[2].failed and recs[3].failed and not recs[0].failed
    assert recs[2].prediction == 0.0 and recs[2].response == "garbage"
    assert recs[2].reward == 1.0  # fallback 0.0 vs realised 0.0, scored by Eq. 8
    penalised = make_selector("metis", _pool(P4), seed=0, judge=Spy(ANSWERS), failure_reward=-1.0)
    _step(penalised, 0, batch=4)
    recs = {r.task_id: r for r in penalised.judge_records(0)}
    assert recs[2].reward == -1.0 and recs[3].reward == -1.0 and recs[0].reward == 1.0


def test_failure_rate_accounting() -> None:
    judge = HeuristicJudge(malformed_rate=0.3, seed=1)
    seen: list[bool] = []

    def spy(prompts: list[str]) -> list[str]:
        out = judge(prompts)
        seen.extend(parse_judgment(a) is None for a in out)
        return out

    sel = make_selector("metis", world_pool(), seed=3, judge=spy)
    drive(sel, steps=5)  # 5 selects of 48 candidates each
    sel.flush()
    m = sel.metrics()
    assert len(seen) == 5 * 48 and m["metis/judgments"] == 5 * 48
    assert 0.15 < np.mean(seen) < 0.45
    assert m["metis/judge_failure_rate_cumulative"] == pytest.approx(np.mean(seen))
    assert m["metis/judge_failure_rate"] == pytest.approx(np.mean(seen[-48:]))
    recs = sel.pop_judge_records()
    assert all(r.failed == (parse_judgment(r.response) is None) for r in recs)
    assert all(r.prediction == 0.0 for r in recs if r.failed)


def test_malformed_answers_are_deterministic_and_unparseable() -> None:
    prompts = [f"prompt {i}" for i in range(2000)]
    answers = HeuristicJudge(malformed_rate=0.25, seed=7)(prompts)
    bad = [parse_judgment(a) is None for a in answers]
    assert abs(np.mean(bad) - 0.25) < 0.04
    assert answers == HeuristicJudge(malformed_rate=0.25, seed=7)(prompts)
    assert answers != HeuristicJudge(malformed_rate=0.25, seed=8)(prompts)
    assert all(parse_judgment(a) is not None for a in HeuristicJudge()(prompts))


# ----------------------------------------------------------------------------- memory


def _feed(sel: METISSelector, ids: list[int], step: int, successes: int = 1) -> None:
    rewards = [1.0] * successes + [0.0] * (4 - successes)
    sel.update(Feedback(np.repeat(ids, 4), np.tile(rewards, len(ids)), step=step))
    sel.flush()


def test_memory_keeps_the_k_most_recent_in_order() -> None:
    prompts = [f"q{i}" for i in range(10)]
    sel = make_selector("metis", _pool(prompts), seed=0, judge=Spy())
    assert isinstance(sel, METISSelector)
    _feed(sel, [0, 1], step=0)  # feedback for tasks METIS never selected still counts
    _feed(sel, [2], step=1)
    _feed(sel, [3, 4], step=2)
    assert [p for p, _ in sel.exemplars()] == ["q2", "q3", "q4"]
    _feed(sel, [5], step=1)  # late piece of step 1: newer than q2 (same step, later arrival)
    assert [p for p, _ in sel.exemplars()] == ["q5", "q3", "q4"]
    _feed(sel, [6], step=0)  # late piece of an older step: displaces nothing
    assert [p for p, _ in sel.exemplars()] == ["q5", "q3", "q4"]
    assert sel.exemplars()[0][1] == pytest.approx(0.1875)
    _feed(sel, [7, 8, 9, 0, 1], step=3)  # a batch larger than K: K of its groups
    names = [p for p, _ in sel.exemplars()]
    assert len(names) == 3 and set(names) <= {"q7", "q8", "q9", "q0", "q1"}


def test_spread_memory_takes_variance_quantiles_in_ascending_order() -> None:
    prompts = [f"q{i}" for i in range(6)]
    sel = make_selector("metis", _pool(prompts), seed=0, judge=Spy(), memory_selection="spread")
    assert isinstance(sel, METISSelector)
    ids = np.repeat([0, 1, 2, 3, 4], 4)
    rewards = np.concatenate([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    sel.update(Feedback(ids, rewards.astype(float), step=0))
    sel.flush()
    got = sel.exemplars()
    assert [v for _, v in got] == pytest.approx([0.0, 0.1875, 0.25])
    assert got[-1][0] == "q2"


def test_memory_size_zero_uses_the_no_calibration_prompt() -> None:
    spy = Spy()
    sel = make_selector("metis", _pool(["a", "b", "c"]), seed=0, judge=spy, memory_size=0)
    assert isinstance(sel, METISSelector)
    _feed(sel, [0, 1], step=0)
    sel.select(1)
    assert "[Example" not in spy.calls[0][0] and "labeled examples" not in spy.calls[0][0]


# ----------------------------------------------------------------------------- selection


def test_selects_the_top_b_predictions() -> None:
    prompts = [f"t{i}" for i in range(11)]
    answers = {f"t{i}": f"\\boxed{{{v:.2f}}}" for i, v in enumerate(ALLOWED_VALUES)}
    sel = make_selector("metis", _pool(prompts), seed=0, judge=Spy(answers))
    assert sorted(sel.select(4).tolist()) == [7, 8, 9, 10]
    m = sel.metrics()
    assert m["metis/selected_prediction_mean"] == pytest.approx(np.mean(ALLOWED_VALUES[-4:]))
    assert m["metis/prediction_mean"] == pytest.approx(np.mean(ALLOWED_VALUES))
    assert m["metis/prediction_std"] == pytest.approx(np.std(ALLOWED_VALUES))


def test_ties_are_broken_by_the_seeded_rng() -> None:
    prompts = [f"t{i}" for i in range(20)]
    picks = set()
    for seed in range(6):
        a = make_selector("metis", _pool(prompts), seed=seed, judge=Spy()).select(3)
        b = make_selector("metis", _pool(prompts), seed=seed, judge=Spy()).select(3)
        np.testing.assert_array_equal(a, b)
        picks.add(tuple(sorted(a.tolist())))
    assert len(picks) > 1


def test_bad_judge_output_raises_and_leaves_state_unchanged() -> None:
    from helpers import assert_state_equal

    def short(prompts: list[str]) -> list[str]:
        return ["\\boxed{0.1}"] * (len(prompts) - 1)

    pool = world_pool()
    sel = make_selector("metis", pool, seed=0, judge=HeuristicJudge())
    drive(sel, steps=2)
    sel.flush()
    before = sel.state_dict()
    sel.judge = short
    with pytest.raises(ValueError, match="responses"):
        sel.select(6)
    sel.judge = lambda prompts: "\\boxed{0.1}"
    with pytest.raises(ValueError, match="list"):
        sel.select(6)
    assert_state_equal(before, sel.state_dict())


def test_requires_prompts_and_a_judge() -> None:
    with pytest.raises(ValueError, match=r"TaskPool\.prompts"):
        make_selector("metis", TaskPool(num_tasks=5), judge=HeuristicJudge())
    with pytest.raises(ValueError, match="judge"):
        make_selector("metis", world_pool())


# ----------------------------------------------------------------------------- records


def test_records_fifo_matching_expiry_and_bounds() -> None:
    pool = _pool([f"t{i}" for i in range(4)])
    sel = make_selector("metis", pool, seed=0, judge=Spy(), pending_horizon=3)
    assert isinstance(sel, METISSelector)
    first = sel.select(4)
    sel.select(4)  # same tasks judged again before any feedback (late-feedback trainers)
    assert sel.metrics()["metis/judgments_pending"] == 8
    _feed(sel, first.tolist(), step=0)
    recs = sel.judge_records(0)
    assert [r.select_call for r in recs] == [0] * 4  # oldest judgment scored first
    assert recs[0].messages[0] == {"role": "system", "content": sel.system_message}
    assert recs[0].prompt == render_judge_prompt(sel.system_message, recs[0].messages[1]["content"])
    assert sel.metrics()["metis/judgments_pending"] == 4
    sel.select(4)
    sel.select(4)
    sel.select(4)  # judgments of call 1 are now older than the horizon
    assert sel.metrics()["metis/judgments_expired"] == 4
    for step in (1, 2, 3):
        _feed(sel, [0, 1, 2, 3], step=step)
    assert sel.judge_records(1) == []  # only the last keep_judge_records=2 batches are kept
    assert len(sel.judge_records(3)) == 4
    assert len(sel.pop_judge_records()) == 8
    assert sel.pop_judge_records() == []


def test_non_llm_judge_is_labelled() -> None:
    assert "non-LLM" in repr(HeuristicJudge()) and "NON-LLM" in (HeuristicJudge.__doc__ or "")
    heuristic = build("metis", world_pool())
    drive(heuristic, steps=1)
    assert heuristic.metrics()["metis/non_llm_judge"] == 1.0
    llm_like = make_selector("metis", world_pool(), judge=Spy())
    assert llm_like.metrics()["metis/non_llm_judge"] == 0.0


# ----------------------------------------------------------------------------- behaviour


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metis_picks_mixed_tasks_far_more_often_than_uniform(seed: int) -> None:
    uniform, metis = mixed_share("uniform", seed), mixed_share("metis", seed)
    assert uniform < 0.45
    assert metis > 0.75
    assert metis > uniform + 0.3


def test_a_long_winded_judge_still_saves_and_resumes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An LLM judge's replies can be long: they are saved as arrays, not in the JSON header
    (100 MB of replies used to exceed the header's bound and fail every save)."""
    from frontier_rft import load_selector, save_selector
    from helpers import assert_state_equal

    reply = "Let me think. " * 45_000 + "\\boxed{0.25}"  # ~630 kB, parseable at the end

    def judge(prompts: Sequence[str]) -> list[str]:
        return [reply + "\u00e9\x00" for _ in prompts]  # non-ASCII and NUL survive too

    pool = TaskPool(num_tasks=200, prompts=[f"problem {i}" for i in range(200)])
    sel = make_selector("metis", pool, seed=0, judge=judge)
    for step in range(8):
        _step(sel, step, 20)
    for _ in range(8):
        sel.select(20)  # judged, awaiting feedback: their prompts and replies are state
    path = tmp_path / "metis.npz"
    save_selector(sel, path)
    again = load_selector(path, judge=judge)
    assert_state_equal(sel.state_dict(), again.state_dict())
    assert again.select(5).tolist() == sel.select(5).tolist()
