"""Countdown generator, solver and verifier: correctness, rewards, hostile answers."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontier_rft.tasks import TaskItem, load_jsonl, pool_from_items, save_jsonl
from frontier_rft.tasks.countdown import (
    COUNTDOWN_LEVELS,
    CountdownLevel,
    CountdownVerifier,
    analyse_countdown,
    countdown_demonstration,
    countdown_steps,
    evaluate_expression,
    generate_countdown,
    parse_expression,
    solve_countdown,
)

VERIFIER = CountdownVerifier()
ITEMS = generate_countdown(80, seed=7)


def _item(numbers: list[int], target: int) -> TaskItem:
    ref = {"numbers": numbers, "target": target}
    return TaskItem(task_id=0, domain="countdown", prompt="p", reference=ref)


def test_generator_is_seeded_distinct_and_levelled() -> None:
    again = generate_countdown(80, seed=7)
    assert [i.to_json() for i in again] == [i.to_json() for i in ITEMS]
    assert generate_countdown(80, seed=8)[0].reference != ITEMS[0].reference
    keys = {(tuple(sorted(i.reference["numbers"])), i.reference["target"]) for i in ITEMS}
    assert len(keys) == len(ITEMS)
    for item in ITEMS:
        spec = COUNTDOWN_LEVELS[len(item.reference["numbers"])]
        assert item.level == spec.num_numbers - 3
        assert spec.min_target <= item.reference["target"] <= spec.max_target
        assert all(spec.min_number <= n <= spec.max_number for n in item.reference["numbers"])
        assert item.reference["target"] not in item.reference["numbers"]
        assert str(item.reference["numbers"]) in item.prompt and "<answer>" in item.prompt
    assert sorted({i.level for i in ITEMS}) == [0, 1, 2, 3]
    assert [i.task_id for i in ITEMS] == list(range(80))


def test_generator_custom_levels_and_dataset_roundtrip(tmp_path: Path) -> None:
    easy = CountdownLevel(3, max_number=10, min_target=1, max_target=30)
    items = generate_countdown(30, seed=1, levels=(easy, 4))
    assert {i.level for i in items} == {0, 1}
    assert all(max(i.reference["numbers"]) <= 10 for i in items if i.level == 0)
    save_jsonl(items, tmp_path / "cd.jsonl")
    assert load_jsonl(tmp_path / "cd.jsonl") == items
    pool = pool_from_items(items)
    assert pool.num_tasks == 30


def test_generator_rejects_impossible_spec() -> None:
    with pytest.raises(ValueError, match="min_target"):
        CountdownLevel(3, min_target=50, max_target=10)
    with pytest.raises(ValueError, match="widen"):
        tiny = CountdownLevel(3, max_number=2, min_target=900, max_target=999)
        generate_countdown(1, 0, levels=(tiny,))


def test_every_stored_solution_and_demonstration_scores_one() -> None:
    for item in ITEMS:
        assert VERIFIER.score(item, countdown_demonstration(item)) == 1.0
        assert VERIFIER.score(item, countdown_demonstration(item, with_steps=True)) == 1.0


def test_solver_solves_every_generated_item() -> None:
    for item in ITEMS[:24]:
        expr = solve_countdown(item.reference["numbers"], item.reference["target"])
        assert expr is not None
        assert VERIFIER.score(item, f"<answer>{expr}</answer>") == 1.0


def test_solver_finds_fraction_only_solutions_and_reports_unsolvable() -> None:
    expr = solve_countdown([1, 3, 4, 6], 24)
    assert expr is not None
    assert VERIFIER.score(_item([1, 3, 4, 6], 24), f"<answer>{expr}</answer>") == 1.0
    assert solve_countdown([1, 1, 1], 100) is None


def test_demonstration_steps_follow_the_expression() -> None:
    assert countdown_steps("24 * 8 * 6 / (60 - 56) + 65") == [
        "24 * 8 = 192",
        "192 * 6 = 1152",
        "60 - 56 = 4",
        "1152 / 4 = 288",
        "288 + 65 = 353",
    ]


@pytest.mark.parametrize(
    ("completion", "reward"),
    [
        ("<think>17+91=108, +5</think>\n<answer>91 + 17 + 5</answer>", 1.0),
        ("<answer> (91 + 17) + 5 </answer>", 1.0),
        ("<answer>5 + 17 + 91", 1.0),  # generation stopped on </answer>
        ("<answer>5 + 17 + 91 = 113</answer>", 0.0),  # '=' is not in the whitelist
        ("<answer>91 + 17 - 5</answer>", 0.1),  # wrong value
        ("<answer>91 + 17 + 5 + 5</answer>", 0.1),  # number reused
        ("<answer>91 + 22</answer>", 0.1),  # number not given
        ("<answer>91 / (17 - 17) + 5</answer>", 0.1),  # division by zero (and reuse)
        ("<answer>-5 + 91 + 17</answer>", 0.0),  # no unary minus
        ("<answer>5 ** 2 + 91 + 17</answer>", 0.0),  # no exponent
        ("<answer>5 ^ 17 ^ 91</answer>", 0.0),
        ("<answer>5.0 + 17 + 91</answer>", 0.0),
        ("<answer>(5 + 17 + 91</answer>", 0.0),
        ("<answer>five plus 17 plus 91</answer>", 0.0),
        ("<answer>__import__('os').system('true')</answer>", 0.0),
        ("<answer></answer>", 0.0),
        ("the answer is 5 + 17 + 91", 0.0),
        ("<answer>5 + 17 + 91</answer>", 1.0),
        ("<answer>9+1</answer> <answer>5 + 17 + 91</answer>", 1.0),  # the last answer counts
        ("<answer>5 + 17 + 91</answer><answer>1</answer>", 0.1),
        ("<answer>٥ + 17 + 91</answer>", 0.0),  # non-ASCII digits are not digits here
    ],
)
def test_reward_levels(completion: str, reward: float) -> None:
    assert VERIFIER.score(_item([5, 17, 91], 113), completion) == reward


def test_strict_closing_tag_option() -> None:
    strict = CountdownVerifier(accept_unclosed=False)
    assert strict.score(_item([5, 17, 91], 113), "<answer>5 + 17 + 91") == 0.0


def test_division_by_zero_with_correct_numbers_is_arithmetic_error() -> None:
    analysis = analyse_countdown([4, 2, 2], 1, "<answer>4 / (2 - 2)</answer>")
    assert analysis.status == "division_by_zero"
    assert VERIFIER.score(_item([4, 2, 2], 1), "<answer>4 / (2 - 2)</answer>") == 0.1


def test_exact_rational_arithmetic() -> None:
    analysis = analyse_countdown([1, 3, 4, 6], 24, "<answer>6 / (1 - 3 / 4)</answer>")
    assert analysis.status == "correct" and analysis.value == Fraction(24)
    # Floating point would make 1/3 * 3 == 1 a coincidence; exact arithmetic makes it exact.
    assert analyse_countdown([1, 3, 3], 1, "<answer>1 / 3 * 3</answer>").status == "correct"


def test_parser_precedence_and_associativity() -> None:
    tree = parse_expression("8 - 4 - 2")
    assert tree == ("-", ("-", 8, 4), 2)
    assert parse_expression("2 + 3 * 4") == ("+", 2, ("*", 3, 4))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="format_reward"):
        CountdownVerifier(format_reward=2.0)
    with pytest.raises(ValueError, match="max_depth"):
        CountdownVerifier(max_depth=0)


HOSTILE = [
    "<answer>" + "9" * 400 + "**" + "9" * 100 + "</answer>",  # huge exponent: not arithmetic
    "<answer>" + "9**9**9**9**9" + "</answer>",
    "<answer>" + "(" * 100_000 + "1" + ")" * 100_000 + "</answer>",  # deep nesting
    "<answer>" + "(" * 200 + "5+17+91" + ")" * 200 + "</answer>",
    "<answer>" + "1+" * 2_000_000 + "1</answer>",  # megabyte answer
    "x" * 5_000_000,  # megabyte completion, no answer
    "<answer>" * 200_000,  # many open tags
    "<answer>1</answer>" * 100_000,
    "<answer>" + "99999999*" * 56 + "9</answer>",  # large but legal product within 512 chars
    "<answer>" + "1/" * 250 + "1</answer>",
]


@pytest.mark.parametrize("completion", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_answers_are_rejected_fast(completion: str) -> None:
    item = _item([5, 17, 91], 113)
    start = time.perf_counter()
    reward = VERIFIER.score(item, completion)
    assert time.perf_counter() - start < 1.0
    assert reward in (0.0, 0.1)


def test_deep_nesting_within_cap_still_parses() -> None:
    ok = "<answer>" + "(" * 30 + "5+17+91" + ")" * 30 + "</answer>"
    assert VERIFIER.score(_item([5, 17, 91], 113), ok) == 1.0
    too_deep = "<answer>" + "(" * 33 + "5+17+91" + ")" * 33 + "</answer>"
    assert analyse_countdown([5, 17, 91], 113, too_deep).status == "too_deep"


def test_a_raised_length_cap_never_crashes_on_long_chains_or_numbers() -> None:
    """Answer trees were walked recursively (a 5,000-term chain: RecursionError) and a
    number of 4,300+ digits made int() raise a ValueError the verifier did not catch."""
    verifier = CountdownVerifier(max_answer_chars=50_000)
    item = _item([5, 17, 91], 113)
    chain = "+".join(["1"] * 5_000)
    start = time.process_time()
    assert verifier.analyse(item, f"<answer>{chain}</answer>").status == "invalid_numbers"
    assert evaluate_expression(parse_expression(chain)) == 5_000
    right = "5 + 17 + 91 " + "- 0 " * 5_000  # extra literals: wrong numbers, not a crash
    assert verifier.analyse(item, f"<answer>{right}</answer>").status == "invalid_numbers"
    huge = "9" * 5_000 + " - " + "9" * 5_000 + " + 113"
    assert verifier.analyse(item, f"<answer>{huge}</answer>").status == "bad_expression"
    assert verifier.score(item, f"<answer>{'9' * 4_000} - {'9' * 4_000}</answer>") == 0.1
    assert time.process_time() - start < 4.0


# ---------------------------------------------------------------------------- properties

_PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPS
@given(seed=st.integers(0, 2**31 - 1), count=st.sampled_from([3, 4, 5]))
def test_property_solver_output_scores_one(seed: int, count: int) -> None:
    item = generate_countdown(1, seed, levels=(count,))[0]
    expr = solve_countdown(item.reference["numbers"], item.reference["target"])
    assert expr is not None
    assert VERIFIER.score(item, f"<answer>{expr}</answer>") == 1.0


@_PROPS
@given(text=st.text(max_size=300))
def test_property_garbage_never_crashes(text: str) -> None:
    item = ITEMS[0]
    for completion in (text, f"<answer>{text}</answer>", f"<answer>{text}"):
        start = time.perf_counter()
        assert VERIFIER.score(item, completion) in (0.0, 0.1)
        assert time.perf_counter() - start < 1.0


_ARITH = st.text(alphabet="0123456789+-*/() ", max_size=200)


@_PROPS
@given(text=_ARITH)
def test_property_parseable_answers_earn_format_reward(text: str) -> None:
    item = _item([5, 17, 91], 113)
    reward = VERIFIER.score(item, f"<answer>{text}</answer>")
    try:
        parse_expression(text)
    except ValueError:
        assert reward == 0.0
    else:
        assert reward in (0.1, 1.0)


def test_the_give_up_budget_does_not_grow_with_the_size_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A level with a few dozen distinct items, asked for a million: the generator gives up
    after a fixed run of repeated draws, not after 20x the size asked (days for 10**9)."""
    from frontier_rft.tasks import countdown

    draws = 0
    real = countdown._random_instance

    def counted(rng: Any, spec: CountdownLevel) -> Any:
        nonlocal draws
        draws += 1
        if draws > 200_000:  # a budget that grows with n would pass this; stop the test here
            raise AssertionError("the generator kept drawing past a fixed budget")
        return real(rng, spec)

    monkeypatch.setattr(countdown, "_random_instance", counted)
    tiny = CountdownLevel(3, max_number=4, min_target=5, max_target=30)
    with pytest.raises(ValueError, match=r"only \d+ distinct items drawn .* request fewer"):
        generate_countdown(10**6, 0, levels=(tiny,))
    assert draws <= countdown.MAX_REPEATED_DRAWS + 10_000
