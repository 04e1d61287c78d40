"""Multi-digit addition (and differences, products): levels, generator, carries, answer
extraction, task features."""

from __future__ import annotations

import numpy as np
import pytest

from frontier_rft.tasks.arithmetic import (
    ADDITION_FEATURE_NAMES,
    ARITHMETIC_PROMPT,
    OPERATION_FEATURE_NAMES,
    AdditionLevel,
    ArithmeticVerifier,
    addition_demonstration,
    addition_features,
    addition_levels,
    borrow_profile,
    carry_profile,
    extract_integer,
    generate_addition,
)
from frontier_rft.tasks.base import TaskItem
from frontier_rft.tasks.suite import heldout_split, load_task, task_key, train_split


def test_levels_parse_and_reject() -> None:
    assert addition_levels("2,3x1") == [AdditionLevel(2, 2), AdditionLevel(3, 1)]
    for bad in ("", "a", "0", "3x", "13"):
        with pytest.raises(ValueError):
            addition_levels(bad)


def test_generator_is_seeded_distinct_and_round_robin() -> None:
    levels = addition_levels("2,4")
    items = generate_addition(40, 7, levels)
    assert items == generate_addition(40, 7, levels)
    assert items != generate_addition(40, 8, levels)
    assert len({(it.reference["a"], it.reference["b"]) for it in items}) == 40
    for i, it in enumerate(items):
        a, b = it.reference["a"], it.reference["b"]
        digits = 2 if i % 2 == 0 else 4
        assert it.level == i % 2 and len(str(a)) == digits and len(str(b)) == digits
        assert it.reference["answer"] == a + b
        assert f"{a} + {b}" in it.prompt
        assert it.difficulty == pytest.approx(digits + 0.1 * carry_profile(a, b)[0])


def test_carry_profile() -> None:
    assert carry_profile(12, 34) == (0, 0)
    assert carry_profile(999, 1) == (3, 3)
    assert carry_profile(19, 19) == (1, 1)
    assert carry_profile(5050, 5050) == (2, 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5110", 5110),
        ("The answer is 5,110.", 5110),
        ("4721 + 389 = 5110", 5110),
        ("\\boxed{5110} and then 7", 5110),
        ("<answer>42</answer> 17", 42),
        ("<answer> -3", -3),
        ("no number", None),
        ("", None),
    ],
)
def test_extract_integer(text: str, value: int | None) -> None:
    assert extract_integer(text) == value


def test_verifier_rewards() -> None:
    item = generate_addition(1, 0, addition_levels("3"))[0]
    right = addition_demonstration(item)
    assert ArithmeticVerifier().score(item, right) == 1.0
    assert ArithmeticVerifier().score(item, str(item.reference["answer"] + 1)) == 0.0
    assert ArithmeticVerifier(format_reward=0.1).score(item, "7") == 0.1
    assert ArithmeticVerifier(format_reward=0.1).score(item, "none") == 0.0
    with pytest.raises(ValueError):
        ArithmeticVerifier(format_reward=2.0)


def test_features_are_task_structured_and_standardised() -> None:
    items = generate_addition(60, 1, addition_levels("2,5"))
    raw = addition_features(items, normalize=False)
    assert raw.shape == (60, len(ADDITION_FEATURE_NAMES))
    assert raw[0, 0] == 2 and raw[1, 0] == 5
    x = addition_features(items)
    assert np.allclose(x.mean(axis=0), 0.0, atol=1e-9)


def test_suite_splits_are_disjoint_and_keys_symmetric() -> None:
    suite = load_task("arithmetic")
    train = train_split(suite, 64, 1, "2,3")
    held = heldout_split(suite, 16, 2, "2,3")
    assert not {task_key(it) for it in train} & {task_key(it) for it in held}
    item = train[0]
    a, b = item.reference["a"], item.reference["b"]
    swapped = type(item)(0, "arithmetic", "x", {"a": b, "b": a, "answer": a + b})
    assert task_key(swapped) == task_key(item)
    pool_extras = suite.pool_extras(train)
    assert pool_extras["features"].shape[0] == 64 and len(pool_extras["keys"]) == 64


def test_difference_and_product_levels_parse_and_name() -> None:
    assert addition_levels("2-2,1*2,3+1") == [
        AdditionLevel(2, 2, "-"),
        AdditionLevel(1, 2, "*"),
        AdditionLevel(3, 1),
    ]
    assert [lv.name for lv in addition_levels("2,2x3,2-2,1*2")] == ["2x2", "2x3", "2-2", "1*2"]
    for bad in ("2-", "*2", "2/2", "2-13", "-1"):
        with pytest.raises(ValueError):
            addition_levels(bad)


def test_differences_are_non_negative_and_products_exact() -> None:
    items = generate_addition(60, 3, addition_levels("2-2,1*2,2"))
    for i, it in enumerate(items):
        a, b, op = it.reference["a"], it.reference["b"], it.reference.get("op", "+")
        assert op == ("-", "*", "+")[i % 3] and f"{a} {op} {b}?" in it.prompt
        assert it.reference["answer"] == {"+": a + b, "-": a - b, "*": a * b}[op]
        if op == "-":
            assert a >= b and it.difficulty == pytest.approx(2 + 0.1 * borrow_profile(a, b)[0])
        if op == "*":
            assert len(str(a)) == 1 and len(str(b)) == 2 and it.difficulty == 3.0
    # Sums are what they always were: same prompts, references and keys as before ops existed.
    sums = generate_addition(5, 0, addition_levels("2"))
    assert all(set(it.reference) == {"a", "b", "answer"} for it in sums)
    assert sums[0].prompt == ARITHMETIC_PROMPT.format(
        a=sums[0].reference["a"], b=sums[0].reference["b"]
    )


def test_borrow_profile() -> None:
    assert borrow_profile(100, 1) == (2, 2)  # 100 - 1: borrow from the tens, then the hundreds
    assert borrow_profile(52, 38) == (1, 1)
    assert borrow_profile(99, 11) == (0, 0)
    assert borrow_profile(1000, 999) == (3, 3)


def test_keys_of_differences_keep_order_and_products_do_not() -> None:
    def item(a: int, b: int, op: str) -> TaskItem:
        ref = {"a": a, "b": b, "answer": 0} | ({} if op == "+" else {"op": op})
        return TaskItem(0, "arithmetic", "x", ref)

    assert task_key(item(3, 5, "+")) == task_key(item(5, 3, "+")) == "add|3|5"
    assert task_key(item(5, 3, "*")) == task_key(item(3, 5, "*")) == "mul|3|5"
    assert task_key(item(53, 35, "-")) == "sub|53|35" != task_key(item(35, 53, "-"))
    assert len({task_key(item(3, 5, op)) for op in "+-*"}) == 3


def test_mixed_pools_split_cleanly_and_carry_operation_features() -> None:
    suite = load_task("arithmetic")
    train = train_split(suite, 100, 1, "1x2,2-2,1*2")
    held = heldout_split(suite, 30, 2, "1x2,2-2,1*2")
    assert not {task_key(it) for it in train} & {task_key(it) for it in held}
    x = addition_features(train, normalize=False)
    assert x.shape == (100, len(ADDITION_FEATURE_NAMES) + len(OPERATION_FEATURE_NAMES))
    ops = [it.reference.get("op", "+") for it in train]
    assert x[:, -2].tolist() == [float(o == "-") for o in ops]
    assert x[:, -1].tolist() == [float(o == "*") for o in ops]
    product = ops.index("*")
    assert x[product, 3] == x[product, 4] == 0.0  # no carries counted for a product
