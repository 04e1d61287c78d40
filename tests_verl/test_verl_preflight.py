"""The frontier-rft pre-flight inside verl: the Hydra callback every examples/verl file turns
on checks verl's composed config before verl's `main` runs, so before Ray starts.

Every example, composed by verl's Hydra config over a real data file, passes; a mistake in
each part stops the run with every mistake named; and verl's own `main_ppo`, launched with
a misspelt selector, exits 2 with the fix and no traceback, without starting Ray.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from verl_data import write_parquet

from frontier_rft.integrations.verl.hydra_preflight import FrontierPreflight

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "verl"
KWARGS = "trainer.v1.sampler.sampler_kwargs"


def compose(name: str, overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        return hydra_compose(name, overrides=overrides, return_hydra_config=True)


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_every_example_turns_the_check_on_and_passes(name: str, tmp_path: Path) -> None:
    data = write_parquet(tmp_path / "train.parquet", 48)
    cfg = compose(name, [f"data.train_files={data}", "data.train_batch_size=8"])
    target = cfg.hydra.callbacks.frontier_preflight._target_
    assert target == "frontier_rft.integrations.verl.hydra_preflight.FrontierPreflight"
    FrontierPreflight().on_job_start(cfg)  # no SystemExit: nothing to fix


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """The pre-flight's stderr without its one currency line and, after it, its start lines
    (verl/currency.py's: the start and its settings, or one line saying none)."""
    lines = capsys.readouterr().err.splitlines(keepends=True)
    currency = [ln for ln in lines if ln.startswith("frontier-rft pre-flight: currency: ")]
    assert len(currency) == 1, lines
    start = [ln for ln in lines if ln.startswith(("frontier-rft pre-flight: start plan: ",
             "frontier-rft pre-flight: set for your trainer: "))]  # fmt: skip
    at = lines.index(currency[0])
    assert start and lines[at + 1 : at + 1 + len(start)] == start, lines
    return "".join(ln for ln in lines if ln not in currency and ln not in start)


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_a_valid_config_goes_on_saying_what_rollouts_auto_will_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_parquet(tmp_path / "train.parquet", 48)
    base = [f"data.train_files={data}", "data.train_batch_size=8"]
    default = [*base, f"{KWARGS}.selector=skip", f"{KWARGS}.rollouts=auto"]  # as if unset
    two_epochs = [*default, "++trainer.total_training_steps=12"]  # 12 x 8 prompts over 48 rows
    FrontierPreflight().on_job_start(compose("greso", two_epochs))
    assert said(capsys) == (
        "frontier-rft pre-flight: rollouts will be kept: the run is 2 epochs, within the 2 "
        "epochs over which kept was measured within noise; each step generates only the prompts "
        "'skip' keeps among verl's batch (same steps, fewer rollouts)\n"
    )
    FrontierPreflight().on_job_start(compose("greso", default))  # verl's 30 epochs
    assert said(capsys).startswith(
        "frontier-rft pre-flight: rollouts will be full (uniform's bill) because the run is 30 "
        "epochs, longer than the 2 epochs"
    )
    FrontierPreflight().on_job_start(
        compose("greso", [*default, "++algorithm.filter_groups.enable=true"])
    )
    err = said(capsys)
    assert err.startswith("frontier-rft pre-flight: rollouts will be full (uniform's bill) "
                          "because rollouts: kept with algorithm.filter_groups")  # fmt: skip
    assert err.count("\n") == 1
    FrontierPreflight().on_job_start(compose("greso", base))  # rollouts: full, said in the file
    assert said(capsys) == ""


def test_mistakes_stop_the_run_with_every_one_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_parquet(tmp_path / "train.parquet", 12)
    overrides = [
        f"data.train_files={data}",
        "data.train_batch_size=16",
        f"{KWARGS}.selector=botz",
        f"{KWARGS}.category_keys=[data_sourc]",
        f"+{KWARGS}.selectr=sec",
        f"+{KWARGS}.reward_range=[1, 0]",
    ]
    with pytest.raises(SystemExit) as stop:
        FrontierPreflight().on_job_start(compose("sec", overrides))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("frontier-rft pre-flight: 5 problems to fix before the run:")
    for phrase in (
        "unknown selector 'botz' (did you mean 'bots'?)",
        "unknown option 'selectr' (did you mean 'selector'?)",
        "reward_range must be (low, high) with low < high",
        "category_keys: no column 'data_sourc' (did you mean 'data_source'?)",
        "batch size 16 exceeds the 12 rows of data.train_files",
    ):
        assert phrase in err, (phrase, err)


def test_verls_own_keys_are_checked_against_the_installed_verl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl 0.9.1's config, read from its files: a misspelt key verl would ignore (data) or
    refuse after Ray starts (a dataclass section) is named, by check-config and inside verl;
    a dataclass field its YAML leaves out, or an undeclared key verl reads, is not."""
    from frontier_rft.cli.main import main

    data = write_parquet(tmp_path / "train.parquet", 48)
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert main(["check-config", "verl", str(path), f"data.train_files={data}"]) == 0
        out = capsys.readouterr().out
        # skip.yaml and uniform.yaml also set trainer.total_epochs
        own = 9 if path.name in ("skip.yaml", "uniform.yaml") else 8
        assert f"note: verl's own keys: {own} checked against verl 0.9.1's ppo_trainer" in out
        assert "not in verl" not in out, out
    mistakes = ["+data.train_batch_sz=64", "+algorithm.gamm=0.9"]
    fine = [
        "+algorithm.gdpo_reward_keys=[acc]",
        "+actor_rollout_ref.rollout.repetition_penalty=1.1",
    ]
    expected = [
        "unknown key 'algorithm.gamm': not a field of verl 0.9.1's AlgoConfig (did you mean "
        "'gamma'?)",
        "unknown key 'data.train_batch_sz': not in verl 0.9.1's config, which ignores it (did "
        "you mean 'train_batch_size'?)",
    ]
    args = ["check-config", "verl", str(EXAMPLES / "greso.yaml"), f"data.train_files={data}"]
    assert main([*args, *mistakes, *fine]) == 1
    lines = [line[4:] for line in capsys.readouterr().out.splitlines() if line.startswith("  - ")]
    assert lines == expected
    with pytest.raises(SystemExit) as stop:
        FrontierPreflight().on_job_start(compose("greso", [f"data.train_files={data}",
                                                           *mistakes, *fine]))  # fmt: skip
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert all(f"  - {line}" in err for line in expected), err


def test_verl_main_stops_before_ray_starts(tmp_path: Path) -> None:
    data = write_parquet(tmp_path / "train.parquet", 12)
    cmd = [sys.executable, "-m", "verl.trainer.main_ppo", f"--config-path={EXAMPLES}"]
    cmd += ["--config-name=bots", f"{KWARGS}.selector=botz", f"data.train_files={data}"]
    cmd += [f"data.val_files={data}", f"hydra.run.dir={tmp_path / 'hydra'}"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "unknown selector 'botz' (did you mean 'bots'?)" in out
    assert "Traceback" not in out and "Error executing job" not in out
    assert "Started a local Ray instance" not in out and "ray.init" not in out


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["trainer.v1.trainer_mode=separate_async",
          "trainer.v1.sampler.custom_sampler.name=FrontierReplayBufferAsync"],
         "trainer_mode separate_async: rollouts: kept needs verl's sync v1 trainer"),
        (["algorithm.filter_groups.enable=true"], "rollouts: kept with algorithm.filter_groups"),
        (["trainer.v1.sampler.sync_refill_failed_groups=true"],
         "rollouts: kept with trainer.v1.sampler.sync_refill_failed_groups"),
        (["+data.gen_batch_size=2"], "rollouts: kept with data.gen_batch_size=2"),
    ],
    ids=["fully-async", "filter_groups", "refill", "gen_batch_size"],
)  # fmt: skip
def test_rollouts_kept_is_checked_on_verls_composed_config(
    overrides: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's own defaults (every key of its config) pass with rollouts: kept; each option
    kept cannot shrink a step in, set by its verl key, stops the run before Ray starts."""
    data = write_parquet(tmp_path / "train.parquet", 48)
    base = [f"data.train_files={data}", "data.train_batch_size=8", f"++{KWARGS}.rollouts=kept"]
    FrontierPreflight().on_job_start(compose("greso", base))  # valid: no SystemExit
    with pytest.raises(SystemExit) as stop:
        FrontierPreflight().on_job_start(compose("greso", [*base, *overrides]))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "unknown key" not in err, err
