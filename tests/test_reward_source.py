"""A reward function named in a TRL YAML file, found and read from source without running
it: the module as the script would import it, re-exports followed, the columns it reads;
what the source cannot say is reported as unchecked, never as a mistake."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from frontier_rft.integrations.trl.preflight import reward_columns
from frontier_rft.integrations.trl.reward_source import reward_source


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "rw").mkdir()
    (tmp_path / "rw" / "__init__.py").write_text("from .impl import acc as accuracy\n")
    (tmp_path / "rw" / "impl.py").write_text(
        "import functools\n\n"
        "def acc(prompts, completions, answer, *, level=1, task, **kwargs):\n"
        "    return []\n\n"
        "fmt = functools.partial(acc)\n\n"
        "if True:\n    late = acc\n\n"
        "raise SystemExit('never run: the file is read, not imported')\n"
    )
    (tmp_path / "star.py").write_text("from os.path import *\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    return tmp_path


def test_functions_are_read_not_run(folder: Path) -> None:
    found = reward_source("rw.accuracy", folder)  # re-exported under another name
    assert found.problem is None and found.path == folder / "rw" / "impl.py"
    assert found.required == ("prompts", "completions", "answer", "task")
    assert reward_columns(found) == ["answer", "task"]  # TRL passes prompts and completions
    assert found.any_keyword
    assert "rw" not in sys.modules and "rw.impl" not in sys.modules


@pytest.mark.parametrize(
    ("name", "kind", "phrase"),
    [
        ("rw.acuracy", "problem", "__init__.py defines no 'acuracy' (did you mean 'accuracy'?)"),
        ("rw.impl.acuracy", "problem", "defines no 'acuracy' (did you mean 'acc'?)"),
        ("rw.ipml.acc", "problem", "no module 'rw.ipml' is importable from"),
        ("rewards.acc", "problem", "no rewards.py there"),
        ("broken.f", "problem", "is not valid Python (line 1"),
        ("rw.impl.fmt", "unchecked", "not a plain def"),
        ("rw.impl.late", "unchecked", "not a plain def"),
        ("star.anything", "unchecked", "not a plain def"),
    ],
)
def test_what_the_source_says_or_cannot(folder: Path, name: str, kind: str, phrase: str) -> None:
    found = reward_source(name, folder)
    text = found.problem if kind == "problem" else found.unchecked
    assert text is not None and phrase in text, found
    assert (found.unchecked if kind == "problem" else found.problem) is None
