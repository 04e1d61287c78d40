"""Issue 63, items 2 and 5: what `frontier check-config` let through, and the leftovers of the
last review. Each mistake ends in one problem line (or a one-line refusal) that names the fix,
never a traceback; each test failed on the code before the fix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frontier_rft.cli.main import main
from frontier_rft.integrations.verl.auto import verl_planned_epochs
from helpers import check_config, problems

REPO = Path(__file__).resolve().parents[1]
VERL_SKIP = str(REPO / "examples" / "verl" / "skip.yaml")


pytestmark = pytest.mark.usefixtures("no_accelerate_default")


def write(tmp_path: Path, body: str, name: str = "c.yaml") -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return str(path)


def rows(tmp_path: Path, count: int, name: str = "train.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"prompt": f"{i}+1", "answer": "1"}) + "\n"
                            for i in range(count)))  # fmt: skip
    return str(path)


# ------------------------------------------------------------------ 1. what check-config passed


def test_a_generation_batch_of_partial_groups_is_refused_with_the_batch_that_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """6 completions a step cannot hold groups of 8 (TRL 1.16's GRPOConfig refuses it after the
    model loads); on 4 processes the generation batch is 24, three groups: valid."""
    path = write(tmp_path, "selector: skip\nper_device_train_batch_size: 6\nnum_generations: 8\n")
    code, out = check_config(capsys, "trl", path)
    (line,) = problems(out)
    assert code == 1 and "generation batch of 6 completions" in line, out
    assert "set per_device_train_batch_size: 8" in line and "1 process" in line, out
    code, out = check_config(capsys, "trl", path, "--processes", "4")
    assert code == 0 and not problems(out), out


@pytest.mark.parametrize(
    ("settings", "wanted"),
    [
        ({"per_device_train_batch_size": 8.5}, "per_device_train_batch_size must be an int >= 1, "
                                               "got 8.5"),
        ({"gradient_accumulation_steps": "two"}, "gradient_accumulation_steps must be an int"),
        ({"generation_batch_size": 12, "steps_per_generation": 2}, "keep one of them"),
        ({"generation_batch_size": 12}, "generation_batch_size 12 must be a multiple of "
                                        "per_device_train_batch_size 8"),
        ({"per_device_eval_batch_size": 6, "eval_strategy": "steps"},
         "set per_device_eval_batch_size: 8"),
    ],
)  # fmt: skip
def test_trl_batch_settings_trl_refuses_are_named(
    settings: dict[str, object], wanted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "selector: skip\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items())
    code, out = check_config(capsys, "trl", write(tmp_path, body))
    assert code == 1 and any(wanted in line for line in problems(out)), out


@pytest.mark.parametrize(
    ("per_device", "accumulation", "generations"),
    [(6, 1, 8), (8, 1, 8), (4, 2, 8), (3, 1, 3), (5, 2, 4), (12, 1, 8), (2, 4, 8)],
)
def test_the_batch_rule_is_trls_own(
    per_device: int,
    accumulation: int,
    generations: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """check-config refuses exactly what TRL's GRPOConfig refuses, on one process."""
    trl = pytest.importorskip("trl")
    settings = {
        "per_device_train_batch_size": per_device,
        "gradient_accumulation_steps": accumulation,
        "num_generations": generations,
    }
    try:
        trl.GRPOConfig(
            output_dir=str(tmp_path / "out"), report_to="none", use_cpu=True, bf16=False,
            **settings,
        )  # fmt: skip
        trl_refuses = False
    except ValueError as exc:
        assert "divisible" in str(exc), exc  # the rule under test, not another refusal
        trl_refuses = True
    body = "selector: skip\n" + "".join(f"{k}: {v}\n" for k, v in settings.items())
    code, out = check_config(capsys, "trl", write(tmp_path, body))
    assert (code == 1) == trl_refuses, (settings, out)


def test_an_empty_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for trainer in ("trl", "verl", "skyrl"):
        code, out = check_config(capsys, trainer, write(tmp_path, "", "empty.yaml"))
        assert code == 2 and "the file sets nothing" in out and "a start: " in out, out
        assert len(out.strip().splitlines()) == 1, out


@pytest.mark.parametrize(
    ("override", "wanted"),
    [
        ("actor_rollout_ref.rollout.n=1", "actor_rollout_ref.rollout.n: must be an int >= 2 (a "
                                          "group needs two rollouts to compare), got 1"),
        ("trainer.total_epochs=two", "trainer.total_epochs must be a positive int"),
        ("trainer.total_epochs=1.5", "trainer.total_epochs must be a positive int"),
        ("trainer.total_training_steps=.nan", "trainer.total_training_steps must be a positive "
                                              "int"),
    ],
)  # fmt: skip
def test_verl_values_verl_cannot_run_are_named(
    override: str, wanted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check_config(capsys, "verl", VERL_SKIP, override)
    assert code == 1 and any(wanted in line for line in problems(out)), out


def test_skyrl_groups_of_one_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "frontier:\n  selector: skip\ngenerator:\n  n_samples_per_prompt: 1\n"
    code, out = check_config(capsys, "skyrl", write(tmp_path, body))
    assert code == 1, out
    assert "generator.n_samples_per_prompt: must be an int >= 2" in out, out
    assert "set generator.n_samples_per_prompt: 8" in out, out


# ------------------------------------------------- 2. a max_steps run's epochs on N processes


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_max_steps_counts_epochs_on_the_processes_given_and_says_where_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """100 steps x 8 completions / 8 generations = 100 prompts a step on one process, 800 on
    8: over 400 prompts 0.25 epochs, or 2."""
    data = rows(tmp_path, 400)
    path = write(tmp_path, f"selector: skip\nmax_steps: 100\ndataset_files: [{data}]\n")
    code, out = check_config(capsys, "trl", path)
    assert code == 0 and "the run is 0.25 epochs" in out, out
    assert "counted on 1 process (none given: pass --processes N" in out, out
    for argv in (["--processes", "8", "trl", path], ["trl", path, "--processes", "8"],
                 ["trl", path, "--processes=8"]):  # fmt: skip
        code, out = check_config(capsys, *argv)
        assert code == 0 and "the run is 2 epochs" in out, (argv, out)
        assert "counted on 8 processes (--processes)" in out, out


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_accelerates_default_config_gives_the_process_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "hf" / "accelerate" / "default_config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("distributed_type: MULTI_GPU\nnum_processes: 8\n")
    data = rows(tmp_path, 400)
    path = write(tmp_path, f"selector: skip\nmax_steps: 100\ndataset_files: [{data}]\n")
    code, out = check_config(capsys, "trl", path)
    assert code == 0 and "the run is 2 epochs" in out, out
    assert f"counted on 8 processes (num_processes in {config}" in out, out
    code, out = check_config(capsys, "trl", path, "--processes", "1")
    assert "the run is 0.25 epochs" in out and "(--processes)" in out, out


def test_processes_is_refused_unless_a_positive_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "selector: skip\n")
    for value in ("0", "eight", "-2"):
        code, out = check_config(capsys, "trl", path, "--processes", value)
        assert code == 2 and "--processes" in out and "an int >= 1" in out, out


# --------------------------------------------------- 3. .inf rows: verl's length decides auto


def test_an_infinite_row_cap_under_a_step_limit_is_a_problem_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = rows(tmp_path, 40)
    code, out = check_config(
        capsys,
        "verl",
        VERL_SKIP,
        "data.train_max_samples=.inf",
        "trainer.total_training_steps=10",
        f"data.train_files={data}",
    )
    assert code == 1, out
    assert "data.train_max_samples must be an int (-1, verl's default: every row), got inf" in out


@pytest.mark.parametrize("cap", [math.inf, -math.inf, math.nan, 2.5, "all"])
def test_the_buffers_length_refuses_a_row_cap_verl_cannot_take_in_one_line(
    cap: object, tmp_path: Path
) -> None:
    """The same function decides `auto` in verl's pre-flight and replay buffer."""
    config = {
        "data": {
            "train_max_samples": cap,
            "train_files": rows(tmp_path, 40),
            "train_batch_size": 4,
        },
        "trainer": {"total_training_steps": 10},
    }
    with pytest.raises(ValueError, match=r"^data\.train_max_samples must be an int") as info:
        verl_planned_epochs(config)
    assert "\n" not in str(info.value)
    config["data"]["train_max_samples"] = 20
    assert verl_planned_epochs(config) == pytest.approx(10 * 4 / 20)  # 20 of the 40 rows


# ------------------------------------------------------------------------------ 4. leftovers


def test_selectors_dapo_points_to_the_dapo_mode_a_config_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["selectors", "dapo"]) == 2
    err = capsys.readouterr().err
    assert "dynamic_sampling: dapo with selector: uniform" in err, err
    assert "dynamic_sampling: true" not in err and "DynamicSamplingConfig.dapo()" in err, err
    code, out = check_config(
        capsys, "trl", write(tmp_path, "selector: uniform\ndynamic_sampling: dapo\n")
    )
    assert code == 0, out  # the fix it names is a valid config


def test_bench_rl_suggests_the_close_entry_with_the_commands_prefix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench-rl", "--selectors", "unifrom,greso"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frontier bench-rl: error: --selectors: unknown entry 'unifrom' "
                          "(did you mean 'uniform'?); entries: "), err  # fmt: skip
    # the list is shortened in the middle as entries are added: its ends stay
    assert "entries: bots, bots-epoch," in err and "uniform-shadows" in err
    assert "Traceback" not in err


def test_a_misspelt_selector_option_lists_the_valid_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check_config(
        capsys, "trl", write(tmp_path, "selector: greso\nselector_config: {threshhold: 0.3}\n")
    )
    (line,) = problems(out)
    assert code == 1 and line.startswith("selector_config for 'greso': unknown option "
                                         "'threshhold'; valid options: "), out  # fmt: skip
    assert "min_keep" in line and "p_init" in line, out
    code, out = check_config(
        capsys, "trl", write(tmp_path, "selector: greso\nselector_config: {min_kep: 0.1}\n")
    )
    assert "unknown option 'min_kep' (did you mean 'min_keep'?); valid options: " in out, out


def test_a_file_colon_function_reward_is_read_at_the_last_colon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "myrewards.py").write_text("def accuracy(completions, **kwargs):\n    return []\n")
    code, out = check_config(
        capsys, "trl", write(tmp_path, "selector: skip\nreward_funcs: [myrewards.py:accuracy]\n")
    )
    (line,) = problems(out)
    assert code == 1 and "py:accuracy'" not in line.split("): ", 1)[1], out
    assert "(file myrewards.py, function 'accuracy')" in line, out
    assert "write reward_funcs: [myrewards.accuracy]" in line, out
    code, out = check_config(
        capsys, "trl", write(tmp_path, "selector: skip\nreward_funcs: [myrewards.py:acuracy]\n")
    )
    assert "myrewards.py defines no 'acuracy' (did you mean 'accuracy'?)" in out, out


def test_dynamic_sampling_config_names_every_problem_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (
        "selector: uniform\ndynamic_sampling: fixed\n"
        "dynamic_sampling_config: {max_rounds: 0, oversample: -1, foo: 1}\n"
    )
    code, out = check_config(capsys, "trl", write(tmp_path, body))
    assert code == 1, out
    for phrase in ("unknown option 'foo'", "oversample must be", "max_rounds must be"):
        assert phrase in out, (phrase, out)


def test_a_yaml_users_column_fix_names_the_key_not_a_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = rows(tmp_path, 4)
    body = f"selector: sec\ncategory_columns: [topic]\ndataset_files: [{data}]\n"
    code, out = check_config(capsys, "trl", write(tmp_path, body))
    (line,) = [p for p in problems(out) if "topic" in p]
    assert code == 1 and "): category_columns: no column 'topic'" in line, out
    assert "--category_columns" not in out, out


def test_selectors_skip_shows_every_field_and_bound_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["selectors", "skip"]) == 0
    out = capsys.readouterr().out
    config = out.split("--set KEY=VALUE):\n", 1)[1].splitlines()
    assert all(line.startswith("    ") for line in config), out  # no docstring line wraps
    (floor,) = [line for line in config if "min_keep_floor" in line.split("=")[0]]
    assert "(fixed)" in floor and "Smallest min_keep" in floor, out
    assert "infinite_ok" not in out


def test_a_misspelt_data_file_gets_the_close_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data").mkdir()
    rows(tmp_path / "data", 4)
    for given, close in (
        ("data/trian.jsonl", "(did you mean 'data/train.jsonl'?)"),
        ("dta/train.jsonl", "(no folder 'dta'; did you mean 'data'?)"),
    ):
        code, out = check_config(
            capsys, "trl", write(tmp_path, f"selector: skip\ndataset_files: [{given}]\n")
        )
        assert code == 1 and f"no such file {given!r}" in out and close in out, out


def test_the_trl_page_says_how_check_config_counts_processes() -> None:
    page = (REPO / "docs" / "integrations" / "trl.md").read_text(encoding="utf-8")
    text = " ".join(page.split())
    assert "counts `max_steps` on the processes you launch (`--processes N`" in text
    assert "counts `max_steps` on one process" not in text
