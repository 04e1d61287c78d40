"""`frontier check-config`: every mistake in the frontier-rft part of a TRL or verl config,
named at once, one line each, on a machine with neither verl nor a GPU (nor torch, for
verl files and TRL files holding only frontier-rft keys)."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from frontier_rft.cli.check_config import as_assignments
from frontier_rft.cli.main import main
from frontier_rft.core.config import check, config_problems, did_you_mean
from frontier_rft.model_dirs import looks_local, model_dir_problem
from helpers import check_config_apart

REPO = Path(__file__).resolve().parents[1]
VERL_EXAMPLES = sorted((REPO / "examples" / "verl").glob("*.yaml"))
KWARGS = "trainer.v1.sampler.sampler_kwargs"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check-config", *argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out + out.err


def problems(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("  - ")]


# ---------------------------------------------------------------------------- building blocks


@dataclass(frozen=True)
class Window:
    """A config whose hi bounds lo (a check across fields) and a step that must be >= 1."""

    lo: int = 0
    """Lower end."""
    hi: int = 3
    """Upper end."""
    step: int = 1
    """Stride."""

    def __post_init__(self) -> None:
        check(self.lo <= self.hi, f"lo ({self.lo}) must not exceed hi ({self.hi})")
        check(self.step >= 1, f"step must be >= 1, got {self.step}")


def test_config_problems_names_every_mistake_and_judges_values_together() -> None:
    assert config_problems(Window, {"lo": 5, "hi": 10}) == []  # lo alone would exceed hi=3
    assert config_problems(Window, {"lo": 5, "hi": 10, "step": 0, "stpe": 2}) == [
        "unknown option 'stpe' (did you mean 'step'?); valid options: lo, hi, step",
        "step must be >= 1, got 0",
    ]
    # Each value passes alone; together they do not.
    assert config_problems(Window, {"lo": 2, "hi": 1}) == ["lo (2) must not exceed hi (1)"]
    assert config_problems(Window, {"hi": 10}, fixed={"lo": 1}) == []
    assert did_you_mean("botz", ["bots", "sec"]) == " (did you mean 'bots'?)"
    assert did_you_mean("zzz", ["bots"]) == ""


def test_names_that_look_like_local_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    for name in ("/abs/qwen", "~/ckpt", "./m", "../m", "a/b/c", "models/qwen7b", "my model/x"):
        assert looks_local(name), name
    for name in ("Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "org/name"):  # hub ids
        assert not looks_local(name), name
    assert model_dir_problem("models/qwen7b", "--model") == (
        f"--model models/qwen7b (resolved from {tmp_path}): no such directory"
    )
    assert "not a model directory (no config.json)" in str(model_dir_problem("models", "--m"))
    (tmp_path / "models" / "config.json").write_text("{}")
    assert model_dir_problem(tmp_path / "models", "--m") is None


def test_command_line_overrides_read_as_the_trainers_read_them() -> None:
    assert as_assignments(["a.b=1", "+c.d=x", "--selector", "bots", "--flag"]) == [
        "a.b=1",
        "+c.d=x",
        "selector=bots",
        "flag=true",
    ]
    assert as_assignments(["--category-columns", "a", "b", "--x=2"]) == [
        "category_columns=[a, b]",
        "x=2",
    ]


def test_verl_and_skyrl_read_the_pool_fields_from_one_public_function() -> None:
    """The fields verl's and SkyRL's sampler builds its pool from: one function, shared."""
    from dataclasses import fields

    from frontier_rft.integrations.preflight import SAMPLER_POOL_KEYS, sampler_pool_fields
    from frontier_rft.integrations.verl.config import VerlSamplerConfig

    names = {f.name for f in fields(VerlSamplerConfig)}
    assert {option for _, option in SAMPLER_POOL_KEYS} <= names
    assert sampler_pool_fields({}) == {"prompts"}
    assert sampler_pool_fields(
        {"category_keys": ["c"], "self_embeddings_model": "m", "difficulty_key": ""}
    ) == {"prompts", "categories", "features"}


# ---------------------------------------------------------------------------- verl


@pytest.mark.parametrize("path", VERL_EXAMPLES, ids=lambda p: p.stem)
def test_every_verl_example_passes(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "verl", str(path))
    assert code == 0, out
    assert "the frontier-rft settings are valid" in out


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def test_verl_mistakes_are_all_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "train.parquet"
    write_parquet(
        data,
        [
            {"prompt": [{"role": "user", "content": f"q{i}"}], "data_source": "gsm8k",
             "extra_info": {"index": i, "level": i % 3}}
            for i in range(6)
        ],
    )  # fmt: skip
    code, out = run(
        capsys,
        "verl",
        str(REPO / "examples" / "verl" / "sec.yaml"),
        f"{KWARGS}.selector=botz",
        f"++{KWARGS}.selectr=bots",
        f"{KWARGS}.seed=-1",
        f"{KWARGS}.category_keys=[data_sourc, extra_info.levle]",
        f"{KWARGS}.batch_size=8",
        f"data.train_files={data}",
        "data.train_batch_size=16",
        "trainer.v1.trainer_mode=colocate_async",
    )
    assert code == 1
    found = problems(out)
    expected = [
        "custom_sampler.name: 'FrontierReplayBuffer': trainer_mode colocate_async needs "
        "FrontierReplayBufferAsync",
        f"{KWARGS}: batch_size is not read",
        f"{KWARGS}: unknown option 'selectr' (did you mean 'selector'?)",
        f"{KWARGS}: unknown selector 'botz' (did you mean 'bots'?)",
        f"{KWARGS}: seed must be a non-negative int, got -1",
        "category_keys: no column 'data_sourc' (did you mean 'data_source'?)",
        "category_keys: column 'extra_info' has no field 'levle' (extra_info.levle) "
        "(did you mean 'level'?)",
        "batch size 16 exceeds the 6 rows of data.train_files",
    ]
    for phrase in expected:
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    assert len(found) == len(expected), out


def test_verl_plugging_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ppo.yaml"
    config.write_text("trainer:\n  use_v1: true\n")
    code, out = run(capsys, "verl", str(config))
    assert code == 1 and "no frontier-rft sampler is plugged in" in out
    code, out = run(
        capsys,
        "verl",
        str(REPO / "examples" / "verl" / "bots.yaml"),
        "trainer.use_v1=false",
        "trainer.v1.sampler.custom_sampler.path=pkg://frontier_rft.integrations.verl.v2",
        f"{KWARGS}.selector_config={{lamb: 0.1}}",
        f"{KWARGS}.selector=metis",
        "data.train_files=missing.parquet",
    )
    assert code == 1
    for phrase in (
        "trainer.use_v1: false: verl's legacy trainer ignores trainer.v1.sampler",
        "'pkg://frontier_rft.integrations.verl.v2' is not the frontier-rft buffer",
        "selector_config for 'metis': unknown option 'lamb'",
        "metis needs a judge",
        "data.train_files: no such file 'missing.parquet'",
    ):
        assert phrase in out, (phrase, out)
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(
        "data:\n  sampler:\n    class_path: pkg://frontier_rft.integrations.verl\n"
        "    class_name: FrontierSampler\n    frontier:\n      selector: sec\n"
        "      selector_config: {tau: 0}\n"
    )
    code, out = run(capsys, "verl", str(legacy))
    assert code == 1 and "data.sampler.frontier: selector_config for 'sec': tau" in out


def test_verl_check_imports_neither_verl_nor_torch_nor_ray() -> None:
    check_config_apart(
        "verl", VERL_EXAMPLES[0], 0, heavy=("torch", "verl", "ray", "transformers", "trl")
    )


GRESO = str(REPO / "examples" / "verl" / "greso.yaml")


def test_without_verl_its_own_keys_are_said_to_be_unchecked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "verl", None)  # find_spec then finds no verl
    code, out = run(capsys, "verl", GRESO, "data.train_batch_sz=64")
    assert code == 0, out
    assert "note: not checked: verl's own keys (8 here), as verl is not installed" in out


def fake_verl(root: Path) -> None:
    """A verl 0.9.1 on sys.path holding its generated trainer config (a few of the real
    file's keys) and one config dataclass, that refuses to be imported: check-config reads
    its files, never runs them."""
    package = root / "verl"
    (package / "trainer" / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('check-config imported verl')\n")
    (package / "base_config.py").write_text(
        "import collections\n\n\nclass BaseConfig(collections.abc.Mapping):\n"
        "    _mutable_fields = set()\n    _target_: str = ''\n"
    )
    (package / "trainer" / "config" / "algorithm.py").write_text(
        "from typing import ClassVar\nfrom verl.base_config import BaseConfig\n\n\n"
        "class AlgoConfig(BaseConfig):\n    gamma: float = 1.0\n    lam: float = 1.0\n"
        "    adv_estimator: str = 'gae'\n"
        "    gdpo_reward_keys: list = None\n    registry: ClassVar[dict] = {}\n"
    )
    (package / "trainer" / "config" / "_generated_ppo_trainer.yaml").write_text(
        "data:\n  train_files: x.parquet\n  train_batch_size: 1024\n  gen_batch_size: null\n"
        "  dataloader_num_workers: 8\n  custom_cls: {path: null, name: null}\n"
        "actor_rollout_ref:\n  model: {path: ~/models/x, lora_rank: 0}\n  rollout: {n: 1}\n"
        "algorithm:\n  _target_: verl.trainer.config.AlgoConfig\n  gamma: 1.0\n  lam: 1.0\n"
        "  adv_estimator: gae\n"
        "trainer:\n  use_v1: false\n  v1:\n    trainer_mode: sync\n    sampler:\n"
        "      custom_sampler: {path: null, name: null}\n      sampler_kwargs: {}\n"
        "      sync_refill_failed_groups: false\n  logger: [console]\n"
    )
    info = root / "verl-0.9.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.9.1\n")


def test_verls_own_keys_are_checked_against_its_config_when_it_is_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_verl(tmp_path)
    monkeypatch.delitem(sys.modules, "verl", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    fine = ["actor_rollout_ref.model.path=/m", "trainer.logger=[console, wandb]"]
    code, out = run(capsys, "verl", GRESO, *fine, "+algorithm.gdpo_reward_keys=[acc]")
    assert code == 0, out  # gdpo_reward_keys: a field of AlgoConfig the YAML leaves out
    assert "note: verl's own keys: 10 checked against verl 0.9.1's ppo_trainer config" in out
    code, out = run(
        capsys, "verl", GRESO, "data.train_batch_sz=64", "+actor_rollout_ref.model.lora_rnak=8",
        "+data.cache_dir=/tmp/c", "+data.custom_cls.path=my.py", "+algorithm.gamm=0.9",
        "+algorithm.registry=x", "+critic.enable=false",
    )  # fmt: skip
    assert code == 1, out
    assert problems(out) == [
        "unknown key 'algorithm.gamm': not a field of verl 0.9.1's AlgoConfig "
        "(did you mean 'gamma'?)",
        "unknown key 'algorithm.registry': not a field of verl 0.9.1's AlgoConfig",
        "unknown key 'actor_rollout_ref.model.lora_rnak': not in verl 0.9.1's config, which "
        "ignores it (did you mean 'lora_rank'?)",
        "unknown key 'data.train_batch_sz': not in verl 0.9.1's config, which ignores it "
        "(did you mean 'train_batch_size'?)",
    ]
    assert "(verl reads a few keys it does not declare; check the spelling): " \
        "'data.cache_dir', 'critic'" in out  # fmt: skip
    assert "'data.custom_cls" not in out  # a declared key with keys of its own
    assert "verl" not in sys.modules or sys.modules["verl"] is None


def test_dataloader_workers_lag_the_selector_and_verl_07_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "verl", GRESO, "data.dataloader_num_workers=4")
    assert code == 0, out  # still valid on verl 0.9: a warning
    assert "note: data.dataloader_num_workers 4: the dataloader prefetches 4 x " in out
    assert "(docs/integrations/verl.md, Lag between drawing and rewards)" in out
    code, out = run(capsys, "verl", GRESO, "data.dataloader_num_workers=-1")
    assert code == 1 and "data.dataloader_num_workers: must be an int >= 0, got -1" in out
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(
        "data:\n  sampler:\n    class_path: pkg://frontier_rft.integrations.verl\n"
        "    class_name: FrontierSampler\n    frontier: {selector: greso}\n"
    )
    code, out = run(capsys, "verl", str(legacy))
    assert code == 1 and problems(out) == [
        "data.dataloader_num_workers: 8 (verl's default): verl <= 0.7 refuses a curriculum "
        "sampler unless it is 0: set data.dataloader_num_workers: 0"
    ], out
    code, out = run(capsys, "verl", str(legacy), "data.dataloader_num_workers=0")
    assert code == 0, out


def test_trls_dynamic_sampling_on_verl_points_to_verls_filter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from frontier_rft.integrations.verl import VerlSamplerConfig

    code, out = run(capsys, "verl", GRESO, f"{KWARGS}.dynamic_sampling=adaptive")
    assert code == 1
    (line,) = problems(out)
    assert line.startswith(f"{KWARGS}: unknown option 'dynamic_sampling' (the TRL adapter's): ")
    assert "algorithm.filter_groups.enable=true and algorithm.filter_groups.metric=reward" in line
    with pytest.raises(ValueError, match=r"sampler_kwargs\.dynamic_sampling_tol is the TRL .*"
                       r"algorithm\.filter_groups\.enable=true"):  # fmt: skip
        VerlSamplerConfig.from_fields({"dynamic_sampling_tol": 0.1}, 4, "sampler_kwargs")


KEPT = f"++{KWARGS}.rollouts=kept"


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["trainer.v1.trainer_mode=colocate_async",
          "trainer.v1.sampler.custom_sampler.name=FrontierReplayBufferAsync"],
         "trainer_mode colocate_async: rollouts: kept needs verl's sync v1 trainer"),
        (["trainer.v1.trainer_mode=separate_async",  # verl's fully-async trainer
          "trainer.v1.sampler.custom_sampler.name=FrontierReplayBufferAsync"],
         "trainer_mode separate_async: rollouts: kept needs verl's sync v1 trainer"),
        (["++algorithm.filter_groups.enable=true"],
         "rollouts: kept with algorithm.filter_groups: verl's DAPO filter refills"),
        (["++trainer.v1.sampler.sync_refill_failed_groups=true"],
         "rollouts: kept with trainer.v1.sampler.sync_refill_failed_groups"),
        (["++data.train_batch_size=8", "++data.gen_batch_size=2"],
         "rollouts: kept with data.gen_batch_size=2"),
    ],
    ids=["async", "fully-async", "filter_groups", "refill", "gen_batch_size"],
)  # fmt: skip
def test_rollouts_kept_with_a_verl_option_it_cannot_shrink_is_named(
    overrides: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "verl", GRESO, *overrides)  # without kept: valid
    assert code == 0, out
    code, out = run(capsys, "verl", GRESO, KEPT, *overrides)
    assert code == 1
    (line,) = [p for p in problems(out) if "rollouts: kept" in p]
    assert line.startswith(f"{KWARGS}: ") and says in line, out
    assert line.count("\n") == 0 and ("set" in line or "unset" in line)  # says how to fix


def test_rollouts_kept_on_the_legacy_trainer_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(
        "data:\n  dataloader_num_workers: 0\n  sampler:\n"
        "    class_path: pkg://frontier_rft.integrations.verl\n"
        "    class_name: FrontierSampler\n    frontier:\n      selector: greso\n"
    )
    assert run(capsys, "verl", str(legacy))[0] == 0
    code, out = run(capsys, "verl", str(legacy), "+data.sampler.frontier.rollouts=kept")
    assert code == 1
    assert problems(out) == [
        "data.sampler.frontier: rollouts: kept needs verl's v1 sync trainer (FrontierReplayBuffer)"
        ": as a per-prompt sampler (legacy RayPPOTrainer, verl <= 0.7) verl packs the kept "
        "prompts into full train_batch_size batches; set trainer.use_v1: true, or rollouts: "
        "full; see docs/integrations/verl.md, 'Fewer rollouts on verl's own schedule'"
    ]
    code, out = run(capsys, "verl", GRESO, KEPT, "trainer.use_v1=false")
    assert code == 1
    use_v1, kept = problems(out)
    assert use_v1.endswith("so the selector would never run; set it to true")  # no RayPPOTrainer
    assert kept.startswith(f"{KWARGS}: rollouts: kept needs verl's v1 sync trainer")


def test_rollouts_kept_on_the_v1_sync_trainer_is_valid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run(
        capsys, "verl", GRESO, KEPT, "++data.train_batch_size=8", "++data.gen_batch_size=8",
        "++algorithm.filter_groups.enable=false", "trainer.v1.trainer_mode=sync",
    )  # fmt: skip
    assert code == 0 and "the frontier-rft settings are valid" in out, out
    code, out = run(capsys, "verl", GRESO, KEPT, "++data.gen_batch_size=1024")  # verl's default
    assert code == 0, out
    code, out = run(capsys, "verl", GRESO, KEPT, f"{KWARGS}.selector=bots")
    assert code == 1 and "selector 'bots' does not walk the data" in out  # as before


def _default_verl(tmp_path: Path) -> str:
    """A v1 sync config plugging in FrontierReplayBuffer with the sampler's defaults."""
    path = tmp_path / "default.yaml"
    path.write_text(
        "data: {dataloader_num_workers: 0}\ntrainer:\n  use_v1: true\n  v1:\n"
        "    trainer_mode: sync\n    sampler:\n      custom_sampler: {path: "
        "pkg://frontier_rft.integrations.verl.v1, name: FrontierReplayBuffer}\n"
    )
    return str(path)


@pytest.mark.parametrize(
    ("overrides", "because"),
    [
        (["++trainer.total_epochs=2"], None),
        ([], "the run is 30 epochs, longer than the 2 epochs over which selector 'skip' with "
         "kept was measured within noise"),  # verl's default total_epochs
        (["++trainer.total_epochs=3"], "the run is 3 epochs, longer than the 2 epochs"),
        (["trainer.v1.trainer_mode=colocate_async",
          "trainer.v1.sampler.custom_sampler.name=FrontierReplayBufferAsync"],
         "trainer_mode colocate_async: rollouts: kept needs verl's sync v1 trainer"),
        (["++algorithm.filter_groups.enable=true"],
         "rollouts: kept with algorithm.filter_groups: verl's DAPO filter refills"),
        (["++trainer.v1.sampler.sync_refill_failed_groups=true"],
         "rollouts: kept with trainer.v1.sampler.sync_refill_failed_groups"),
        (["++data.train_batch_size=8", "++data.gen_batch_size=2"],
         "rollouts: kept with data.gen_batch_size=2"),
        ([f"++{KWARGS}.shadows=[greso]"], "shadows follow uniform's whole batches"),
        ([f"++{KWARGS}.selector=uniform"], "selector 'uniform' passes over no prompt"),
        ([f"++{KWARGS}.selector=bots"], "selector 'bots' does not walk the data"),
        (["trainer.use_v1=false"], "rollouts: kept needs verl's v1 sync trainer"),
    ],
    ids=["two-epochs", "verl-default-30-epochs", "three-epochs", "async", "filter_groups",
         "refill", "gen_batch_size", "shadows", "uniform", "bots", "legacy"],
)  # fmt: skip
@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_check_config_verl_says_what_rollouts_auto_will_be(
    overrides: list[str], because: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """auto's decision on verl, for a selector measured free of loss with kept up to 2 epochs
    (planted: conftest's `skip_kept_to_two_epochs`), named in the config."""
    from frontier_rft.integrations.verl.auto import auto_rollouts
    from frontier_rft.selectors.registry import SELECTORS

    overrides = [f"++{KWARGS}.selector=skip", *overrides]
    code, out = run(capsys, "verl", _default_verl(tmp_path), *overrides)
    (line,) = [line for line in out.splitlines() if line.startswith("  auto: rollouts")]
    if because is None:
        assert code == 0, out
        assert line == (
            "  auto: rollouts will be kept: the run is 2 epochs, within the 2 epochs over which "
            "kept was measured within noise; each step generates only the prompts 'skip' keeps "
            "among verl's batch (same steps, fewer rollouts)"
        )
        # The decision the buffer makes at runtime, on the same settings.
        two = {"trainer": {"total_epochs": 2}}
        assert auto_rollouts(two, selector=SELECTORS["skip"], shadows=(), legacy=False)[0] == "kept"
    else:
        assert line.startswith("  auto: rollouts will be full (uniform's bill) because "), out
        assert because in line and "\n" not in line.strip()
    code, out = run(
        capsys, "verl", _default_verl(tmp_path), *overrides, f"++{KWARGS}.rollouts=full"
    )
    assert "auto:" not in out  # rollouts set: nothing to say


def test_check_config_verl_by_default_trains_uniforms_batches_and_shadows_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 70: the default is uniform's whole batches, skip followed as a shadow, said
    before launch; beside verl's DAPO filter the default shadow is dropped, not refused."""
    code, out = run(capsys, "verl", _default_verl(tmp_path))
    assert code == 0, out
    assert (
        "  auto: rollouts will be full (uniform's bill) because selector 'uniform' passes over "
        "no prompt" in out
    )
    assert "  shadows: the run will follow skip (shadows left unset, beside uniform's" in out
    code, out = run(
        capsys, "verl", _default_verl(tmp_path), "++algorithm.filter_groups.enable=true"
    )
    assert "will follow" not in out and "shadows with algorithm.filter_groups" not in out, out
    code, out = run(capsys, "verl", _default_verl(tmp_path), f"++{KWARGS}.shadows=[]")
    assert code == 0 and "will follow" not in out, out


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_check_config_verl_on_the_legacy_sampler_says_auto_is_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(
        "data:\n  dataloader_num_workers: 0\n  sampler:\n"
        "    class_path: pkg://frontier_rft.integrations.verl\n    class_name: FrontierSampler\n"
        "    frontier: {selector: skip}\n"
    )
    code, out = run(capsys, "verl", str(legacy))
    assert code == 0, out
    assert "  auto: rollouts will be full (uniform's bill) because rollouts: kept needs verl's " \
        "v1 sync trainer (FrontierReplayBuffer): as a per-prompt sampler" in out  # fmt: skip


# ---------------------------------------------------------------------------- TRL


def test_trl_frontier_keys_are_checked_without_torch(tmp_path: Path) -> None:
    """A file of frontier-rft keys only: every mistake named, and torch never imported."""
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"question": "1+1?", "source": "add", "level": 1}) + "\n")
    config = tmp_path / "grpo.yaml"
    config.write_text(
        f"dataset_files: [{data}]\nselector: sec\nselector_config: {{tua: 0.5}}\n"
        "category_columns: [sourc]\nself_embeddings: sometimes\nreward_funcs: [answer_match]\n"
        "trainer: ppo\n"
    )
    out = check_config_apart("trl", config, 1)
    found = problems(out)
    for phrase in (
        "trainer must be grpo or rloo, got 'ppo'",
        "self_embeddings must be one of ('auto', 'on', 'off'), got 'sometimes'",
        "selector_config for 'sec': unknown option 'tua' (did you mean 'tau'?)",
        "no prompt column 'prompt': set prompt_column: COLUMN in the config file",
        "category_columns: no column 'sourc' (did you mean 'source'?)",
        "reward function 'answer_match' reads column 'answer', which the data lacks",
    ):
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    assert len(found) == 6, out


def test_trl_unknown_keys_and_model_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="TRL's own keys are read from trl")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as on a fresh [trl] install
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    config = tmp_path / "grpo.yaml"
    config.write_text(
        "model_name_or_path: models/qwen7b\nnum_generatons: 8\nselecter: bots\n"
        "report_to: [tensorboard]\n"
    )
    code, out = run(capsys, "trl", str(config), "--selector", "sec")
    assert code == 1
    found = problems(out)
    for phrase in (
        "unknown key 'num_generatons' (did you mean 'num_generations'?)",
        "unknown key 'selecter' (did you mean 'selector'?)",
        f"model_name_or_path models/qwen7b (resolved from {tmp_path}): no such directory",
        "report_to tensorboard: the tensorboard package is not installed",
    ):
        assert sum(phrase in line for line in found) == 1, (phrase, out)
    assert len(found) == 4, out
    (tmp_path / "data").mkdir()  # the example's dataset_files: its columns, a step's 8 prompts
    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1), "source": "add"} for i in range(8)]
    (tmp_path / "data" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = run(capsys, "trl", str(REPO / "examples" / "trl" / "grpo_frontier.yaml"))
    assert code == 0, out  # the shipped example needs no package the [trl] extra lacks


def test_usage_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "verl", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frontier check-config: error: check-config ") and "no such file" in err
    assert main(["check-config", "verl", str(VERL_EXAMPLES[0]), "oops"]) == 2
    assert "write KEY=VALUE" in capsys.readouterr().err


def test_data_columns_are_read_from_the_first_row_or_header(tmp_path: Path) -> None:
    from frontier_rft.integrations.preflight import DataColumns, read_data_columns

    (tmp_path / "a.json").write_text(json.dumps([{"prompt": "p", "meta": {"level": 1}}]))
    (tmp_path / "b.csv").write_text("prompt, answer\np,1\n")
    (tmp_path / "c.txt").write_text("prompt\n")
    (tmp_path / "d.jsonl").write_text("[1, 2]\n")
    got = read_data_columns(tmp_path / "a.json")
    assert got == DataColumns(
        names=["prompt", "meta"], first_row={"prompt": "p", "meta": {"level": 1}}
    )
    csv_columns = read_data_columns(tmp_path / "b.csv")
    assert isinstance(csv_columns, DataColumns) and csv_columns.names == ["prompt", "answer"]
    assert "are not checked" in str(read_data_columns(tmp_path / "c.txt"))
    assert "not a JSON object" in str(read_data_columns(tmp_path / "d.jsonl"))
    assert str(read_data_columns(tmp_path / "none.jsonl")).startswith("no such file")


def test_the_trl_docs_examples_log_without_an_extra_package() -> None:
    """The [trl] extra installs no logging backend: the examples a user copies must not ask
    for one (a fresh install ended in transformers' 'TensorBoardCallback requires' error)."""
    doc = (REPO / "docs" / "integrations" / "trl.md").read_text()
    yaml_text = (REPO / "examples" / "trl" / "grpo_frontier.yaml").read_text()
    settings = re.findall(r"report_to=([^,)\s]+)", doc) + re.findall(
        r"^report_to:\s*(\S+)", yaml_text, flags=re.M
    )
    assert settings and all(s.strip("\"'") == "none" for s in settings), settings
