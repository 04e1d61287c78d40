"""A newcomer's mistakes, each named by `frontier check-config` before any model loads, and
no valid key flagged, with TRL installed or not.

The set is what a user of the TRL script and of verl gets wrong on a first run (reward
function paths and columns, several rewards without reward_range, a selector's missing
metadata, an evaluation without a held-out set, misspelt keys of both, logging backends,
verl task ids that overlap across files): each mistake alone, on an otherwise valid config,
gives exit status 1 and a problem line naming it. The valid config uses TRL's own keys
freely; without TRL (its import blocked) they are left unchecked and said to be, never
flagged, and every mistake that needs no TRL is still named.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from frontier_rft.cli.main import main

REPO = Path(__file__).resolve().parents[1]
KWARGS = "trainer.v1.sampler.sampler_kwargs"

REWARDS_PY = """
def format_reward(completions, **kwargs):
    return [1.0 if "=" in str(c) else 0.0 for c in completions]


def correctness(completions, answer, **kwargs):
    return [float(str(a) in str(c)) for c, a in zip(completions, answer)]


def needs_solution(completions, solution, **kwargs):
    return [0.0 for _ in completions]


def strict(completions, answer):
    return [0.0 for _ in completions]
"""

VALID: dict[str, Any] = {
    "model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
    "dtype": "bfloat16",
    "attn_implementation": "sdpa",
    "dataset_files": ["data/train.jsonl"],
    "dataset_train_split": "train",
    "eval_dataset_files": ["data/heldout.jsonl"],
    "reward_funcs": ["my_rewards.correctness", "my_rewards.format_reward"],
    "reward_weights": [1.0, 0.5],
    "reward_range": [0, 1.5],
    "output_dir": "runs/grpo",
    "num_generations": 8,
    "per_device_train_batch_size": 64,
    "gradient_accumulation_steps": 2,
    "gradient_checkpointing": True,
    "max_completion_length": 512,
    "learning_rate": 1.0e-6,
    "lr_scheduler_type": "cosine",
    "warmup_steps": 10,
    "beta": 0.0,
    "temperature": 1.0,
    "max_steps": 500,
    "logging_steps": 1,
    "save_steps": 50,
    "eval_strategy": "steps",
    "eval_steps": 25,
    "eval_on_start": True,
    "num_generations_eval": 4,
    "per_device_eval_batch_size": 16,
    "use_vllm": True,
    "vllm_mode": "colocate",
    "bf16": True,
    "report_to": "none",
    "seed": 0,
    "selector": "greso",
    "metrics_verbosity": "summary",
}
"""A 7B GRPO run as a newcomer writes it: 25 of TRL's own keys among frontier-rft's."""

TRL_MISTAKES: list[tuple[str, dict[str, Any], str]] = [
    ("reward function name misspelt", {"reward_funcs": ["my_rewards.correctness",
     "my_rewards.formt_reward"]}, "defines no 'formt_reward' (did you mean 'format_reward'?)"),
    ("reward module misspelt", {"reward_funcs": ["my_reward.correctness",
     "my_rewards.format_reward"]}, "no module 'my_reward' is importable from"),
    ("reward reads a missing column", {"reward_funcs": ["my_rewards.needs_solution",
     "my_rewards.format_reward"]}, "'my_rewards.needs_solution' reads column 'solution', which"),
    ("reward without **kwargs", {"reward_funcs": ["my_rewards.strict",
     "my_rewards.format_reward"]}, "'my_rewards.strict' takes no **kwargs"),
    ("two rewards without reward_range", {"reward_range": None, "reward_weights": None},
     "add the YAML line `reward_range: [0, 2]`"),
    ("bots interpolation without pass rates", {"selector": "bots",
     "selector_config": {"plugin": "interpolation"}},
     "selector 'bots' needs reference pass rates (the interpolation plug-in reads"),
    ("evaluation without a held-out set", {"eval_dataset_files": None},
     "eval_strategy steps needs a held-out set"),
    ("held-out set lacks a reward column", {"eval_dataset_files": ["data/no_answer.jsonl"]},
     "data/no_answer.jsonl (columns: prompt): reward function 'my_rewards.correctness' reads "
     "column 'answer'"),
    ("held-out set never scored", {"eval_strategy": "no", "eval_on_start": False},
     "eval_dataset_files is never scored with eval_strategy no"),
    ("unknown selector", {"selector": "botz"}, "unknown selector 'botz' (did you mean 'bots'?)"),
    ("selector option misspelt", {"selector": "bots", "selector_config": {"lamda": 0.2}},
     "selector_config for 'bots': unknown option 'lamda' (did you mean 'lam'?)"),
    ("category column missing", {"selector": "sec", "category_columns": ["source"]},
     "category_columns: no column 'source'"),
    ("prompt column missing", {"prompt_column": "question"}, "no prompt column 'question'"),
    ("local model path missing", {"model_name_or_path": "models/qwen7b"},
     "model_name_or_path models/qwen7b (resolved from"),
    ("logging backend misspelt", {"report_to": ["tensorbord"]},
     "report_to tensorbord: not a logging backend (did you mean 'tensorboard'?)"),
    ("metis without a judge", {"selector": "metis"}, "metis needs a judge"),
    ("training file misspelt", {"dataset_files": ["data/trian.jsonl"]},
     "dataset_files: no such file 'data/trian.jsonl'"),
    ("reward_range reversed", {"reward_range": [1.5, 0]},
     "reward_range must be (lo, hi) with finite lo < hi"),
    # Issue 47: a KeyError traceback, then three mistakes check-config let through.
    ("reward_range as a mapping", {"reward_range": {"lo": 0, "hi": 1.5}},
     "reward_range must be (lo, hi) with finite lo < hi, got {'lo': 0, 'hi': 1.5}; in YAML a "
     "list of two numbers"),
    ("an image dataset with dynamic sampling", {"dynamic_sampling": "fixed",
     "dataset_files": ["data/images.jsonl"]},
     "data/images.jsonl (columns: prompt, answer, image): dynamic_sampling does not support "
     "image datasets"),
    ("one generation per prompt", {"num_generations": 1},
     "num_generations must be an int >= 2, got 1"),
    ("one generation per prompt with dynamic sampling", {"num_generations": 1,
     "dynamic_sampling": "greso"}, "num_generations must be an int >= 2, got 1"),
    ("eval_strategy no unquoted", {"eval_strategy": False},
     'eval_strategy is false: YAML reads an unquoted no (or yes, on, off) as a bool; quote '
     'it: eval_strategy: "no"'),
]  # fmt: skip
"""(mistake, the change to VALID, a phrase of the problem line naming it)."""

NEEDS_TRL: list[tuple[str, dict[str, Any], str]] = [
    ("TRL key misspelt", {"per_device_train_batchsize": 64},
     "unknown key 'per_device_train_batchsize' (did you mean 'per_device_train_batch_size'?)"),
    ("frontier-rft key misspelt", {"selecter": "bots"},
     "unknown key 'selecter' (did you mean 'selector'?)"),
]  # fmt: skip
"""Mistakes that only TRL's list of keys can tell from a TRL key."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The newcomer's folder: data files and a reward module, the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    rows = [{"prompt": f"{i} + 1 =", "answer": str(i + 1)} for i in range(20)]
    # 16 training prompts: VALID's step draws 16 (64 x 2 completions / 8), which fits
    for name, part in (("train", rows[:16]), ("heldout", rows[16:])):
        text = "".join(json.dumps(r) + "\n" for r in part)
        (tmp_path / "data" / f"{name}.jsonl").write_text(text)
    (tmp_path / "data" / "train.json").write_text(json.dumps(rows[:16]))  # one JSON array
    (tmp_path / "data" / "no_answer.jsonl").write_text(json.dumps({"prompt": "1 + 1 ="}) + "\n")
    images = [{**r, "image": f"img/{i}.png"} for i, r in enumerate(rows[:16])]
    (tmp_path / "data" / "images.jsonl").write_text("".join(json.dumps(r) + "\n" for r in images))
    (tmp_path / "my_rewards.py").write_text(REWARDS_PY)
    (tmp_path / "models").mkdir()  # where the newcomer keeps checkpoints
    return tmp_path


def config_file(folder: Path, change: dict[str, Any], name: str = "grpo.yaml") -> str:
    values = {**VALID, **change}
    values = {k: v for k, v in values.items() if v is not None}
    path = folder / name
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return str(path)


def problems(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("  - ")]


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check-config", *argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out + out.err


def test_the_valid_config_passes_with_trl(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    code, out = check(capsys, "trl", config_file(workdir, {}))
    assert code == 0 and "the frontier-rft settings are valid" in out, out
    assert "note" not in out, out  # everything was checked


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"selector": "skip", "use_vllm": False}, "auto: rollouts will be full (uniform's "
         "bill) because the run is 500 epochs"),  # 500 steps x 16 prompts over 16 JSON lines
        ({"selector": "skip", "use_vllm": False, "dataset_files": ["data/train.json"]}, "auto: "
         "rollouts will be kept: the run's length in epochs is not known yet"),  # a JSON array
        ({"selector": "skip", "use_vllm": False, "max_steps": -1, "num_train_epochs": 2},
         "auto: rollouts will be kept: the run is 2 epochs, within the 2 epochs over which kept "
         "was measured within noise; each step generates only the prompts 'skip' keeps"),
        ({"selector": "skip", "use_vllm": False, "max_steps": -1, "num_train_epochs": 3},
         "auto: rollouts will be full (uniform's bill) because the run is 3 epochs, longer than "
         "the 2 epochs over which selector 'skip' with kept was measured within noise"),
        ({"selector": "skip", "max_steps": -1, "num_train_epochs": 2}, "auto: rollouts will "
         "be kept: the run is 2 epochs, within the 2 epochs over which kept was measured within "
         "noise; each step generates only the prompts 'skip' keeps (vLLM, vllm_mode: colocate, is "
         "sent only those)"),  # use_vllm: true, as the file's
        ({"selector": "skip", "max_steps": -1, "num_train_epochs": 2, "vllm_mode": "server"},
         "auto: rollouts will be kept: the run is 2 epochs"),
        ({"selector": "skip", "use_vllm": False, "loss_type": "bnpo"}, "auto: rollouts will be "
         "full (uniform's bill) because rollouts: kept with loss_type: bnpo"),
        ({"selector": "uniform"}, "because selector 'uniform' passes over no prompt"),
        ({"use_vllm": False}, "because selector 'greso': with rollouts: kept it ended 0.04 "
         "below uniform"),  # measured: auto keeps greso's batches full (Selector.kept_loses)
        ({"selector": "skip", "use_vllm": False, "dynamic_sampling": "adaptive"}, "because "
         "dynamic_sampling: adaptive is a step sampler of its own"),
        ({"rollouts": "full"}, None),
        ({"selector": ["skip"]}, None),  # a wrong type: FrontierConfig names it, no crash
    ],
)  # fmt: skip
def test_check_config_says_what_rollouts_auto_will_be(
    workdir: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], said: str | None
) -> None:
    """The trainer's own decision (fewer_config.auto_rollouts), before any model loads."""
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    code, out = check(capsys, "trl", config_file(workdir, change))
    assert (code == 0 and "the frontier-rft settings are valid" in out) or change == {
        "selector": ["skip"]
    }, out
    lines = [line for line in out.splitlines() if line.startswith("  auto: ")]
    assert lines == ([] if said is None else [lines[0]]) and (said is None or said in lines[0])


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
@pytest.mark.parametrize(
    ("max_steps", "said"),
    [
        (5, "auto: rollouts will be kept: the run is 2 epochs, within the 2 epochs"),
        (10, "auto: rollouts will be full (uniform's bill) because the run is 4 epochs, longer "
         "than the 2 epochs"),
    ],
)  # fmt: skip
def test_check_config_counts_max_steps_in_epochs_over_a_parquet_files_rows(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    max_steps: int,
    said: str,
) -> None:
    """max_steps x 64 completions x 2 accumulation steps / 8 generations = 16 prompts a step
    over the 40 rows the parquet file states, on one process (said)."""
    monkeypatch.setenv("HF_HOME", str(workdir))  # no accelerate default config: 1 process
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = {"prompt": [f"{i} + 1 =" for i in range(40)], "answer": [str(i + 1) for i in range(40)]}
    pq.write_table(pa.table(rows), workdir / "data" / "train.parquet")
    change = {"selector": "skip", "use_vllm": False, "max_steps": max_steps,
              "dataset_files": ["data/train.parquet"]}  # fmt: skip
    code, out = check(capsys, "trl", config_file(workdir, change))
    (line,) = [line for line in out.splitlines() if line.startswith("  auto: ")]
    assert code == 0 and line.startswith(f"  {said}"), out
    assert line.endswith(
        "max_steps counted on 1 process (none given: pass --processes N for a multi-GPU launch)"
    )


@pytest.mark.parametrize(("mistake", "change", "phrase"), TRL_MISTAKES + NEEDS_TRL,
                         ids=[m for m, _, _ in TRL_MISTAKES + NEEDS_TRL])  # fmt: skip
def test_each_trl_mistake_is_named_alone(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    mistake: str,
    change: dict[str, Any],
    phrase: str,
) -> None:
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    code, out = check(capsys, "trl", config_file(workdir, change))
    found = problems(out)
    assert code == 1, (mistake, out)
    # The mistake alone (once per data file it concerns): no valid key is flagged.
    assert found and all(phrase in line for line in found), (mistake, phrase, out)


NO_TRL = "import sys\nsys.modules['trl'] = None  # as on `pip install -e .` without the extra\n"

DRIVER = """
import io, json, sys
from contextlib import redirect_stdout
from frontier_rft.cli.main import main
out = {}
for name in sys.argv[1:]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["check-config", "trl", name])
    out[name] = [code, buf.getvalue()]
loaded = {m.split(".")[0] for m, mod in sys.modules.items() if mod is not None}
heavy = sorted(loaded & {"torch", "trl", "transformers"})
print(json.dumps({"results": out, "heavy": heavy}))
"""


def test_without_trl_no_valid_key_is_flagged_and_the_rest_is_named(workdir: Path) -> None:
    """TRL's import blocked: its keys are not checked (a note says so), never flagged; a
    near miss of a frontier-rft key gets a note; every other mistake is named as with TRL."""
    site = workdir / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_TRL)
    cases = [
        ("valid", {}),
        *[(m, c) for m, c, _ in TRL_MISTAKES],
        *[(m, c) for m, c, _ in NEEDS_TRL],
    ]
    files = [config_file(workdir, c, f"case{i}.yaml") for i, (_, c) in enumerate(cases)]
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO / 'src'}"}
    done = subprocess.run([sys.executable, "-c", DRIVER, *files], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["heavy"] == [], report["heavy"]  # neither TRL nor torch was imported
    results = report["results"]
    code, out = results[files[0]]
    assert code == 0 and problems(out) == [], out
    assert "note: not checked: TRL's own keys, as trl is not installed" in out, out
    assert "if you meant" not in out, out  # no valid key is suggested a rename
    for (mistake, _, phrase), name in zip(TRL_MISTAKES, files[1:], strict=False):
        code, out = results[name]
        found = problems(out)
        assert code == 1 and found and all(phrase in line for line in found), (mistake, out)
    for (mistake, _, _), name in zip(NEEDS_TRL, files[1 + len(TRL_MISTAKES) :], strict=True):
        code, out = results[name]
        assert code == 0 and problems(out) == [], (mistake, out)  # cannot be told from TRL's
    code, out = results[files[-1]]
    assert "note: 'selecter' is not a frontier-rft key: if you meant 'selector', rename it" in out


def test_an_unquoted_no_is_named_with_its_fix(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eval_strategy: no` as a newcomer types it (YAML reads false); quoted, it is valid."""
    values = {k: v for k, v in VALID.items() if k not in ("eval_strategy", "eval_on_start",
              "eval_steps", "eval_dataset_files")}  # fmt: skip
    text = yaml.safe_dump(values, sort_keys=False)
    for line, valid in (("eval_strategy: no", False), ('eval_strategy: "no"', True)):
        path = workdir / "grpo.yaml"
        path.write_text(text + line + "\n")
        code, out = check(capsys, "trl", str(path))
        if valid:
            assert code == 0 and problems(out) == [], out
            continue
        assert code == 1 and problems(out) == [
            "eval_strategy is false: YAML reads an unquoted no (or yes, on, off) as a bool; "
            'quote it: eval_strategy: "no" (or steps, epoch)'
        ], out


def test_every_check_runs_whatever_else_is_wrong(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several mistakes in one file: each is named, and a refused option (a misspelt
    selector, a prompt column of the wrong type) does not hide the reward_range rule, the
    generation count, the strategy or the data checks (issue 47: a missing reward_range for
    two reward functions went unreported once another option was refused)."""
    change = {
        "reward_range": None,
        "reward_weights": None,
        "selector": "botz",
        "num_generations": 1,
        "eval_strategy": False,
        "eval_on_start": False,
        "dynamic_sampling": "fixed",
        "dataset_files": ["data/images.jsonl"],
    }
    code, out = check(capsys, "trl", config_file(workdir, change))
    found = problems(out)
    assert code == 1
    for phrase in (
        "unknown selector 'botz' (did you mean 'bots'?)",
        "num_generations must be an int >= 2, got 1",
        "eval_strategy is false: YAML reads an unquoted no",
        "2 reward functions (my_rewards.correctness, my_rewards.format_reward): TRL sums "
        "them, weighted, so the reward reaches 2 where each gives 1, and selector 'botz' reads "
        "rewards in [0, 1]: add the YAML line `reward_range: [0, 2]`",
        "eval_dataset_files is never scored with eval_strategy no",
        "dynamic_sampling does not support image datasets",
    ):
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    assert len(found) == 6, out
    # A refused column option: the columns wait, the reward_range rule does not.
    change = {"reward_range": None, "reward_weights": None, "prompt_column": ["question"],
              "reward_funcs": 5}  # fmt: skip
    code, out = check(capsys, "trl", config_file(workdir, change))
    found = problems(out)
    assert code == 1 and any("prompt_column must be a string" in p for p in found), out
    assert any("reward_funcs must be" in p for p in found), out
    assert "note: columns not checked until the column options above are fixed" in out
    code, out = check(capsys, "trl", config_file(workdir, {**change, "reward_funcs": [
        "my_rewards.correctness", "my_rewards.format_reward"]}))  # fmt: skip
    assert any("add the YAML line `reward_range: [0, 2]`" in p for p in problems(out)), out


# ---------------------------------------------------------------------------- verl


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def verl_rows(source: str, n: int, **extra: Any) -> list[dict[str, Any]]:
    """Rows as verl's gsm8k and math preprocessors write them: extra_info.index from 0."""
    return [
        {"data_source": source, "prompt": [{"role": "user", "content": f"{source} {i}"}],
         "reward_model": {"style": "rule", "ground_truth": str(i)},
         "extra_info": {"index": i, "split": "train", **extra}}
        for i in range(n)
    ]  # fmt: skip


VERL_MISTAKES: list[tuple[str, list[str], str]] = [
    ("train files share extra_info.index (verl's preprocessors)",
     ["data.train_files=[data/gsm8k.parquet, data/math.parquet]"],
     "data/gsm8k.parquet and data/math.parquet share 6 extra_info.index value(s) (first 0)"),
    ("sampler option misspelt", [f"++{KWARGS}.selectr=bots"],
     "unknown option 'selectr' (did you mean 'selector'?)"),
    ("bots interpolation without pass-rate columns",
     [f"{KWARGS}.selector=bots", f"{KWARGS}.selector_config={{plugin: interpolation}}"],
     "selector 'bots' needs reference pass rates (the interpolation plug-in reads weak/strong "
     "reference pass rates): set pass_rate_keys: [WEAK, STRONG]"),
    ("a train file without extra_info.index", ["data.train_files=data/no_index.parquet"],
     "task_id_key: column 'extra_info' has no field 'index'"),
]  # fmt: skip


@pytest.mark.parametrize(("mistake", "overrides", "phrase"), VERL_MISTAKES,
                         ids=[m for m, _, _ in VERL_MISTAKES])  # fmt: skip
def test_each_verl_mistake_is_named_before_ray_starts(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    mistake: str,
    overrides: list[str],
    phrase: str,
) -> None:
    write_parquet(workdir / "data" / "gsm8k.parquet", verl_rows("gsm8k", 8))
    write_parquet(workdir / "data" / "math.parquet", verl_rows("math", 6))
    no_index = [{**r, "extra_info": {"split": "train"}} for r in verl_rows("x", 4)]
    write_parquet(workdir / "data" / "no_index.parquet", no_index)
    base = [str(REPO / "examples" / "verl" / "greso.yaml"), "data.train_files=data/gsm8k.parquet"]
    code, out = check(capsys, "verl", *base)
    assert code == 0, out  # the valid config
    code, out = check(capsys, "verl", *base, *overrides)
    found = problems(out)
    assert code == 1, (mistake, out)
    assert found and all(phrase in line for line in found), (mistake, phrase, out)


def test_the_set_is_a_newcomers_first_run() -> None:
    assert len(TRL_MISTAKES) + len(NEEDS_TRL) + len(VERL_MISTAKES) >= 18
    assert len([k for k in VALID if k not in ("selector", "metrics_verbosity", "reward_range",
                "reward_funcs", "dataset_files", "eval_dataset_files")]) >= 25  # fmt: skip


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
@pytest.mark.parametrize(
    ("installed", "said"),
    [
        (None, "(a tested version)"),  # the TRL this environment pins
        # the trainer's own choice (resolve.py): auto keeps full batches on an untested TRL
        ("0.19.0", "full (uniform's bill) because kept is tested with TRL 1.16.0, not 0.19.0"),
    ],
)
def test_the_kept_choice_names_whether_the_installed_trl_is_tested(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    installed: str | None,
    said: str,
) -> None:
    """Issue 72: the kept line said "with this TRL version if it is a tested one" beside the
    tested TRL; it now names the installed version, and on an untested one says the full
    batches the trainer's resolution chooses there (issue 82)."""
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    from frontier_rft.integrations.trl.dynamic_config import TESTED_TRL

    if installed is None:
        assert importlib.metadata.version("trl") in TESTED_TRL, "make test installs a tested TRL"
    else:
        real = importlib.metadata.version
        monkeypatch.setattr(
            importlib.metadata, "version", lambda name: installed if name == "trl" else real(name)
        )
    change = {"selector": "skip", "use_vllm": False, "max_steps": -1, "num_train_epochs": 2}
    code, out = check(capsys, "trl", config_file(workdir, change))
    (line,) = [line for line in out.splitlines() if line.startswith("  auto: ")]
    assert code == 0 and said in line and "if it is a tested one" not in line, out


def test_a_trainer_key_is_not_filed_under_frontier_rft_settings(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72: TRL's own max_prompt_length (gone from TRL 1.16's GRPOConfig) was listed under
    "problems in the frontier-rft settings"; the headline now names what the lines are."""
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    code, out = check(capsys, "trl", config_file(workdir, {"max_prompt_length": 512}))
    assert code == 1
    head, problem = out.splitlines()[:2]
    assert head.endswith(": 1 problem to fix before the run:") and "frontier-rft" not in head
    assert "max_prompt_length" in problem
