"""The README a user reads: its quick-start loop runs and sees every step in metrics(), its
links point at files the repository has, and it reads as a user's guide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import Feedback, TaskPool, make_selector

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_quick_start_loop_sees_every_delivered_step(tmp_path: Path) -> None:
    loop = next(b for b in python_blocks(README) if "sel.metrics()" in b)
    logged: list[dict[str, float]] = []
    rng = np.random.default_rng(0)

    def rollout_and_score(ids: Any, n: int) -> Any:
        return (rng.random(len(ids) * n) < 0.5).astype(float)

    namespace: dict[str, Any] = {
        "prompts": [f"solve {i} + {i % 7}" for i in range(64)],
        "num_steps": 5,
        "batch_size": 8,
        "rollout_and_score": rollout_and_score,
        "log": logged.append,
    }
    code = loop.replace('"ckpt/selector.npz"', repr(str(tmp_path / "selector.npz")))
    exec(compile(code, "README.md", "exec"), namespace)  # the README's own code
    assert [m["feedback/steps"] for m in logged] == [1, 2, 3, 4, 5]  # no step lags behind
    assert (tmp_path / "selector.npz").exists()


def test_metrics_never_change_what_is_selected() -> None:
    """Why the README flushes instead of metrics() folding feedback in: logging (how often,
    between which pieces of a step) must not change the run."""
    pool = TaskPool(num_tasks=40)

    def run(log_between_pieces: bool, fold_when_logging: bool = False) -> list[list[int]]:
        sel = make_selector("bots", pool, seed=0, plugin="regression")  # a pool of ids alone
        chosen = []
        for step in range(6):
            ids = sel.select(8)
            chosen.append(ids.tolist())
            rewards = ((ids + step) % 3 == 0).astype(float)
            half = len(ids) // 2  # the step's rewards arrive in two pieces
            sel.update(Feedback(task_ids=ids[:half], rewards=rewards[:half], step=step))
            if log_between_pieces:
                if fold_when_logging:
                    sel.flush()  # what a metrics() that folded feedback in would do
                sel.metrics()
            sel.update(Feedback(task_ids=ids[half:], rewards=rewards[half:], step=step))
        return chosen

    assert run(True) == run(False)
    # Folding at logging time would split the step in two and change the selections.
    assert run(True, fold_when_logging=True) != run(False)


def test_readme_links_point_at_files_the_repository_has() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "expected links to docs/ and examples/"
    missing = [t for t in local if not (REPO / t).exists()]
    assert missing == []
    for path in re.findall(r"`((?:docs|examples|benchmarks|scripts)/[^`\s]+)`", README):
        assert (REPO / path).exists(), path


def test_readme_is_a_users_guide() -> None:
    assert not re.search(r"\bissue\b|issue \d|papers/\w", README, flags=re.I)
    for paper in ("2601.02648", "2510.26374", "2505.14970", "2605.11235"):
        assert f"arXiv:{paper}" in README
    for section in ("## Install", "## Quick start", "## Which selector", "## Results"):
        assert section in README


def test_docs_cite_nothing_the_repository_lacks() -> None:
    """Docs and docstrings cite papers by arXiv id, never the development tree's files."""
    texts = [*(REPO / "docs").rglob("*.md"), *(REPO / "src").rglob("*.py")]
    cited = [p for p in texts if re.search(r"papers/\w|DESIGN\.md|STYLE\.md", p.read_text())]
    assert cited == []


def test_the_runnable_own_loop_example_runs_and_compares_by_held_out_score() -> None:
    import runpy
    import sys
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    path = str(REPO / "examples" / "own_loop.py")
    with redirect_stdout(out):
        module = runpy.run_path(path, run_name="own_loop")
        module["main"]()
    text = out.getvalue()
    assert "resumed exactly" in text, text
    spent = {}
    for name in ("uniform", "skip"):
        found = re.search(rf"^{name}: held-out 0\.\d+ after (\d+) rollouts$", text, flags=re.M)
        assert found, text
        spent[name] = int(found.group(1))
    assert spent["skip"] < spent["uniform"], spent  # the same steps, a smaller bill
    assert "own_loop" not in sys.modules

    # The stand-in does not reward a batch for its share of mixed groups: groups whose
    # rewards are all equal (no advantage) change nothing, however many there are.
    n, policy = module["ROLLOUTS"], module["Policy"]
    mixed_ids = np.array([3, 7])
    mixed = np.tile(np.r_[np.ones(n // 2), np.zeros(n - n // 2)], 2)
    dead_ids = np.arange(10, 40)
    dead = np.repeat(np.arange(dead_ids.size) % 2, n).astype(float)  # all 1s or all 0s
    lean, padded = policy(), policy()
    lean.train(mixed_ids, mixed)
    padded.train(np.r_[mixed_ids, dead_ids], np.r_[mixed, dead])
    assert np.allclose(lean.skill, padded.skill) and not np.allclose(lean.skill, policy().skill)


# --------------------------------------------------------------------------- commands
GPU_MARK = re.compile(r"#.*\b(on a GPU|one H100)\b")


def readme_commands() -> list[tuple[str, bool]]:
    """Every command of the README's bash blocks, continuation lines joined, with whether
    its comment marks it as needing a GPU."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                command = re.sub(r"\s+#.*$", "", line).strip()
                commands.append((command, bool(GPU_MARK.search(line))))
    return commands


def test_the_readme_is_a_short_users_guide() -> None:
    """Short in characters, not only in lines: wide tables of intervals live in docs/results/
    (summary.md holds what the README's evidence rests on) and the README links there."""
    assert len(README.splitlines()) <= 230
    assert len(README) <= 13_500, len(README)
    long = [i + 1 for i, line in enumerate(README.splitlines()) if len(line) > 400]
    assert long == [], long
    assert "docs/results/summary.md" in README
    assert "frontier shadow replay" in README  # the command list names every subcommand a user runs


def test_every_readme_command_runs_or_is_marked_as_needing_a_gpu(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    """Each command is run here (at the size the README shows), or, when its comment says it
    needs a GPU, parsed by the program it calls and its files checked; make targets and pip
    extras are checked to exist. A command of any other kind fails the test: give it a way
    to be checked."""
    import shlex
    import subprocess
    import sys
    from importlib.metadata import metadata

    from frontier_rft.cli.main import build_parser, main

    extras = set(metadata("frontier-rft").get_all("Provides-Extra") or [])  # Python 3.10 too
    make_targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.M))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    yaml_block = next(b for b in re.findall(r"```yaml\n(.*?)```", README, flags=re.S))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (tmp_path / "grpo.yaml").write_text(
        yaml_block.replace("Qwen/Qwen2.5-0.5B-Instruct", str(model))
    )
    (tmp_path / "data").mkdir()
    row = {"prompt": "What is 1 + 1?", "answer": "2"}
    (tmp_path / "data" / "train.jsonl").write_text(__import__("json").dumps(row) + "\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    verl_rows = [  # verl's data format: chat prompt, stable id in extra_info.index
        {
            "prompt": [{"role": "user", "content": f"What is {i} + 1?"}],
            "reward_model": {"ground_truth": str(i + 1)},
            "extra_info": {"index": i},
        }
        for i in range(8)
    ]
    pq.write_table(pa.Table.from_pylist(verl_rows), tmp_path / "train.parquet")
    checked = []
    for command, needs_gpu in readme_commands():
        words = shlex.split(command)
        if words[0] == "make":
            assert set(words[1:]) <= make_targets, command
        elif words[:2] == ["pip", "install"]:
            named = re.findall(r"\.\[([\w,-]+)\]", command)
            for extra in ",".join(named).split(",") if named else []:
                assert extra in extras, (command, extra)
        elif words[0] == "frontier":
            if needs_gpu:
                build_parser().parse_args(words[1:])  # exits on an unknown flag or value
            else:
                assert main(words[1:]) == 0, command
                said = capsys.readouterr().out
                if words[1] == "check-config" and words[2] in ("trl", "verl"):
                    # The configs shown are the default: uniform's batches, skip as a shadow.
                    assert "  auto: rollouts will be full (uniform's bill) because selector " \
                        "'uniform' passes over no prompt" in said, said  # fmt: skip
                    assert "  shadows: the run will follow skip" in said, said
        elif words[:2] == ["python", "examples/own_loop.py"]:
            pass  # run by test_the_runnable_own_loop_example_runs_and_compares_by_held_out_score
        elif needs_gpu and "-m" in words:
            module = words[words.index("-m") + 1]
            for word in words:
                if word.startswith("--config-name="):
                    assert (REPO / "examples" / "verl" / f"{word.split('=')[1]}.yaml").exists()
            if module.startswith("frontier_rft"):
                help_run = subprocess.run(
                    [sys.executable, "-m", module, "--help"],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert help_run.returncode == 0, help_run.stderr[-2000:]
        else:
            raise AssertionError(f"no way to check this README command: {command}")
        checked.append(command)
    assert any(c.startswith("frontier check-config trl") for c in checked)
    assert any(c.startswith("frontier check-config verl") for c in checked)
