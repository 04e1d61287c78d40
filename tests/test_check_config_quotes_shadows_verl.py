"""Issue 83: what the reviews of the audited skip and fewer steps found in `frontier
check-config` and the start-up lines. Each test failed on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.integrations.plan import auto, kept_line
from frontier_rft.integrations.trl.config import TRL
from frontier_rft.selectors import SELECTORS
from frontier_rft.selectors.skip import SkipSelector
from helpers import check_config, problems

pytestmark = pytest.mark.usefixtures("no_accelerate_default")

VERL_SKIP = str(Path(__file__).resolve().parents[1] / "examples" / "verl" / "skip.yaml")
SKIP_KEPT_SAVES = "0.78x of uniform's rollouts"
SKIP_FEWER_STEPS = "0.83-0.84x of uniform's steps"


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, body: str,
          *argv: str) -> tuple[int, str]:  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(body, encoding="utf-8")
    return check_config(capsys, kind, str(path), *argv)


# ------------------------------------------------------------------ item 4: own figures
def test_skip_audit_with_kept_quotes_its_own_saving_not_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "selector: skip-audit\nrollouts: kept\nnum_train_epochs: 2\n"
    body += "per_device_train_batch_size: 16\n"  # 2 prompts a step (at 1 kept saves nothing)
    code, text = check(capsys, tmp_path, "trl", body)
    assert code == 0, text
    (line,) = [x for x in text.splitlines() if "rollouts: kept (set)" in x]
    assert "measured saving: 0.93x of uniform's rollouts" in line
    assert SKIP_KEPT_SAVES not in line  # skip's saving, measured on skip's runs
    assert "it follows 'skip', which with rollouts: kept it lost" in line  # whose, named


def test_skip_audit_under_auto_quotes_its_own_fewer_steps_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "selector: skip-audit\nnum_train_epochs: 2\nper_device_train_batch_size: 16\n"
    code, text = check(capsys, tmp_path, "trl", body)  # 2 prompts a step
    (line,) = [x for x in text.splitlines() if "auto: rollouts will be" in x]
    assert code == 0 and SKIP_FEWER_STEPS not in line
    assert "0.98x of uniform's steps over 2 epochs on the CPU fast regime" in line
    assert "its own kept runs: 0.93x" in line


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_every_selectors_lines_quote_only_its_own_figures(name: str) -> None:
    """A figure measured with another selector (a parent's) is quoted only as that one's,
    and a selector without figures of its own says so."""
    cls = SELECTORS[name]
    line = kept_line(TRL, cls)
    _, why, _ = auto(TRL, cls, [], 2.0, device="cuda")
    for field in ("kept_saves", "fewer_steps_saves"):
        _, whose = cls.measured(field)
        inherited = getattr(cls, field)
        if inherited and whose != cls.name:
            assert inherited not in line and inherited not in why, (name, field)
    if cls.measured("kept_saves")[1] != cls.name:
        assert f"no kept run of {name!r} measured" in line
    if cls.kept_loses and issubclass(cls, SkipSelector) and cls is not SkipSelector:
        assert "it follows 'skip'" in line


# ------------------------------------------------------------------ item 5: shadows
@pytest.mark.parametrize("argv", [["--shadows", "[skip]"], ["--shadows=[skip]"]])
def test_a_bracketed_shadows_argument_is_refused_as_the_launch_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """TRL's parser hands `--shadows '[skip]'` over as the rule '[skip]', which
    FrontierConfig refuses at launch; check-config read it as YAML's list [skip]."""
    code, text = check(capsys, tmp_path, "trl", "selector: uniform\n", *argv)
    (line,) = problems(text)
    assert code == 1 and line.startswith("shadow rule '[skip]': cannot read '[skip]'")
    from frontier_rft.integrations.trl.config import FrontierConfig

    with pytest.raises(ValueError) as launch:  # what the launch's FrontierConfig says
        FrontierConfig(selector="uniform", shadows=["[skip]"]).shadow_configs()
    assert str(launch.value) == line


def test_shadows_given_as_the_script_takes_them_are_named_in_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = check(capsys, tmp_path, "trl", "selector: uniform\n", "--shadows", "skip", "greso")
    assert code == 0 and problems(text) == []
    assert "  shadows: the run will follow skip, greso (shadows as set)" in text
    code, text = check(capsys, tmp_path, "trl", "selector: greso\nshadows: [screen4]\n")
    assert code == 0 and "  shadows: the run will follow screen4 (shadows as set)" in text
    code, text = check(capsys, tmp_path, "trl", "selector: uniform\nshadows: []\n")
    assert code == 0 and "will follow" not in text  # none run: none named


def test_verl_names_set_shadows_and_refuses_them_beside_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kwargs = "+trainer.v1.sampler.sampler_kwargs"
    code, text = check_config(
        capsys, "verl", VERL_SKIP, f"{kwargs}.shadows=[greso]",
        f"{kwargs}.rollouts=full",
    )  # fmt: skip
    assert code == 0 and "  shadows: the run will follow greso (shadows as set)" in text
    code, text = check_config(
        capsys, "verl", VERL_SKIP, f"{kwargs}.shadows=[greso]"
    )  # skip.yaml sets rollouts: kept, which the sampler refuses shadows beside
    (line,) = problems(text)
    assert code == 1 and "which rollouts: kept does not roll out" in line


# ------------------------------------------------------------------ item 7: verl's rollout
VERL_UNIFORM = str(Path(__file__).resolve().parents[1] / "examples" / "verl" / "uniform.yaml")
ROLLOUT = "actor_rollout_ref.rollout"


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            [f"{ROLLOUT}.tensor_model_parallel_size=3", "trainer.n_gpus_per_node=8"],
            f"{ROLLOUT}.tensor_model_parallel_size 3 does not divide the 8 GPUs",
        ),
        ([f"+{ROLLOUT}.name=vlm"], "rollout.name must be one of vllm, sglang, trtllm"),
        ([f"+{ROLLOUT}.mode=colocated"], f"{ROLLOUT}.mode must be async"),
        ([f"+{ROLLOUT}.mode=sync"], "verl removed sync"),
    ],
)
def test_verl_rollout_settings_verl_refuses_once_ray_starts_are_problems(
    capsys: pytest.CaptureFixture[str], overrides: list[str], says: str
) -> None:
    """What check-config trl catches about vLLM (tensor parallel size against the
    processes, the mode) check-config verl catches about verl's rollout engine."""
    code, text = check_config(capsys, "verl", VERL_UNIFORM, *overrides)
    (line,) = problems(text)
    assert code == 1 and says in line, text
    assert "set " in line or "did you mean" in line  # says how to fix it


def test_verl_rollout_settings_that_fit_pass(capsys: pytest.CaptureFixture[str]) -> None:
    for overrides in (
        [f"{ROLLOUT}.tensor_model_parallel_size=4", "trainer.n_gpus_per_node=8"],
        [
            f"{ROLLOUT}.tensor_model_parallel_size=8",
            "trainer.n_gpus_per_node=4",
            "trainer.nnodes=2",
        ],
        [f"+{ROLLOUT}.name=sglang", f"+{ROLLOUT}.mode=async"],
    ):
        code, text = check_config(capsys, "verl", VERL_UNIFORM, *overrides)
        assert code == 0 and problems(text) == [], (overrides, text)
    code, text = check_config(
        capsys, "verl", VERL_UNIFORM, f"{ROLLOUT}.tensor_model_parallel_size=3"
    )  # 8 GPUs by verl's default
    assert code == 1 and "does not divide the 8 GPUs" in problems(text)[0]
    assert "tensor_model_parallel_size: 2" in problems(text)[0]


def test_verls_own_unset_marker_is_not_a_rollout_problem() -> None:
    """verl's defaults leave `rollout.name` as OmegaConf's mandatory '???' until a run sets
    it: nothing to check there (tests_verl's full default config caught this)."""
    from frontier_rft.integrations.verl.preflight import rollout_problems

    unset = {"actor_rollout_ref": {"rollout": {"name": "???", "mode": "${oc.env:MODE}"}}}
    assert rollout_problems(unset) == []
    bad = {"actor_rollout_ref": {"rollout": {"name": "vlm"}}}
    assert "rollout.name must be one of vllm, sglang, trtllm" in rollout_problems(bad)[0]
