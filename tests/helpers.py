"""Shared test helpers (imported by name: `from helpers import ...`): a pool carrying every
kind of metadata, and a synthetic learner-free world.

The synthetic world has three task types of equal size: type 0 is always solved (p=1),
type 1 never (p=0), type 2 mixed (p=0.5). Every metadata field is informative about the
type, so every adaptive selector has something to learn from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft import SELECTORS, Feedback, Selector, TaskPool, make_selector

TYPE_PASS_RATE = np.array([1.0, 0.0, 0.5])
REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def benchmark_script(name: str) -> Iterator[Any]:
    """benchmarks/NAME.py imported as a module, its folder on sys.path while in use (the
    scripts import one another by name)."""
    import importlib
    import sys

    folder = str(REPO / "benchmarks")
    sys.path.insert(0, folder)
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(folder)


@contextlib.contextmanager
def registered(cls: type[Selector]) -> Iterator[type[Selector]]:
    """`cls` registered (frontier_rft.selectors.register) for the duration, then removed."""
    from frontier_rft.selectors import register

    register(cls)
    try:
        yield cls
    finally:
        SELECTORS.pop(cls.name, None)


def world_pool(num_tasks: int = 90, seed: int = 0) -> TaskPool:
    """Tasks of three types (solved / unsolvable / mixed) with informative metadata."""
    rng = np.random.default_rng(seed)
    types = np.arange(num_tasks) % 3
    features = np.eye(3)[types] + 0.05 * rng.standard_normal((num_tasks, 3))
    difficulty = np.array([0.1, 0.9, 0.5])[types] + 0.01 * rng.standard_normal(num_tasks)
    weak_strong = np.array([[1.0, 1.0], [0.0, 0.0], [0.3, 0.7]])[types]
    prompts = [f"type{t} problem number {i}" for i, t in enumerate(types)]
    return TaskPool(
        num_tasks=num_tasks,
        categories=types,
        difficulty=difficulty,
        features=features,
        reference_pass_rates=weak_strong,
        prompts=prompts,
        keys=[f"task-{i}" for i in range(num_tasks)],
    )


def world_pass_rates(pool: TaskPool) -> np.ndarray:
    assert pool.categories is not None
    return TYPE_PASS_RATE[np.asarray(pool.categories).reshape(pool.num_tasks, -1)[:, 0]]


def world_rewards(
    ids: np.ndarray, pass_rates: np.ndarray, rng: np.random.Generator, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Flat (task_ids, rewards) for n Bernoulli rollouts of each selected task."""
    rep = np.repeat(ids, n)
    return rep, (rng.random(rep.shape[0]) < pass_rates[rep]).astype(np.float64)


def selector_kwargs(name: str, pool: TaskPool) -> dict[str, Any]:
    """Collaborators a selector needs in tests: its class's defaults (METIS: the non-LLM judge)."""
    return SELECTORS[name].default_collaborators()


def build(name: str, pool: TaskPool, seed: int = 0, **overrides: Any) -> Selector:
    return make_selector(name, pool, seed=seed, **selector_kwargs(name, pool), **overrides)


def drive(
    sel: Selector,
    steps: int,
    batch: int = 6,
    n: int = 4,
    seed: int = 123,
    start_step: int = 0,
    pass_rates: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Run select -> rollouts -> update for `steps` steps; returns the selected ids."""
    rng = np.random.default_rng(seed + start_step)
    rates = world_pass_rates(sel.pool) if pass_rates is None else pass_rates
    picked = []
    for t in range(start_step, start_step + steps):
        ids = sel.select(batch)
        picked.append(ids)
        task_ids, rewards = world_rewards(ids, rates, rng, n)
        sel.update(Feedback(task_ids=task_ids, rewards=rewards, step=t))
    return picked


def mixed_share(name: str, seed: int, steps: int = 40, batch: int = 6, burn_in: int = 5) -> float:
    """Share of a selector's picks (after burn-in) that are world_pool's mixed-type tasks."""
    pool = world_pool()
    types = np.asarray(pool.categories)
    picked = drive(build(name, pool, seed=seed), steps=steps, batch=batch, seed=seed)
    return float(np.mean([np.mean(types[ids] == 2) for ids in picked[burn_in:]]))


def assert_state_equal(a: Any, b: Any, path: str = "state") -> None:
    """Exact (bitwise for floats, NaN-aware) equality of two state trees."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        assert a_arr.dtype == b_arr.dtype, f"{path}: dtype {a_arr.dtype} != {b_arr.dtype}"
        assert a_arr.shape == b_arr.shape, f"{path}: shape {a_arr.shape} != {b_arr.shape}"
        assert np.array_equal(a_arr, b_arr, equal_nan=a_arr.dtype.kind in "fc"), path
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {set(a) ^ set(b)}"
        for k in a:
            assert_state_equal(a[k], b[k], f"{path}/{k}")
        return
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{path}: length"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_state_equal(x, y, f"{path}/{i}")
        return
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return
    assert a == b, f"{path}: {a!r} != {b!r}"


Builder = Callable[..., Selector]


SKIP_WORLDS = ("all solved", "none solved", "fractional", "groups of one")
"""Pools a skip selector must neither starve nor get stuck on (tests of greso and skip)."""


def picks_in_skip_world(name: str, world: str, steps: int = 200) -> np.ndarray:
    """Times each of 30 prompts was picked in `steps` steps of 6 in one of SKIP_WORLDS;
    every batch is checked to be full and distinct."""
    import warnings

    from frontier_rft.features.derive import EvidenceWarning

    n_tasks, batch = 30, 6
    pool = TaskPool(num_tasks=n_tasks, prompts=[f"problem {i}" for i in range(n_tasks)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector(name, pool, seed=0)
    rng = np.random.default_rng(0)
    counts = np.zeros(n_tasks, int)
    for step in range(steps):
        ids = sel.select(batch)
        assert ids.size == batch and np.unique(ids).size == batch
        counts[ids] += 1
        rep = np.repeat(ids, 1 if world == "groups of one" else 4)
        rewards = {
            "all solved": np.ones(rep.size),
            "none solved": np.zeros(rep.size),
            "fractional": np.round(rng.random(rep.size) * 4) / 4,
            "groups of one": (rng.random(rep.size) < 0.5).astype(float),
        }[world]
        sel.update(Feedback(task_ids=rep, rewards=rewards, step=step))
    return counts


def check_config(capsys: Any, *argv: str) -> tuple[int, str]:
    """`frontier check-config ARGV`: its exit code and all it printed, which never holds a
    traceback (every mistake ends in a problem line, a note or a one-line error)."""
    from frontier_rft.cli.main import main

    code = main(["check-config", *argv])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text, text
    return code, text


def problems(text: str) -> list[str]:
    """The problem lines of a check-config report, without their "  - " bullet."""
    return [line[4:] for line in text.splitlines() if line.startswith("  - ")]


def check_config_apart(
    kind: str, config: Path, rc: int, heavy: tuple[str, ...] = ("torch", "trl")
) -> str:
    """`frontier check-config KIND CONFIG` in a fresh interpreter, asserted to exit `rc` having
    imported none of `heavy` (the check runs without the training stack): all it printed."""
    import subprocess
    import sys

    code = (
        "import sys; from frontier_rft.cli.main import main; "
        f"rc = main(['check-config', {kind!r}, {str(config)!r}]); "
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({list(heavy)!r})); "
        "print('HEAVY', heavy, rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert f"HEAVY [] {rc}" in done.stdout, done.stdout + done.stderr
    return done.stdout


def trl_step_problems(values: dict[str, Any]) -> list[str]:
    """What the TRL run's resolution (resolve.py) refuses a YAML file's step for, as `frontier
    check-config trl` asks it; none for a value FrontierConfig refuses (it names it)."""
    from frontier_rft.integrations.trl.config import FrontierConfig
    from frontier_rft.integrations.trl.resolve import TrlRun, resolve_step

    ours = {k: v for k, v in values.items() if k in FrontierConfig.__dataclass_fields__}
    try:
        config = FrontierConfig(**ours)
    except ValueError:
        return []
    run = TrlRun(settings=values, trainer=values.get("trainer", "grpo"))
    return list(resolve_step(config, run).problems)
