"""The trainer's device setting: names, validation, the one-line error without a GPU, and
checkpoints that load on a CPU whatever device wrote them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from frontier_rft.lm.device import resolve_device, valid_device_name
from frontier_rft.training.config import SFTConfig, TrainConfig

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["cpu", "cuda", "cuda:0", "cuda:12", "auto"])
def test_valid_names(name: str) -> None:
    assert valid_device_name(name)
    TrainConfig(device=name)
    SFTConfig(device=name)


@pytest.mark.parametrize("name", ["", "gpu", "CUDA", "cuda:", "cuda:x", "mps:0", 0, None])
def test_invalid_names_are_one_line_errors(name: object) -> None:
    assert not valid_device_name(name)
    with pytest.raises(ValueError, match=r"device must be (a string|'cpu', 'cuda')"):
        TrainConfig(device=name)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device must be"):
        resolve_device(name)  # type: ignore[arg-type]


def test_auto_and_cpu_resolve() -> None:
    assert resolve_device("cpu").type == "cpu"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA GPU")
def test_cuda_without_a_gpu_says_how_to_fix() -> None:
    with pytest.raises(ValueError, match=r"sees no CUDA GPU.*--device cpu"):
        resolve_device("cuda")


def test_defaults_stay_on_the_cpu() -> None:
    assert TrainConfig().device == "cpu"
    assert SFTConfig().device == "cpu"


def test_resume_may_change_hardware_settings_only() -> None:
    from frontier_rft.training.run_files import check_same_run

    saved = {"lr": 1e-4, "steps": 10, "device": "cuda", "threads": 1}
    check_same_run(saved, {**saved, "steps": 20, "device": "cpu", "threads": 4})
    with pytest.raises(ValueError, match=r"different configuration \(lr\)"):
        check_same_run(saved, {**saved, "lr": 2e-4})


def test_cli_resume_takes_the_hardware_flags(tmp_path: Path) -> None:
    import argparse

    from frontier_rft.cli.train import _resumed_config
    from frontier_rft.training.run_files import jsonable_config
    from frontier_rft.training.run_info import write_run_info

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    saved = jsonable_config(TrainConfig(steps=10, lr=2e-4))
    write_run_info(tmp_path / "run.json", {"config": saved, "model_dir": str(model)})
    names = [f.name for f in dataclasses.fields(TrainConfig)] + ["metis_lam", "metis_k"]
    args = argparse.Namespace(**dict.fromkeys(names), metis_m=None, set=None, model=None)
    args.out, args.steps, args.device, args.threads = str(tmp_path), 30, "auto", 2
    config, source = _resumed_config(args)
    assert (config.steps, config.device, config.threads, config.lr) == (30, "auto", 2, 2e-4)
    assert source == model


def test_run_info_is_bounded_and_checked(tmp_path: Path) -> None:
    from frontier_rft.training.run_info import read_run_info, write_run_info

    path = tmp_path / "run.json"
    write_run_info(path, {"config": {"steps": 3}, "model_dir": "m", "given": ["prompts"]})
    assert read_run_info(path)["config"] == {"steps": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind
    path.write_text('{"config": ' * 50 + "{}" + "}" * 50)
    with pytest.raises(ValueError, match="nesting depth"):
        read_run_info(path)
    path.write_text('["config"]')
    with pytest.raises(ValueError, match="a JSON object expected"):
        read_run_info(path)
    path.write_text('{"config": {}, "model_dir": 7}')
    with pytest.raises(ValueError, match="no 'model_dir' string"):
        read_run_info(path)


def test_resume_with_the_run_s_own_config_file_and_a_changed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --config file's values count as given flags: the same as saved resumes, another
    value is refused; --device may change."""
    from frontier_rft.cli.main import main
    from frontier_rft.training import grpo
    from frontier_rft.training.run_files import jsonable_config
    from frontier_rft.training.run_info import write_run_info

    seen: list[TrainConfig] = []

    class FakeTrainer:
        def __init__(self, config: TrainConfig, *args: object, **kwargs: object) -> None:
            seen.append(config)

        def train(self) -> dict[str, float]:
            return {}

    monkeypatch.setattr(grpo, "Trainer", FakeTrainer)
    model, run = tmp_path / "model", tmp_path / "run"
    model.mkdir()
    (model / "config.json").write_text("{}")
    saved = TrainConfig(selector="bots", steps=10, selector_overrides={"lam": 0.2})
    write_run_info(run / "run.json", {"config": jsonable_config(saved), "model_dir": str(model)})
    same = tmp_path / "same.yaml"
    same.write_text(f"selector: bots\nsteps: 10\nset: {{lam: 0.2}}\nout: {run}\nmodel: {model}\n")
    assert main(["train", "--config", str(same), "--resume", "--device", "auto"]) == 0
    assert seen[-1] == dataclasses.replace(saved, device="auto")
    other = tmp_path / "other.yaml"
    other.write_text(f"selector: sec\nset: {{lam: 0.3}}\nout: {run}\n")
    assert main(["train", "--config", str(other), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "drop --selector, --set/--metis-*" in err and len(seen) == 1
    # A list-valued override equal to the saved one resumes; a changed 0-valued one does not.
    listed = TrainConfig(selector="bots", selector_overrides={"answer_values": [0.0, 1.0]})
    write_run_info(run / "run.json", {"config": jsonable_config(listed), "model_dir": str(model)})
    assert main(["train", "--out", str(run), "--resume", "--set", "answer_values=[0.0,1.0]"]) == 0
    metis = TrainConfig(selector="metis", selector_overrides={"judge_loss_weight": 0.5})
    write_run_info(run / "run.json", {"config": jsonable_config(metis), "model_dir": str(model)})
    args = ["train", "--out", str(run), "--resume", "--selector", "metis", "--metis-lam", "0"]
    assert main(args) == 2
    assert "drop --set/--metis-*" in capsys.readouterr().err
