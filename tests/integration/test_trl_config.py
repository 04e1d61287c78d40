"""The TRL adapter driven by configuration: a selector by name from a TRL YAML file, its
TaskPool from the dataset's columns, the policy's self-embeddings, and the script.

All against the real GRPOTrainer on the tiny local model (tiny_lm.py), on CPU.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from datasets import Dataset
from tiny_lm import char_tokenizer, tiny_grpo_args, tiny_llama
from trl import GRPOConfig, TrlParser
from two_ranks import leave_process_group

from frontier_rft.features import policy_embeddings
from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer

N = 24
SOURCES = ("algebra", "geometry", "counting")


def rows() -> Dataset:
    """Prompts with a source column, a level, two reference pass rates; no task_id column."""
    return Dataset.from_dict(
        {
            "prompt": [f"{SOURCES[i % 3]} problem {i}: find x" for i in range(N)],
            "source": [SOURCES[i % 3] for i in range(N)],
            "level": [i % 4 for i in range(N)],
            "weak": [0.1 * (i % 4) for i in range(N)],
            "strong": [0.2 + 0.2 * (i % 4) for i in range(N)],
            "answer": [str(i % 2) for i in range(N)],
        }
    )


def parity_reward(completions: list[str], **kwargs: Any) -> list[float]:
    return [float(zlib.crc32(c.encode()) & 1) for c in completions]


def grpo_args(out: Path, **kw: Any) -> GRPOConfig:
    """The tiny run's settings with 6-token completions, 2 steps and TRL's learning rate."""
    values = {"max_completion_length": 6, "max_steps": 2, "bf16": False, "learning_rate": 1e-6}
    return tiny_grpo_args(out, **{**values, **kw})


def trainer(out: Path, frontier: FrontierConfig, **kw: Any) -> FrontierGRPOTrainer:
    tok = char_tokenizer()
    return FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[parity_reward],
        args=grpo_args(out, **kw),
        train_dataset=rows(),
        processing_class=tok,
        frontier=frontier,
    )


def test_frontier_config_is_read_by_trlparser_next_to_grpo_config(tmp_path: Path) -> None:
    config = tmp_path / "grpo.yaml"
    config.write_text(
        f"output_dir: {tmp_path / 'out'}\nuse_cpu: true\nbf16: false\nnum_generations: 4\n"
        "selector: sec\nselector_config: {tau: 0.5}\ncategory_columns: [source]\n"
        "reward_range: [0, 2]\nmetrics_verbosity: all\n"
    )
    parser = TrlParser((GRPOConfig, FrontierConfig))  # a field name clash would raise here
    training, frontier = parser.parse_args_and_config(["--config", str(config)])
    assert training.num_generations == 4
    assert frontier.selector == "sec" and frontier.selector_config == {"tau": 0.5}
    assert frontier.category_columns == ["source"] and frontier.reward_range == (0.0, 2.0)
    # On the command line a mapping is JSON, and flags win over the file.
    _, frontier = parser.parse_args_and_config(
        ["--config", str(config), "--selector_config", '{"tau": 0.2}', "--selector", "bots"]
    )
    assert frontier.selector == "bots" and frontier.selector_config == {"tau": 0.2}
    with pytest.raises(ValueError, match="selector_config must be a mapping"):
        FrontierConfig(selector_config="tau=0.2")
    import numpy as np

    numpy_values = FrontierConfig(reward_range=np.array([-1, 1]), selector_seed=np.int64(3))
    assert numpy_values.reward_range == (-1.0, 1.0) and numpy_values.selector_seed == 3
    # A YAML scalar where a list is meant: one column, not its characters.
    assert FrontierConfig(category_columns="source").category_columns == ["source"]  # type: ignore[arg-type]
    for bad, phrase in [
        ({"pass_rate_columns": "ab"}, "pass_rate_columns must be a list of column names"),
        ({"reward_range": 5}, "reward_range must be"),
        ({"prompt_column": 3}, "prompt_column must be a string"),
        ({"selector_seed": 1.7}, "selector_seed must be None or an int"),
        (
            {"self_embeddings": "off", "self_embeddings_refresh_steps": 5},
            "self_embeddings_refresh_steps refreshes",
        ),
        (
            {"features_column": "emb", "self_embeddings_refresh_steps": 5},
            "self_embeddings_refresh_steps refreshes",
        ),
    ]:
        with pytest.raises(ValueError, match=phrase):
            FrontierConfig(**bad)  # type: ignore[arg-type]


def test_selector_by_name_with_metadata_from_dataset_columns(tmp_path: Path) -> None:
    frontier = FrontierConfig(
        selector="sec",
        selector_config={"tau": 0.5},
        category_columns=["source"],
        difficulty_column="level",
        pass_rate_columns=["weak", "strong"],
    )
    t = trainer(tmp_path, frontier)
    sel = t.frontier_selector
    assert sel.name == "sec" and sel.config.tau == 0.5  # type: ignore[attr-defined]
    assert sel.seed == 0  # the trainer's seed
    # No task_id column: the adapter numbered the rows, task t is row t.
    assert t.train_dataset["task_id"] == list(range(N))
    pool = sel.pool
    assert pool.prompts is not None and pool.prompts[5] == rows()["prompt"][5]
    assert pool.categories is not None and pool.categories.tolist() == [i % 3 for i in range(N)]
    assert pool.difficulty is not None and pool.difficulty.tolist() == [i % 4 for i in range(N)]
    assert pool.reference_pass_rates is not None
    np.testing.assert_allclose(pool.reference_pass_rates[3], [0.3, 0.8])
    assert sel.evidence == {"categories": "given"}
    t.train()
    last = [h for h in t.state.log_history if "loss" in h][-1]
    assert last["curriculum/evidence/categories/given"] == 1.0  # which evidence, in the logs
    assert last["curriculum/feedback/steps"] >= 1


def test_self_embeddings_are_the_policys_own_and_refresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="frontier_rft")  # the adapter's own message
    frontier = FrontierConfig(selector="pcl", self_embeddings_refresh_steps=1)
    t = trainer(tmp_path, frontier, max_steps=2)
    out = caplog.text
    assert "evidence: features=policy" in out and "self-embeddings of 24 prompts" in out
    sel = t.frontier_selector
    assert sel.evidence["features"] == "policy"
    tok = char_tokenizer()
    expected = policy_embeddings(tiny_llama(tok, seed=0), tok, rows()["prompt"], progress=False)
    assert sel.pool.features is not None
    np.testing.assert_allclose(sel.pool.features, expected, atol=1e-5)
    t.train()
    assert t.frontier_metrics()["trl/self_embedding_refreshes"] == 1.0  # after step 1
    assert sel.evidence["features"] == "refreshed"
    refreshed = sel.state_dict()["base"]["features"]
    now = policy_embeddings(t.model, tok, rows()["prompt"], progress=False)
    assert refreshed.shape == expected.shape and not np.allclose(refreshed, expected, atol=1e-6)
    assert np.abs(refreshed - now).max() < np.abs(expected - now).max()  # closer to the trained


def test_self_embeddings_stay_off_for_selectors_that_read_no_features(tmp_path: Path) -> None:
    for name, evidence in (("prioritized", {}), ("mopps", {"plugin": "none"})):
        t = trainer(tmp_path / name, FrontierConfig(selector=name))
        assert t.frontier_selector.evidence == evidence
        assert t.frontier_run.embedding_texts is None
    with pytest.raises(ValueError, match="judge: heuristic"):
        trainer(tmp_path / "m", FrontierConfig(selector="metis"))
    metis = trainer(tmp_path / "m2", FrontierConfig(selector="metis", selector_judge="heuristic"))
    assert metis.frontier_selector.metrics()["metis/non_llm_judge"] == 1.0


def test_a_misspelt_selector_is_named_before_the_model_loads() -> None:
    with pytest.raises(ValueError, match=r"unknown selector 'bost' \(did you mean 'bots'\?\)"):
        FrontierConfig(selector="bost")


def test_metadata_options_with_a_ready_selector_are_refused(tmp_path: Path) -> None:
    from frontier_rft import TaskPool, make_selector

    ready = make_selector("sec", TaskPool(num_tasks=N, categories=[i % 3 for i in range(N)]))
    tok = char_tokenizer()
    build_only = [
        (FrontierConfig(category_columns=["source"]), "category_columns"),
        (FrontierConfig(self_embeddings_refresh_steps=5), "self_embeddings_refresh_steps"),
    ]
    for frontier, option in build_only:
        with pytest.raises(ValueError, match=f"{option} apply when the adapter builds"):
            FrontierGRPOTrainer(
                model=tiny_llama(tok),
                reward_funcs=[parity_reward],
                args=grpo_args(tmp_path),
                train_dataset=rows().add_column("task_id", list(range(N))),
                processing_class=tok,
                selector=ready,
                frontier=frontier,
            )


def test_a_refresh_with_nothing_to_refresh_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reads no task features here"):
        trainer(tmp_path / "u", FrontierConfig(selector="uniform", self_embeddings_refresh_steps=5))


def test_grpo_script_trains_from_a_yaml_file(tmp_path: Path) -> None:
    """`python -m frontier_rft.integrations.trl.grpo --config FILE.yaml`, a local model and
    local data, as a user would run it (with a chat template, conversational prompts)."""
    tok = char_tokenizer()
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    model_dir = tmp_path / "model"
    tiny_llama(tok).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "train.jsonl"
    with open(data, "w") as fh:
        for i in range(N):
            prompt = [{"role": "user", "content": f"{SOURCES[i % 3]} {i}:"}]
            fh.write(json.dumps({"prompt": prompt, "answer": str(i % 2), "source": SOURCES[i % 3]}))
            fh.write("\n")
    example = Path(__file__).resolve().parents[2] / "examples" / "trl" / "grpo_frontier.yaml"
    config = tmp_path / "grpo.yaml"
    text = example.read_text()
    for key, value in {
        "model_name_or_path": str(model_dir),
        "dataset_files": f"[{data}]",
        "output_dir": str(tmp_path / "out"),
    }.items():
        text = "\n".join(
            f"{key}: {value}" if line.startswith(f"{key}:") else line for line in text.splitlines()
        )
    config.write_text(text)
    cmd = [sys.executable, "-m", "frontier_rft.integrations.trl.grpo", "--config", str(config)]
    cmd += ["--max_steps", "2", "--use_cpu", "true", "--bf16", "false", "--report_to", "none"]
    cmd += ["--max_completion_length", "6", "--per_device_train_batch_size", "8"]
    cmd += ["--num_generations", "4", "--save_strategy", "no", "--disable_tqdm", "true"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "frontier-rft: selector 'uniform'" in done.stderr  # a library message, shown
    assert "rollouts: auto is full: selector 'uniform' passes over no prompt" in done.stderr
    assert "frontier-rft: shadows: following skip" in done.stderr  # the default's shadow, said
    assert "frontier-rft: shadows over the run:" in done.stderr  # and its table at the end
    lines = (tmp_path / "out" / "frontier_metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert "shadow_passes" in records[-1]  # the default shadow's table, the run's last record
    last = [r for r in records if "curriculum/feedback/steps" in r][-1]
    assert last["step"] == 2 and last["curriculum/feedback/steps"] >= 1  # rewards reached it
    assert (tmp_path / "out" / "config.json").exists()  # the trained model was saved


def test_grpo_script_reports_a_mistake_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong selector name, a missing column, an unknown YAML key or reward function: one
    line naming it and exit status 2, no traceback; FRONTIER_DEBUG=1 raises instead."""
    from frontier_rft.integrations.trl.grpo import cli

    tok = char_tokenizer()
    model_dir = tmp_path / "model"
    tiny_llama(tok).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": f"p{i}", "answer": "1", "source": "a"}) + "\n" for i in range(N)
        )
    )
    base = ["--model_name_or_path", str(model_dir), "--dataset_files", str(data)]
    base += ["--output_dir", str(tmp_path / "out"), "--use_cpu", "true", "--bf16", "false"]
    base += ["--report_to", "none", "--category_columns", "source"]
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("selectorr: sec\n")
    for argv, expected in [
        (["--selector", "botz"], "unknown selector 'botz' (did you mean 'bots'?)"),
        (["--selector", "sec", "--category_columns", "sourcez"], "no column 'sourcez'"),
        (["--reward_funcs", "no_such_module.fn"], "reward function 'no_such_module.fn'"),
        (["--config", str(bad_yaml)], "selectorr"),
    ]:
        assert cli(base + argv) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if " error: " in line]
        assert len(errors) == 1 and expected in errors[0], err
        assert errors[0].startswith("frontier_rft.integrations.trl.grpo: error: ")
        assert "Traceback" not in err
    monkeypatch.setenv("FRONTIER_DEBUG", "1")
    with pytest.raises(ValueError, match="botz"):
        cli([*base, "--selector", "botz"])


# ---------------------------------------------------------------------- two processes
def _distributed_worker(out: Path) -> None:
    """One rank of a 2-process run whose selector reads the policy's self-embeddings."""
    from frontier_rft.integrations.trl.state import state_digest

    frontier = FrontierConfig(selector="pcl", self_embeddings_refresh_steps=2)
    t = trainer(out, frontier, max_steps=4, per_device_train_batch_size=8)
    initial = np.asarray(t.frontier_selector.pool.features).tolist()
    t.train()
    record = {
        "num_processes": t.accelerator.num_processes,
        "initial": initial,
        "refreshes": t.frontier_metrics()["trl/self_embedding_refreshes"],
        "digest": state_digest(t.frontier_selector.state_dict()),
    }
    (out / f"rank{t.accelerator.process_index}.json").write_text(json.dumps(record))
    leave_process_group()  # a rank exiting inside its gloo group can abort (SIGABRT)


def test_two_processes_share_one_set_of_self_embeddings(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parent)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    done = subprocess.run(
        [*cmd, __file__, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["num_processes"] == 2 and r["refreshes"] == 1 for r in ranks)  # at step 2
    assert ranks[0]["initial"] == ranks[1]["initial"]  # each embedded half, then gathered
    assert ranks[0]["digest"] == ranks[1]["digest"]  # refreshed identically, same selector
    tok = char_tokenizer()
    alone = policy_embeddings(tiny_llama(tok, seed=0), tok, rows()["prompt"], progress=False)
    np.testing.assert_allclose(np.array(ranks[0]["initial"]), alone, atol=1e-5)


if __name__ == "__main__":  # a rank of the two-process test, started by torch.distributed.run
    _distributed_worker(Path(sys.argv[1]))


class _CountedConfig(FrontierConfig):
    """A FrontierConfig that counts reads of its selector options once constructed."""

    reads: dict[str, int] | None = None

    def __getattribute__(self, name: str) -> Any:
        reads = object.__getattribute__(self, "reads")
        if reads is not None and name in ("selector", "selector_config", "selector_judge"):
            reads[name] = reads.get(name, 0) + 1
        return object.__getattribute__(self, name)


@pytest.mark.parametrize(
    ("options", "funcs"),
    [
        ({"selector": "pcl"}, 1),  # reads features: self-embeddings, formerly a probe build
        ({"selector": "sec", "category_columns": ["source"]}, 2),  # two rewards, no range
        ({"selector": "greso", "dynamic_sampling": "fixed"}, 1),
    ],
)
def test_the_trainer_reads_the_selector_options_once_and_builds_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], funcs: int
) -> None:
    from frontier_rft.core.selector import Selector

    builds: list[str] = []
    init = Selector.__init__

    def counted(self: Selector, *args: Any, **kwargs: Any) -> None:
        builds.append(self.name)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Selector, "__init__", counted)
    frontier = _CountedConfig(**options)
    reads: dict[str, int] = {}
    object.__setattr__(frontier, "reads", reads)
    tok = char_tokenizer()
    rewards = [parity_reward, lambda completions, **kw: [0.0] * len(completions)][:funcs]
    t = FrontierGRPOTrainer(
        model=tiny_llama(tok, seed=0),
        reward_funcs=rewards,
        args=grpo_args(tmp_path),
        train_dataset=rows(),
        processing_class=tok,
        frontier=frontier,
    )
    assert builds == [options["selector"]]  # no throwaway builds before the one selector
    assert reads == {"selector": 1, "selector_config": 1, "selector_judge": 1}
    assert t.frontier_selector.name == options["selector"]


@pytest.mark.parametrize(
    "options",
    [
        {"selector": "uniform"},  # rollouts: auto, resolved to full
        {"selector": "greso", "dynamic_sampling": "fixed"},
        {"selector": "greso", "rollouts": "kept", "screen": 2},
        {"selector": "greso", "sampler": "fewer_rollouts", "sampler_config": {"screen": 2}},
        {"selector": "uniform", "sampler": "dynamic_sampling", "sampler_config": {"max_rounds": 3}},
    ],
)
def test_the_trainer_builds_its_step_sampler_spec_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """From the config to a built trainer, one SamplerSpec: the adapter's entry checks, the
    rollouts: auto resolution (resolve.py) and the step driver all read
    `FrontierConfig.sampler_spec()`."""
    specs = spec_builds(monkeypatch)
    t = trainer(tmp_path, FrontierConfig(**options))
    assert_one_spec_driven(t, specs)
    assert (t.frontier_driver is None) == (t.frontier_config.sampler_spec().kind == "passthrough")


def spec_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kind of every SamplerSpec built from now on, in order."""
    from frontier_rft.sampling.spec import SamplerSpec

    specs: list[str] = []
    init = SamplerSpec.__post_init__

    def counted(self: SamplerSpec) -> None:
        specs.append(self.kind)
        init(self)

    monkeypatch.setattr(SamplerSpec, "__post_init__", counted)
    return specs


def assert_one_spec_driven(t: FrontierGRPOTrainer, specs: list[str]) -> None:
    """`specs` (spec_builds) holds one build, the trainer's spec, the one its driver runs."""
    spec = t.frontier_config.sampler_spec()
    assert specs == [spec.kind]  # built once, from either vocabulary
    driver = t.frontier_driver
    assert driver is None or driver.sampler.config == spec.config  # the driver runs that spec


@pytest.mark.parametrize(
    "options",
    [
        ["--selector", "uniform"],
        ["--selector", "greso", "--rollouts", "kept", "--screen", "2"],
        ["--selector", "sec", "--category_columns", "source", "--dynamic_sampling", "fixed"],
    ],
)
def test_a_trainer_built_from_a_yaml_runs_each_check_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str]
) -> None:
    """The script checks the model path, the selector's metadata, reward_range and the data's
    columns before it reads the data, and the trainer it builds does not check them again;
    the step sampler's spec is built once, the one the step driver runs."""
    import frontier_rft.integrations.trl.arguments as trainer_checks
    import frontier_rft.integrations.trl.grpo as script

    calls: dict[str, int] = {}
    checks = ("local_model_path", "pool_problems", "reward_range_problems", "data_problems")
    for module in (script, trainer_checks):  # the trainer's checks of its arguments
        for name in checks:
            check = getattr(module, name)

            def counted(*args: Any, _name: str = name, _check: Any = check, **kw: Any) -> Any:
                calls[_name] = calls.get(_name, 0) + 1
                return _check(*args, **kw)

            monkeypatch.setattr(module, name, counted)
    specs = spec_builds(monkeypatch)
    monkeypatch.setattr(FrontierGRPOTrainer, "train", lambda self, **kw: None)
    monkeypatch.setattr(FrontierGRPOTrainer, "save_model", lambda self, *a, **kw: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok = char_tokenizer()
    model_dir = tmp_path / "model"
    tiny_llama(tok).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows().to_list()))
    argv = ["--model_name_or_path", str(model_dir), "--dataset_files", str(data)]
    argv += ["--output_dir", str(tmp_path / "out"), "--use_cpu", "true", "--bf16", "false"]
    argv += ["--report_to", "none", "--num_generations", "4", "--max_completion_length", "6"]
    argv += ["--per_device_train_batch_size", "8", "--reward_funcs", "answer_match", *options]
    t = script.main(argv)
    assert calls == dict.fromkeys(checks, 1)
    assert_one_spec_driven(t, specs)


def test_a_cpu_run_shows_no_gradient_checkpointing_deprecations(tmp_path: Path) -> None:
    """transformers 5.24 warns about the gradient checkpointing names TRL 1.16 calls in every
    generation (98 FutureWarnings over a 32-step run): filtered at the adapter's call of TRL's
    generation (issue 91, item 11), any other warning left to show."""
    import warnings

    t = trainer(tmp_path / "out", FrontierConfig(selector="uniform"), gradient_checkpointing=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t.train()
    checkpointing = [w for w in seen if "gradient_checkpointing" in str(w.message)]
    assert t.state.global_step == 2 and not checkpointing, [str(w.message) for w in seen]


def test_the_run_state_is_one_object_the_trainers_names_read(tmp_path: Path) -> None:
    """What frontier-rft adds to the trainer is one `FrontierRun` (issue 90, item 4): the
    public names read its fields, and the log and checkpoint halves read nothing else."""
    import ast
    import inspect

    from frontier_rft.integrations.trl import checkpoints, run_log
    from frontier_rft.integrations.trl.run_state import FrontierRun

    t = trainer(tmp_path / "out", FrontierConfig(selector="uniform"))
    run = t.frontier_run
    assert isinstance(run, FrontierRun)
    assert (t.frontier_config, t.frontier_plan, t.frontier_selector, t.frontier_sampler) == (
        run.config, run.plan, run.selector, run.sampler
    )  # fmt: skip
    assert t.frontier_driver is run.driver is None and t.frontier_stop_reason is None
    for module in (run_log, checkpoints):
        tree = ast.parse(inspect.getsource(module))
        read = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and "frontier" in node.attr
        }
        methods = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert read - methods == {"frontier_run"}, (module.__name__, read - methods)
