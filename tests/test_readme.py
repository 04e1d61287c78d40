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


def test_the_runnable_own_loop_example_runs_and_greso_beats_uniform() -> None:
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
    skills = re.search(r"uniform ([\d.]+), greso ([\d.]+)", text)
    assert skills is not None and float(skills[2]) > float(skills[1]), text
    assert "own_loop" not in sys.modules
