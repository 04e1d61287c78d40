"""The run ledger: what its key holds, records that read back as their runs, and files that
cannot be records refused by name (bench-rl end to end: tests/test_bench_rl.py)."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.bench.real_rl.ledger import (
    RunLedger,
    definition_digest,
    device_class,
    entry_definition,
    record_from_run_dir,
    run_curves,
    run_from_record,
    settings_digest,
)
from frontier_rft.bench.real_rl.ledger import testbed_digest as digest_of
from frontier_rft.bench.real_rl.testbed import Testbed as Bed
from frontier_rft.bench.real_rl.testbed import testbed as make_testbed
from frontier_rft.core.persistence import atomic_write_bytes
from helpers import REPO


def _replace_train(tb: Bed, **changes: Any) -> Bed:
    return dataclasses.replace(tb, train=dataclasses.replace(tb.train, **changes))


DEFINITION = {"selector": "greso"}
KEY = definition_digest(DEFINITION)
SHORT_COLUMN = {
    "schema": 1, "entry": "greso", "seed": 3, "definition": DEFINITION, "steps": [0, 1],
    "columns": {"x": [1.0]}, "info": {},
}  # fmt: skip
"""A record whose metric column is shorter than its steps."""
OTHER_DEFINITION = {**SHORT_COLUMN, "columns": {}, "steps": [], "definition": {"selector": "x"}}
"""A record filed under another entry definition's folder."""


def test_the_digest_names_what_runs_compute_not_where() -> None:
    tb = make_testbed("standard")
    assert digest_of(tb) == digest_of(make_testbed("gpu"))
    assert digest_of(_replace_train(tb, device="cuda:3", threads=4)) == digest_of(tb)
    assert tb.sft is not None
    sft = dataclasses.replace(tb.sft, device="cpu")
    assert digest_of(dataclasses.replace(tb, sft=sft)) == digest_of(tb)
    assert digest_of(_replace_train(tb, train_size=1280)) != digest_of(tb)
    assert digest_of(_replace_train(tb, lr=3e-4)) != digest_of(tb)
    assert digest_of(make_testbed("full")) != digest_of(tb)
    assert len(digest_of(tb)) == 12


def test_a_field_at_its_default_leaves_the_digest_alone() -> None:
    """A field added later with a neutral default keeps old records valid: a field at its
    default value is outside the digest, exactly as if it did not exist."""
    tb = make_testbed("standard")
    older = tb.to_json()
    assert older["train"].pop("kl_coef") == 0.0  # written before the field existed
    assert settings_digest(older) == digest_of(tb)
    assert digest_of(_replace_train(tb, kl_coef=0.01)) != digest_of(tb)


def test_device_classes() -> None:
    assert [device_class(d) for d in ("cpu", "cuda", "cuda:3")] == ["cpu", "cuda", "cuda"]


def _run_dir(tmp_path: Path) -> Path:
    """A run directory as the trainer leaves it: evaluations at steps 0 and 2, two steps."""
    rows = [
        {"step": 0, "time": 1.0, "eval/pass@1": 0.125, "eval/pass@8": 0.5},
        {"step": 1, "time": 2.0, "train/reward_mean": 0.25, "train/rollouts": 64.0,
         "perf/step_s": 1.2345678901, "curriculum/greso/p_easy": 0.49},
        {"step": 2, "time": 3.0, "train/reward_mean": 0.5, "train/rollouts": 64.0,
         "perf/step_s": 1.5, "curriculum/greso/p_easy": 0.48},
        {"step": 2, "time": 3.5, "eval/pass@1": 1 / 3, "eval/pass@8": 0.75},
    ]  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    info = {"config": {"steps": 2}, "model_dir": "/somewhere/private", "embed_seconds": 0.5}
    (run / "run.json").write_text(json.dumps(info))
    return run


def test_a_record_reads_back_as_its_run(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    definition = {"selector": "greso", "config": {"min_keep": 0.01}}
    record = record_from_run_dir(
        run, label="greso", seed=3, definition=definition, start_state={"zero_variance": 0.5},
        start_model="abc", code={"commit": "f00"}, machine="box",
    )  # fmt: skip
    assert "model_dir" not in record["info"]  # a machine's path is not evidence
    assert "greso/p_easy" not in record["columns"]  # the unprefixed copy is not stored
    got = run_from_record(record)
    assert got["eval_steps"] == [0, 2]
    assert got["eval_rollouts"] == [0.0, 128.0]
    assert got["pass1"] == [0.125, pytest.approx(1 / 3, rel=1e-6)]
    assert got["eval_seconds"] == [0.5, pytest.approx(0.5 + 1.23457 + 1.5)]
    assert got["train"][0]["greso/p_easy"] == 0.49  # as read_metrics_jsonl gives it
    assert got["final"] == {"eval/pass@1": pytest.approx(1 / 3, rel=1e-6), "eval/pass@8": 0.75}

    ledger = RunLedger(tmp_path / "ledger", make_testbed("toy"), "cpu")
    path = ledger.add(record)
    key = definition_digest(definition)
    assert path == ledger.path("greso", key, 3) and ledger.has("greso", key, 3)
    assert ledger.load("greso", key, 3) == json.loads(json.dumps(record))
    assert list(ledger.labels()) == [("greso", key, 3)]
    # Another definition of the entry (a changed default) is another record, kept apart.
    changed = {**definition, "config": {"min_keep": 0.02}}
    ledger.add({**record, "definition": changed})
    assert len(list(ledger.labels())) == 2 and definition_digest(changed) != key
    first = path.read_bytes()
    ledger.add(record)
    assert path.read_bytes() == first  # the same record gives the same bytes (no git churn)
    settings = json.loads((ledger.folder.parent / "testbed.json").read_text())
    assert settings == json.loads(json.dumps(make_testbed("toy").to_json()))


def test_curves_from_rows_match_the_run_directory_loader(tmp_path: Path) -> None:
    from frontier_rft.bench.real_rl.runs import load_run
    from frontier_rft.metrics_log import read_metrics_jsonl

    run = _run_dir(tmp_path)
    info = json.loads((run / "run.json").read_text())
    assert load_run(run) == run_curves(read_metrics_jsonl(run / "metrics.jsonl"), info)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not gzip", "not a run ledger record"),
        (gzip.compress(b"[1, 2]"), "not a JSON object"),
        (gzip.compress(json.dumps({"schema": 99}).encode()), "newer than this frontier_rft"),
        (
            gzip.compress(json.dumps({"schema": 1, "entry": "uniform", "seed": 3}).encode()),
            "records 'uniform' seed 3",
        ),
        (gzip.compress(json.dumps(SHORT_COLUMN).encode()), "length differs"),
        (gzip.compress(json.dumps(OTHER_DEFINITION).encode()), "not the one its folder names"),
        (gzip.compress(b"[" * 100 + b"]" * 100), "nesting depth"),
    ],
)
def test_a_file_that_is_not_a_record_is_refused_by_name(
    tmp_path: Path, content: bytes, message: str
) -> None:
    ledger = RunLedger(tmp_path, make_testbed("toy"), "cpu")
    path = ledger.path("greso", KEY, 3)
    path.parent.mkdir(parents=True)
    atomic_write_bytes(path, lambda fh: fh.write(content))
    with pytest.raises(ValueError, match=message) as err:
        ledger.load("greso", KEY, 3)
    assert str(path) in str(err.value)


def test_an_entry_definition_resolves_every_default() -> None:
    """A selector's definition holds its whole config, defaults included, so that a changed
    default is a new definition; what it is given and its dynamic sampling count too."""
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES

    tb = make_testbed("toy")
    by_label = {e.label: tb.run_config(e, 0) for e in MAIN_ENTRIES}
    greso = entry_definition(by_label["greso"])
    assert greso["selector"] == "greso" and "min_keep" in greso["config"]
    assert greso["dynamic_sampling"] is None and greso["given"] == "self"
    assert entry_definition(tb.run_config(MAIN_ENTRIES[0], 3)) == entry_definition(
        by_label["uniform"]
    )  # the seed is not part of it
    assert entry_definition(by_label["dapo"])["dynamic_sampling"] is not None
    digests = {definition_digest(entry_definition(c)) for c in by_label.values()}
    assert len(digests) == len(by_label)


def test_an_entry_s_own_group_size_is_in_its_run_and_its_definition_only() -> None:
    """uniform-n4 trains 4 rollouts a prompt and is a definition of its own; entries that
    set none keep the digests their ledger records were written under."""
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES, BenchEntry

    tb = make_testbed("standard")
    n4 = next(e for e in EFFECT_ENTRIES if e.label == "uniform-n4")
    config = tb.run_config(n4, 0)
    assert config.group_size == 4 and tb.train.group_size == 8
    plain = entry_definition(tb.run_config(MAIN_ENTRIES[0], 0))
    assert entry_definition(config, n4.own_train()) == {**plain, "group_size": 4}
    assert "group_size" not in plain
    # The committed ledger's uniform records (testbed 95e789cb0d16) were written under this.
    assert definition_digest(plain) == "61328573"
    with pytest.raises(ValueError, match="group_size must be an int >= 2"):
        BenchEntry("x", "uniform", train={"group_size": 1})
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        BenchEntry("x", "uniform", train={"steps": 0})
    long = next(e for e in EFFECT_ENTRIES if e.label == "uniform-n4-long")
    assert tb.run_config(long, 0).steps == 720
    assert entry_definition(tb.run_config(long, 0), long.own_train())["steps"] == 720


def test_a_report_reads_an_earlier_definition_only_where_today_s_is_not_recorded(
    tmp_path: Path,
) -> None:
    from frontier_rft.bench.real_rl.benchmark import _chosen_definitions
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES

    tb = make_testbed("toy")
    ledger = RunLedger(tmp_path, tb, "cpu")
    entries = [e for e in MAIN_ENTRIES if e.label in ("uniform", "greso")]
    today = {e.label: entry_definition(tb.run_config(e, 0)) for e in entries}
    earlier = {**today["greso"], "config": {**today["greso"]["config"], "min_keep": 0.5}}

    def add(label: str, definition: dict[str, Any], seed: int) -> None:
        ledger.add({"entry": label, "seed": seed, "definition": definition})

    for seed in (0, 1):
        add("uniform", today["uniform"], seed)
        add("greso", earlier, seed)
    chosen = _chosen_definitions(ledger, tb, entries, [0, 1])
    assert chosen["uniform"] == {"digest": definition_digest(today["uniform"]), "today": True}
    assert chosen["greso"] == {"digest": definition_digest(earlier), "today": False}
    add("greso", today["greso"], 0)  # today's greso measured on one seed: it is read
    chosen = _chosen_definitions(ledger, tb, entries, [0, 1])
    assert chosen["greso"] == {"digest": definition_digest(today["greso"]), "today": True}


# ------------------------------------------------------------------ values a report reads
def _valid_record(tmp_path: Path) -> dict[str, Any]:
    """A record as bench-rl writes it: two training steps, evaluations at steps 0 and 2."""
    return record_from_run_dir(
        _run_dir(tmp_path), label="greso", seed=3, definition=DEFINITION,
        start_state={"zero_variance": 0.5, "successes_histogram": [3, 1, 4],
                     "per_level": {"0": {"mean_score": 0.25, "always_solved": 0.0}}},
        start_model="abc", code={"commit": "f00"}, machine="box",
    )  # fmt: skip


def _set(*path: str | int, value: Any) -> Any:
    """A corruption: the value at `path` (keys and list positions) of the record set."""

    def corrupt(record: dict[str, Any]) -> None:
        node: Any = record
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return corrupt


def _eval_past_training(record: dict[str, Any]) -> None:
    record["steps"].append(9)
    for column in record["columns"].values():
        column.append(None)
    record["columns"]["eval/pass@1"][-1] = 0.5
    record["columns"]["eval/pass@8"][-1] = 0.5


def _no_evaluation(record: dict[str, Any]) -> None:
    record["columns"]["eval/pass@1"] = [None] * len(record["steps"])


# Rows of _run_dir: 0 the start evaluation, 1 and 2 training steps, 3 the last evaluation.
BAD_VALUES = {
    "a list for a numbe": (
        _set("columns", "perf/step_s", 1, value=[1.2]),
        "metric 'perf/step_s' at step 1 is [1.2]",
    ),
    "a string for a numbe": (
        _set("columns", "train/rollouts", 2, value="64"),
        "metric 'train/rollouts' at step 2 is '64'",
    ),
    "a string score": (
        _set("columns", "eval/pass@1", 3, value="0.3"),
        "metric 'eval/pass@1' at step 2 is '0.3'",
    ),
    "a bool metric": (
        _set("columns", "train/reward_mean", 1, value=True),
        "metric 'train/reward_mean' at step 1 is True",
    ),
    "a huge metric": (
        _set("columns", "perf/step_s", 1, value=1e300),
        "metric 'perf/step_s' at step 1 is 1e+300",
    ),
    "a null perf/step_s": (
        _set("columns", "perf/step_s", 2, value=None),
        "the training row of step 2 has perf/step_s = None",
    ),
    "a negative perf/step_s": (
        _set("columns", "perf/step_s", 2, value=-1.0),
        "the training row of step 2 has perf/step_s = -1.0",
    ),
    "a score above 1": (
        _set("columns", "eval/pass@8", 3, value=1.5),
        "eval/pass@8 at step 2 is 1.5, not in [0, 1]",
    ),
    "an evaluation missing a score": (
        _set("columns", "eval/pass@8", 3, value=None),
        "the evaluation at step 2 has no eval/pass@8",
    ),
    "an evaluation past the training rows": (
        _eval_past_training,
        "an evaluation at step 9 is past its 2 training rows",
    ),
    "no evaluation": (_no_evaluation, "it holds no evaluation (eval/pass@1)"),
    "a string step": (_set("steps", 1, value="1"), "step '1' is not a non-negative int"),
    "a fractional step": (_set("steps", 1, value=1.5), "step 1.5 is not a non-negative int"),
    "a negative step": (_set("steps", 1, value=-1), "step -1 is not a non-negative int"),
    "a string start_state": (
        _set("start_state", value="measured"),
        "start_state is 'measured', not an object",
    ),
    "a null start_state": (_set("start_state", value=None), "start_state is None, not an object"),
    "a string zero_variance": (
        _set("start_state", "zero_variance", value="0.5"),
        "start_state.zero_variance is '0.5', not a share in [0, 1]",
    ),
    "a zero_variance above 1": (
        _set("start_state", "zero_variance", value=2.0),
        "start_state.zero_variance is 2.0, not a share",
    ),
    "a histogram of strings": (
        _set("start_state", "successes_histogram", value=["3"]),
        "start_state.successes_histogram is ['3'], not a number or a histogram",
    ),
    "a string per_level": (
        _set("start_state", "per_level", value="x"),
        "start_state.per_level is 'x', not an object",
    ),
    "a level that is not a numbe": (
        _set("start_state", "per_level", "easy", value={}),
        "start_state.per_level holds 'easy'",
    ),
    "a level's string score": (
        _set("start_state", "per_level", "0", "mean_score", value="x"),
        "start_state.per_level.0.mean_score is 'x'",
    ),
    "a string embed_seconds": (
        _set("info", "embed_seconds", value="0.5"),
        "info.embed_seconds is '0.5', not seconds",
    ),
    "a list config": (_set("info", "config", value=[]), "info.config is [], not an object"),
    "a string train_tasks": (
        _set("info", "train_tasks", value="64"),
        "info.train_tasks is '64', not an int",
    ),
    "a string evidence": (
        _set("info", "evidence", value="text"),
        "info.evidence is 'text', not an object",
    ),
    "a list selector_overrides": (
        _set("info", "config", "selector_overrides", value=[]),
        "info.config.selector_overrides is not an object",
    ),
    "a string batch_size": (
        _set("info", "config", "batch_size", value="8"),
        "info.config.batch_size is '8', not a positive int",
    ),
    "a list start_model": (
        _set("start_model", value=["abc"]),
        "start_model is ['abc'], not a string",
    ),
    "a numeric machine": (_set("machine", value=3), "machine is 3, not a string"),
    "a float seed": (_set("seed", value=3.0), "seed 3.0 is not an int"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_a_record_with_values_a_report_cannot_read_is_refused_by_name(
    tmp_path: Path, case: str
) -> None:
    """Issue 47: well-formed records with bad values ended the report in TypeError, KeyError
    or IndexError tracebacks; each is refused naming the record and the problem."""
    corrupt, message = BAD_VALUES[case]
    record = _valid_record(tmp_path)
    ledger = RunLedger(tmp_path / "ledger", make_testbed("toy"), "cpu")
    path = ledger.add(record)
    assert ledger.load("greso", KEY, 3) == json.loads(json.dumps(record))  # valid as made
    corrupt(record)
    atomic_write_bytes(path, lambda fh: fh.write(gzip.compress(json.dumps(record).encode())))
    with pytest.raises(ValueError) as err:
        ledger.load("greso", KEY, 3)
    assert str(err.value).startswith(f"{path} is not a run ledger record: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_every_committed_record_passes_the_value_checks() -> None:
    """The checks refuse what a report cannot read, nothing the benchmark writes."""
    from frontier_rft.bench.real_rl.ledger import _check_record

    paths = sorted((REPO / "benchmarks" / "ledger").glob("*/*/*/*/seed*.json.gz"))
    assert paths
    for path in paths:
        record = json.loads(gzip.decompress(path.read_bytes()))
        seed = int(path.name.removeprefix("seed").removesuffix(".json.gz"))
        _check_record(record, path.parents[1].name, path.parent.name, seed)


def _committed_pair(root: Path) -> tuple[Path, Path]:
    """uniform and greso of seed 0 from the committed standard-testbed ledger, under root:
    (the uniform record, greso's)."""
    import shutil

    src = REPO / "benchmarks" / "ledger" / "95e789cb0d16"
    (root / src.name / "cpu").mkdir(parents=True)
    shutil.copy(src / "testbed.json", root / src.name)
    for label in ("uniform", "greso"):
        (held,) = (src / "cpu" / label).glob("*/seed0.json.gz")
        to = root / src.name / "cpu" / label / held.parent.name
        to.mkdir(parents=True)
        shutil.copy(held, to)
    return (
        next((root / src.name / "cpu" / "uniform").glob("*/seed0.json.gz")),
        next((root / src.name / "cpu" / "greso").glob("*/seed0.json.gz")),
    )


def _rewrite(path: Path, change: Any) -> None:
    record = json.loads(gzip.decompress(path.read_bytes()))
    change(record)
    path.write_bytes(gzip.compress(json.dumps(record).encode()))


def _null_step_s(record: dict[str, Any]) -> None:
    train = [i for i, v in enumerate(record["columns"]["train/reward_mean"]) if v is not None]
    record["columns"]["perf/step_s"][train[3]] = None


def _drop_pass8(record: dict[str, Any]) -> None:
    record["columns"].pop("eval/pass@8")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_null_step_s, "uniform/61328573/seed0.json.gz is not a run ledger record: the "
         "training row of step 4 has perf/step_s = None"),
        (_set("start_state", value="oops"), "uniform/61328573/seed0.json.gz is not a run ledger "
         "record: start_state is 'oops'"),
        (_drop_pass8, "seed0.json.gz is not a run ledger record this report can pair: its "
         "evaluations score eval/pass@1, eval/pass@8, those of "),
    ],
)  # fmt: skip
def test_report_only_refuses_a_bad_record_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    """`frontier bench-rl --report-only` on a ledger holding a bad record: exit 2, one line
    naming the record, no traceback (it ended in KeyError / TypeError before)."""
    pytest.importorskip("matplotlib")
    from frontier_rft.cli.main import main

    uniform, _ = _committed_pair(tmp_path / "ledger")
    _rewrite(uniform, change)
    argv = ["bench-rl", "--seeds", "0", "--selectors", "uniform,greso", "--scale", "standard",
            "--device", "cpu", "--no-effects", "--report-only", "--no-progress",
            "--ledger", str(tmp_path / "ledger"), "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
