"""Issue 72, item 4: what a new user's `frontier check-config` let through. Each mistake is one
problem line naming the fix, found before any model loads; each test failed on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontier_rft.cli.main import main
from helpers import check_config, problems

TWO = "selector: skip\nnum_train_epochs: 2\n"
"""A run auto makes kept (2 epochs: within what kept was measured over)."""


pytestmark = pytest.mark.usefixtures("no_accelerate_default")


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, body: str,
          *argv: str) -> tuple[int, str]:  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(body, encoding="utf-8")
    return check_config(capsys, kind, str(path), *argv)


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_a_vllm_mode_trl_has_not_is_refused_and_not_repeated_as_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = check(capsys, tmp_path, "trl", f"{TWO}use_vllm: true\nvllm_mode: colocated\n")
    (line,) = problems(text)
    assert code == 1 and "vllm_mode must be server or colocate" in line
    assert "did you mean 'colocate'" in line
    assert "vllm_mode: colocated, is sent" not in text  # the auto line does not echo it
    code, text = check(capsys, tmp_path, "trl", f"{TWO}use_vllm: true\nvllm_mode: server\n")
    assert code == 0 and problems(text) == [] and "vllm_mode: server, is sent" in text


def test_a_colocated_tensor_parallel_size_must_divide_the_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "use_vllm: true\nvllm_tensor_parallel_size: 3\n"
    code, text = check(capsys, tmp_path, "trl", body, "--processes", "8")
    (line,) = problems(text)
    assert code == 1 and "vllm_tensor_parallel_size 3 does not divide 8 processes" in line
    assert "set vllm_tensor_parallel_size: 2" in line
    code, text = check(capsys, tmp_path, "trl", body, "--processes", "6")
    assert code == 0 and problems(text) == []
    server = body + "vllm_mode: server\n"  # the server's own tensor parallelism: not TRL's rule
    assert check(capsys, tmp_path, "trl", server, "--processes", "8")[0] == 0


@pytest.mark.parametrize("epochs", ["two", "-1", "0", ".inf"])
def test_num_train_epochs_that_is_no_positive_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], epochs: str
) -> None:
    code, text = check(capsys, tmp_path, "trl", f"num_train_epochs: {epochs}\n")
    (line,) = problems(text)
    assert code == 1 and "num_train_epochs must be" in line and "max_steps" in line
    # With max_steps > 0 transformers ignores num_train_epochs; TRL's parser still refuses
    # one that is no number ("two": not a float), as it reads the file.
    body = f"num_train_epochs: {epochs}\nmax_steps: 10\n"
    found = problems(check(capsys, tmp_path, "trl", body)[1])
    assert found == [] if epochs != "two" else "TRL's parser refuses it" in found[0]
    assert problems(check(capsys, tmp_path, "trl", "num_train_epochs: 2\n")[1]) == []


@pytest.mark.usefixtures("skip_kept_to_two_epochs")
def test_use_vllm_is_read_as_trl_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = check(capsys, tmp_path, "trl", f'{TWO}use_vllm: "yes"\n')
    assert code == 0 and "vllm_mode: colocate, is sent only those" in text  # vLLM on
    code, text = check(capsys, tmp_path, "trl", f'{TWO}use_vllm: "no"\n')
    assert code == 0 and "vLLM" not in text
    code, text = check(capsys, tmp_path, "trl", 'use_vllm: "maybe"\n')
    (line,) = problems(text)
    assert code == 1 and "use_vllm must be true or false" in line


def test_skyrl_refuses_kept_with_gae(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = "frontier:\n  rollouts: kept\ntrainer:\n  algorithm:\n    advantage_estimator: {}\n"
    code, text = check(capsys, tmp_path, "skyrl", body.format("gae"))
    lines = [p for p in problems(text) if "advantage_estimator=gae" in p]
    assert code == 1 and len(lines) == 1 and "not group-relative" in lines[0]
    code, text = check(capsys, tmp_path, "skyrl", body.format("grpo"))
    assert not any("group-relative" in p for p in problems(text))


# ------------------------------------------------------------------ shadow replay


def test_shadow_replay_figure_without_matplotlib_stops_before_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    import frontier_rft.shadow.replay as replay_module

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else find_spec(name, *a),
    )
    monkeypatch.setattr(replay_module, "replay", lambda *a, **k: pytest.fail("replay ran"))
    log = tmp_path / "completions.jsonl"
    log.write_text("{}\n", encoding="utf-8")
    code = main(["shadow", "replay", str(log), "--rule", "greso", "--figure", "f.png"])
    err = capsys.readouterr().err
    assert code == 2 and "needs matplotlib" in err and "[plot]" in err
    assert len(err.strip().splitlines()) == 1


def test_shadow_replay_tokenizer_says_how_far_it_has_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from frontier_rft.cli.shadow import _ProgressCount

    class Tokenizer:
        def __call__(self, texts: list[str], **kwargs: bool) -> dict[str, list[list[int]]]:
            return {"input_ids": [list(range(len(text.split()))) for text in texts]}

    count = _ProgressCount(Tokenizer(), "my-model", every=0.0)
    assert [count(["a b c"]), count(["d e", "f"])] == [[3], [2, 1]]
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("--tokenizer my-model: 3 completion texts counted")
