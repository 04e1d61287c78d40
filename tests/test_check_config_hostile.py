"""`frontier check-config` on hostile files, values and overrides (issue 36): every input
ends in one problem line, a note or a one-line error naming the file or key, never a
traceback; the YAML reader is the same bounded one for files and KEY=VALUE overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.core.yamlsafe import RefusedYAML, load_yaml
from frontier_rft.integrations.data_columns import DataColumns, read_data_columns
from helpers import check_config

REPO = Path(__file__).resolve().parents[1]
KWARGS = "trainer.v1.sampler.sampler_kwargs"
VERL_SEC = str(REPO / "examples" / "verl" / "sec.yaml")


def trl_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "trl.yaml"
    path.write_text("selector: greso\nreward_funcs: [answer_match]\n" + body, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------- defect 3: types

WRONG = {"5": "5", "true": "true", "null": "null", "a nested list": "[[wandb]]"}


@pytest.mark.parametrize("key", ["report_to", "reward_funcs"])
@pytest.mark.parametrize("value", sorted(WRONG), ids=str)
def test_a_wrong_type_of_report_to_or_reward_funcs_is_a_problem_line(
    key: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check_config(capsys, "trl", trl_file(tmp_path, f"{key}: {WRONG[value]}\n"))
    assert code == 1, out
    assert f"  - {key} must be" in out, out


def test_trl_values_trl_would_refuse_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36 warnings: each exited 0; TRL's script would refuse or misread each."""
    cases = {
        "reward_funcs: {answer_match: 1}\n": "reward_funcs must be a reward function name",
        "dataset_files: {}\n": "dataset_files must be a data file path or a list of them",
        "model_name_or_path: 5\n": "model_name_or_path must be a hub id",
        "reward_funcs: []\n": "reward_funcs must be a reward function name",
    }
    for body, phrase in cases.items():
        path = tmp_path / "trl.yaml"
        path.write_text("selector: greso\n" + body, encoding="utf-8")
        code, out = check_config(capsys, "trl", str(path))
        assert code == 1 and phrase in out, (body, out)


def test_one_reward_function_name_is_read_as_a_list_of_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`reward_funcs: answer_match` is what the script accepts; its column is checked (a
    string was iterated letter by letter, so no reward column was checked)."""
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "1+1?"}\n', encoding="utf-8")
    path = tmp_path / "trl.yaml"
    path.write_text(f"reward_funcs: answer_match\ndataset_files: {data}\n", encoding="utf-8")
    code, out = check_config(capsys, "trl", str(path))
    assert code == 1 and "reward function 'answer_match' reads column 'answer'" in out, out


# ---------------------------------------------------------------------------- defect 4: data


def _hostile_data(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (path as the config gives it, a phrase of the sentence)."""
    deep = "[" * 100_000 + "]" * 100_000
    (tmp / "deep.jsonl").write_text('{"prompt": ' + deep + "}\n", encoding="utf-8")
    (tmp / "deep.json").write_text('[{"prompt": ' + deep + "}]", encoding="utf-8")
    (tmp / "wide.csv").write_text("prompt," + "x" * 200_000 + "\n1,2\n", encoding="utf-8")
    (tmp / "latin1.jsonl").write_bytes('{"prompt": "caf\xe9"}\n'.encode("latin-1"))
    (tmp / "latin1.csv").write_bytes("caf\xe9,prompt\n".encode("latin-1"))
    (tmp / "broken.parquet").write_bytes(b"PAR1 not really")
    (tmp / "a-folder.jsonl").mkdir()
    (tmp / "empty.json").write_text("", encoding="utf-8")
    return {
        "row nested 100,000 deep (jsonl)": (str(tmp / "deep.jsonl"), "nesting depth"),
        "row nested 100,000 deep (json)": (str(tmp / "deep.json"), "nesting depth"),
        "csv header field over csv's limit": (str(tmp / "wide.csv"), "field larger than"),
        "~nosuchuser path": ("~nosuchuser_frontier/train.jsonl", "no such file"),
        "non-UTF-8 jsonl": (str(tmp / "latin1.jsonl"), "not UTF-8 text"),
        "non-UTF-8 csv": (str(tmp / "latin1.csv"), "not UTF-8 text"),
        "broken parquet": (str(tmp / "broken.parquet"), "not a readable parquet file"),
        "a directory": (str(tmp / "a-folder.jsonl"), "not a file"),
        "an empty json": (str(tmp / "empty.json"), "not readable JSON"),
        "a path too long to look up": ("x" * 5000 + ".jsonl", "no such file"),
    }


def test_the_data_sniffer_turns_every_read_failure_into_a_sentence(tmp_path: Path) -> None:
    for name, (path, phrase) in _hostile_data(tmp_path).items():
        found = read_data_columns(path)
        assert isinstance(found, str) and phrase in found, (name, found)
        assert len(found) < 600 and "\n" not in found, name
    good = tmp_path / "ok.jsonl"
    good.write_text('{"prompt": "q", "answer": "1"}\n', encoding="utf-8")
    assert read_data_columns(good) == DataColumns(
        ["prompt", "answer"], {"prompt": "q", "answer": "1"}
    )


@pytest.mark.parametrize("trainer", ["trl", "verl", "skyrl"])
def test_check_config_names_a_data_file_it_cannot_read(
    trainer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skyrl = tmp_path / "skyrl.yaml"
    skyrl.write_text("frontier:\n  selector: greso\n", encoding="utf-8")
    for name, (path, phrase) in _hostile_data(tmp_path).items():
        if trainer == "trl":
            code, out = check_config(
                capsys, "trl", trl_file(tmp_path, f"dataset_files: ['{path}']\n")
            )
        elif trainer == "skyrl":
            code, out = check_config(capsys, "skyrl", str(skyrl), f"data.train_data=['{path}']")
        else:
            code, out = check_config(capsys, "verl", VERL_SEC, f"data.train_files=['{path}']")
        assert code in (0, 1) and phrase in out, (name, out)


# ---------------------------------------------------------------------------- defect 5: overrides

BOMB = (
    "[&a [x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a], "
    "&c [*b, *b, *b, *b, *b, *b, *b, *b, *b], [*c, *c, *c, *c, *c, *c, *c, *c, *c]]"
)


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (BOMB, "aliases (*name) are not supported"),
        ("[" * 50_000 + "]" * 50_000, "nested deeper than 32 levels"),
        ("9" * 5_000, "an integer of 5000 characters"),
    ],
    ids=["alias bomb", "nested 50,000 deep", "5,000-digit integer"],
)
@pytest.mark.parametrize("trainer", ["trl", "verl"])
def test_overrides_get_the_bounds_of_a_config_file(
    trainer: str, value: str, phrase: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = trl_file(tmp_path, "") if trainer == "trl" else VERL_SEC
    key = "selector_config" if trainer == "trl" else f"{KWARGS}.selector_config"
    code, out = check_config(capsys, trainer, config, f"{key}={value}")
    assert code == 2 and f"override {key}: {phrase}" in out, out[:500]
    assert len(out.strip().splitlines()) <= 2


def test_an_override_that_is_not_yaml_is_a_string_as_hydra_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check_config(capsys, "trl", trl_file(tmp_path, ""), "selector=foo: bar: baz")
    assert code == 1 and "selector" in out, out


def test_a_huge_integer_in_a_file_names_the_file_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = trl_file(tmp_path, "selector_seed: " + "7" * 5_000 + "\n")
    code, out = check_config(capsys, "trl", path)
    assert code == 2, out
    assert f"check-config {path}: refused (line 3): key 'selector_seed': an integer" in out
    with pytest.raises(RefusedYAML, match="key 'steps'"):
        load_yaml("a:\n  steps: " + "1" * 101)
    assert load_yaml("steps: " + "1" * 100) == {"steps": int("1" * 100)}  # the bound itself


def test_the_file_itself_may_be_hostile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "latin1.yaml").write_bytes("selector: caf\xe9\n".encode("latin-1"))
    (tmp_path / "folder.yaml").mkdir()
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n", encoding="utf-8")
    cases = {
        str(tmp_path / "latin1.yaml"): "not UTF-8 text",
        str(tmp_path / "folder.yaml"): "is not a file",
        "~nosuchuser_frontier/x.yaml": "no such file",
        "x" * 5000 + ".yaml": "cannot be read",
        str(tmp_path / "list.yaml"): "expected a mapping",
    }
    for path, phrase in cases.items():
        for trainer in ("trl", "verl", "skyrl"):
            code, out = check_config(capsys, trainer, path)
            assert code == 2 and phrase in out, (path[:60], out[:300])


# ---------------------------------------------------------------------------- TRL's keys


def test_trls_keys_read_from_its_source_are_the_keys_its_parser_accepts() -> None:
    """check-config reads TRL's keys from source (importing TRL costs ~2 CPU s): the same
    set as the dataclasses TRL's parser is built from, for both trainers."""
    trl = pytest.importorskip("trl")
    from dataclasses import fields

    from frontier_rft.integrations.trl.keys import TRL_CLASSES, dataclass_fields_from_source

    for kind, names in TRL_CLASSES.items():
        for name in names:
            want = {f.name for f in fields(getattr(trl, name))}
            assert dataclass_fields_from_source("trl", name) == want, (kind, name)
    assert dataclass_fields_from_source("trl", "NoSuchClass") is None
    assert dataclass_fields_from_source("no_such_package_frontier", "X") is None


def test_many_unknown_keys_are_each_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("trl")
    keys = "".join(f"unknown_key_{i}: {i}\n" for i in range(2_000))
    code, out = check_config(capsys, "trl", trl_file(tmp_path, keys + "learning_rat: 0.1\n"))
    assert code == 1
    assert out.count("  - unknown key 'unknown_key_") == 2_000
    assert "unknown key 'learning_rat'" in out  # past the suggestion budget: named, no hint


def test_a_selector_config_string_nested_deep_is_a_problem_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quoted string is not nested for YAML, but FrontierConfig reads it as JSON."""
    deep = "[" * 50_000 + "]" * 50_000
    code, out = check_config(capsys, "trl", trl_file(tmp_path, f"selector_config: '{deep}'\n"))
    assert code == 1 and "selector_config must be a mapping" in out, out[:500]


def test_a_config_of_more_values_than_a_config_holds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyYAML builds each value in Python: 500,000 list items took 4 CPU s to check."""
    path = trl_file(tmp_path, "selector_config: {lam: [" + ", ".join(["1"] * 100_001) + "]}\n")
    code, out = check_config(capsys, "trl", path)
    assert code == 2 and "more than 100,000 keys and values" in out, out[-300:]


@pytest.mark.parametrize("depth", [33, 999, 1_001, 50_000])
@pytest.mark.parametrize("style", ["flow", "block"])
def test_the_depth_bound_fires_the_same_whatever_libyaml_refuses_first(
    depth: int, style: str
) -> None:
    """libyaml 0.2.5 (PyYAML 6.0.4) refuses nesting past 1000 while scanning ahead, before
    our event check sees depth 33; the bound's message must not depend on it."""
    text = "[" * depth + "]" * depth if style == "flow" else "- " * depth + "x"
    with pytest.raises(RefusedYAML, match="nested deeper than 32 levels"):
        load_yaml(text)


def test_a_libyaml_that_refuses_earlier_still_gives_our_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A libyaml with a lower bound of its own (any text deeper than 2 refused with its own
    error) still gives our message; an error of its own that breaks no bound of ours is
    passed on as it is."""
    import yaml

    from frontier_rft.core import yamlsafe

    real_parse = yaml.parse

    def strict_parse(text: str, Loader: object) -> object:
        if Loader is not yaml.SafeLoader and text.count("[") > 2:
            raise yaml.scanner.ScannerError(None, None, "exceeded maximum nesting depth")
        return real_parse(text, Loader=Loader)

    monkeypatch.setattr(yamlsafe, "_BASE", getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    monkeypatch.setattr(yaml, "parse", strict_parse)
    with pytest.raises(RefusedYAML, match="nested deeper than 32 levels"):
        load_yaml("[" * 40 + "]" * 40)
    if yamlsafe._BASE is not yaml.SafeLoader:
        with pytest.raises(yaml.scanner.ScannerError, match="exceeded maximum nesting"):
            load_yaml("[[[1]]]")  # within our bound: libyaml's refusal stands
    assert load_yaml("[[1]]") == [[1]]


@pytest.mark.parametrize("value", ["{lo: 0, hi: 1}", "{0: 0, 1: 1}", "[0]", "'01'"])
def test_a_reward_range_that_is_not_two_numbers_is_a_problem_line(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47: a mapping (two entries, no positions) ended in a KeyError traceback, in
    the TRL and the verl check alike."""
    code, out = check_config(capsys, "trl", trl_file(tmp_path, f"reward_range: {value}\n"))
    assert code == 1 and "reward_range must be (lo, hi) with finite lo < hi" in out, out
    verl = f"{KWARGS}.reward_range={value}"
    code, out = check_config(capsys, "verl", str(REPO / "examples" / "verl" / "greso.yaml"), verl)
    assert code == 1 and "reward_range must be (low, high) with low < high" in out, out
