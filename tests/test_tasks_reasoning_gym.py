"""reasoning-gym tasks by name (real library): one schema on disk, the dataset's own
scorer rebuilt by name, difficulty knobs, and answers its scorers `eval` kept sandboxed."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontier_rft.tasks import TaskItem, load_jsonl, pool_from_items, sandbox, save_jsonl
from frontier_rft.tasks.reasoning_gym import (
    ReasoningGymTasks,
    ReasoningGymVerifier,
    RGTask,
    decode_json,
    encode_json,
    extract_answer_tag,
    is_plain_math,
)
from frontier_rft.tasks.sandbox import SandboxUnavailable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("reasoning_gym") is None,
        reason="reasoning-gym not installed (pip install 'frontier-rft[reasoning-gym]')",
    ),
]


HAS_BWRAP = sandbox.bwrap_path() is not None
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="no working bubblewrap here")


@pytest.fixture(scope="module")
def verifier() -> Iterator[ReasoningGymVerifier]:
    # Without bubblewrap the scoring tests opt in to limits alone (the default refuses).
    v = ReasoningGymVerifier(timeout_s=3.0, sandbox="require" if HAS_BWRAP else "limits_only")
    yield v
    v.close()


def test_scoring_needs_a_sandbox_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    item = ReasoningGymTasks(["arc_1d"], size=1).items()[0]
    with pytest.raises(SandboxUnavailable, match="limits_only"):
        ReasoningGymVerifier().score(item, _answer(item))


def _answer(item: TaskItem) -> str:
    return f"<think>...</think>\n<answer>{decode_json(item.reference['answer'])}</answer>"


def test_encode_json_roundtrips_tuples_and_sets() -> None:
    value = {"grid": ((1, 2), (3, 4)), "s": {3, 1}, "l": [1, (2,)], "n": None}
    assert decode_json(encode_json(value)) == value
    with pytest.raises(TypeError, match="cannot store"):
        encode_json(object())


def test_extract_answer_tag() -> None:
    assert extract_answer_tag("<answer>a</answer> <answer> b </answer>") == "b"
    assert extract_answer_tag("<answer>open") is None
    assert extract_answer_tag("<answer>" + "x" * 10_000 + "</answer>", max_chars=100) is None


def test_mixed_tasks_share_one_schema_and_score_by_name(
    tmp_path: Path, verifier: ReasoningGymVerifier
) -> None:
    tasks = ReasoningGymTasks(
        ["arc_1d", "zebra_puzzles", "countdown", "arc_agi"],
        size=2,
        seed=3,
        config={"zebra_puzzles": {"num_people": 3, "num_characteristics": 3}},
    )
    items = tasks.items()
    assert [it.domain for it in items] == [
        "rg:arc_1d", "rg:arc_1d", "rg:zebra_puzzles", "rg:zebra_puzzles",
        "rg:countdown", "rg:countdown", "rg:arc_agi", "rg:arc_agi",
    ]  # fmt: skip
    assert all("<answer>" in it.prompt for it in items)
    save_jsonl(items, tmp_path / "rg.jsonl")
    loaded = load_jsonl(tmp_path / "rg.jsonl")
    assert loaded == items
    assert pool_from_items(loaded).num_tasks == 8
    for item in loaded:  # arc_agi grids are tuples: they must survive the JSON file
        assert verifier.score(item, _answer(item)) == 1.0, item.domain
        assert verifier.score(item, "<answer>certainly not this</answer>") < 1.0
        assert verifier.score(item, "no tags") == 0.0


def test_difficulty_settings_change_the_tasks() -> None:
    easy = RGTask("zebra_puzzles", {"num_people": 2, "num_characteristics": 2}, level=0)
    hard = RGTask("zebra_puzzles", {"num_people": 5, "num_characteristics": 5}, level=2)
    items = ReasoningGymTasks([easy, hard], size=3, seed=0).items()
    assert [it.level for it in items] == [0, 0, 0, 2, 2, 2]
    assert max(len(it.prompt) for it in items[:3]) < min(len(it.prompt) for it in items[3:])
    assert items[3].reference["rg_config"]["num_people"] == 5


def test_seeded_and_unknown_names_are_explained() -> None:
    a = ReasoningGymTasks(["arc_1d"], size=3, seed=1).items()
    b = ReasoningGymTasks(["arc_1d"], size=3, seed=1).items()
    assert a == b
    with pytest.raises(ValueError, match="arc_1d"):
        ReasoningGymTasks(["arc1d"], size=1)


@needs_bwrap
def test_answers_that_scorers_eval_stay_in_the_sandbox(
    tmp_path: Path, verifier: ReasoningGymVerifier
) -> None:
    """string_insertion's scorer runs eval(answer): the effect must not reach the host."""
    item = ReasoningGymTasks(["string_insertion"], size=1, seed=0).items()[0]
    oracle = decode_json(item.reference["answer"])
    # The scorer's eval reads a list: a list literal of the right characters earns 0.1 ...
    assert verifier.score(item, f"<answer>{list(oracle)!r}</answer>") == 0.1
    # ... and in the worker it reads literals only: code that builds the list earns nothing.
    assert verifier.score(item, f"<answer>list({oracle!r})</answer>") == 0.0
    marker = tmp_path / "pwned"
    hostile = f"<answer>open({str(marker)!r}, 'w').write('x') and list({oracle!r})</answer>"
    assert verifier.score(item, hostile) == 0.0  # the host path does not exist in there
    assert not marker.exists()
    assert verifier.score(item, _answer(item)) == 1.0


def test_an_answer_cannot_forge_its_score_or_shift_the_next_ones(
    verifier: ReasoningGymVerifier,
) -> None:
    """Answers that scorers eval (string_insertion's eval, countdown's sympy parse_expr)
    used to run in the worker and print a reply of their own: 1.0 for a wrong answer, and
    every later answer got the score of the one before."""
    items = ReasoningGymTasks(["string_insertion", "countdown"], size=1, seed=0).items()
    forge = "__import__('os').write(3, b'1.0\\n')"  # fd 3: the worker's reply channel
    attacks = [
        (items[0], f"<answer>[{forge} and 'x']</answer>", 0.0),
        (items[1], f"<answer>{forge}</answer>", 0.01),  # countdown: unparseable is 0.01
    ]
    # A forge that reads the request id from the worker's own frames and answers with it:
    # the id protects the order of replies, only closed eval routes stop this one.
    frames = "[s._getframe(k) for k in range(1, 8)]"
    write = (
        "f.f_locals['reply'].write(j.dumps({'id': f.f_locals['message']['id'], "
        "'reply': 1.0}) + chr(10)), f.f_locals['reply'].flush(), o._exit(0)"
    )
    id_forge = (
        f"(lambda s, j, o: [({write}) for f in {frames} if 'message' in f.f_locals])"
        "(__import__('sys'), __import__('json'), __import__('os'))"
    )
    attacks.append((items[0], f"<answer>[{id_forge} and 'x']</answer>", 0.0))
    for item, hostile, unparseable in attacks:
        assert verifier.score(item, hostile) == unparseable, item.domain
        assert verifier.score(item, "<answer>wrong</answer>") < 1.0, item.domain
        assert verifier.score(item, _answer(item)) == 1.0, item.domain


def test_sympy_parsed_answers_must_be_plain_math(tmp_path: Path) -> None:
    """parse_expr evals its input: with isolate=False that would be the trainer's process."""
    item = ReasoningGymTasks(["countdown"], size=1, seed=0).items()[0]
    marker = tmp_path / "pwned"
    hostile = f"<answer>open({str(marker)!r}, 'w').write('x')</answer>"
    in_process = ReasoningGymVerifier(isolate=False)
    assert in_process.score(item, hostile) == 0.01  # countdown's score of an empty answer
    assert not marker.exists()
    assert in_process.score(item, _answer(item)) == 1.0
    plain = ["1 + 2*(3 - 4)/5", "x**2/2 + C", "3*x^2 - sin(x) + exp(2*x)", "5!", "abs(-3)"]
    assert all(is_plain_math(t, ("C",)) for t in plain)
    code = [
        "__import__('os')", "open(3, 'w')", "eval(chr(95))", "x.name", "a[0]", "lambda: 1",
        "S(2)", "sympify(x)", "(1", "\uff45\uff56\uff41\uff4c(1)", "1if 1 else 2", "N(x)",
    ]  # fmt: skip
    assert not any(is_plain_math(t) for t in code)


def test_a_reply_that_is_not_a_score_counts_as_zero() -> None:
    """The worker clamps its scores; anything else on the reply channel is not a reward."""

    class Replies:
        def __init__(self, reply: object) -> None:
            self.reply = reply

        def ask(self, request: object, timeout_s: float) -> object:
            return self.reply

    item = ReasoningGymTasks(["arc_1d"], size=1).items()[0]
    verifier = ReasoningGymVerifier()
    for reply, reward in [
        (0.5, 0.5), (1, 1.0), (float("nan"), 0.0), (float("inf"), 0.0), (10**400, 0.0),
        (7.0, 0.0), (-0.5, 0.0), (True, 0.0), ("1.0", 0.0), ([1.0], 0.0), (None, 0.0),
    ]:  # fmt: skip
        object.__setattr__(verifier, "_worker", Replies(reply))
        assert verifier.score(item, "<answer>x</answer>") == reward, reply


def test_a_hanging_scorer_times_out_to_zero(verifier: ReasoningGymVerifier) -> None:
    item = ReasoningGymTasks(["countdown"], size=1, seed=0).items()[0]
    assert verifier.score(item, _answer(item)) == 1.0  # warm
    start = time.monotonic()
    # sympy's parse_expr evaluates the power tower: the worker is killed after timeout_s.
    assert verifier.score(item, "<answer>9**9**9**9</answer>") == 0.0
    assert time.monotonic() - start < 3.0 + 5.0
    assert verifier.score(item, _answer(item)) == 1.0
