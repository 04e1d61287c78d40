"""Selection overhead: select + update time per step and memory per task, for every selector.

For each pool size N, each selector runs a synthetic learner-free world (per-task pass
rates: a quarter always solved, a quarter never solved, half spread over (0, 1)) with
batch B tasks and R Bernoulli rollouts per task, and reports:

- time per step = flush (the update's work: the base class folds buffered feedback in at
  the next select; it is called explicitly here so it is timed as "update") + select(B) +
  update(Feedback of B*R rollouts); median and p90 over the timed steps, after warm-up;
- the floor, measured step by step alongside each selector (same N, same machine load):
  the per-step cost of the Selector base class alone (a no-op selector: validating,
  de-duplicating and grouping the B*R rollouts; unavoidable for every selector and
  independent of N) plus the unavoidable O(N) work: one Beta draw per task for Thompson
  methods, one read pass over an N-float64 array (`x.sum()`) otherwise. Target: step
  <= 2x floor; prioritized replay instead targets <= 2 ms per step (its heap work is
  O(B log N));
- memory: bytes per task retained by the selector (tracemalloc, traced growth from
  before its construction to after the memory pass, pool and pre-generated rewards
  excluded) and peak temporary bytes per task during a step. Target: <= 64 B/task.

Timing runs without tracemalloc (it slows allocation); memory is a separate pass.
Rewards are pre-drawn uniforms from their own generator (thresholded against the chosen
tasks' pass rates between timed sections), so reward generation is never timed.

    python benchmarks/overhead.py           # the README table, ~2 minutes on 2 cores
    python benchmarks/overhead.py --selectors bots,dots --sizes 1e6 --json out.json
    python benchmarks/overhead.py --given prompts --selectors bots,dots    # prompts only

With `--given prompts` the pool carries distinct prompt texts and nothing else, what most
users have: the BOTS family then runs its regression plug-in on text features derived
from the prompts. Deriving them is a one-off per pool (timed and reported separately, as
is the feature matrix the selectors of one pool share); steps are timed after it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import sys
import time
import traceback
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft import SELECTORS, Feedback, GroupBatch, Selector, TaskPool, make_selector
from frontier_rft.core.facts import Cost


def cost_of(name: str) -> Cost:
    """The per-step cost class a selector declares (`cls.cost`): it picks the floor the
    selector is held to (the kinds: `frontier_rft.core.facts.CostKind`). An O(N) kind
    ("thompson", "greedy", "linear") is held to <= 2x that floor; "absolute" to <= 2 ms per
    step; "sublinear" to flat scaling: step time at any N <= 2x its step time at the
    smallest N (its ratio to the floor is reported too). A wrapped case (WRAPPED) is held
    to the Beta-draw floor."""
    if name in WRAPPED:
        return Cost("thompson", "O(B n_max) + the selector's")
    cls = SELECTORS.get(name)
    return cls.cost if cls is not None else Cost("linear", "?")


WRAPPED = {"greso+alloc": "greso", "skip+alloc": "skip"}
"""Registered wrapper cases: a selector inside the rollout allocation (its default config),
timed as one `Allocation.sample` a step, the rollouts excluded (`allocation_case`)."""


RATIO_TARGET = 2.0
ABSOLUTE_TARGET_MS = 2.0
BYTES_TARGET = 64.0
NUM_CATEGORIES = 8
FEATURE_DIM = 14
FULL_SIZES = (10_000, 100_000, 1_000_000)


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...] = FULL_SIZES
    batch: int = 256
    rollouts: int = 16
    steps: int | None = None
    """Timed steps per selector and size; None = default_steps(N)."""
    warmup: int = 10
    mem_steps: int = 72
    """Steps of the memory pass (> the default dedupe window of 64, so the base class's
    bookkeeping has reached its steady state)."""
    budget_s: float = 60.0
    """Wall-clock budget per selector and size for each pass; a slower one is cut short."""
    selectors: tuple[str, ...] = field(default_factory=lambda: tuple(SELECTORS))
    seed: int = 0
    given: str = "all"
    """What the pool carries: 'all' (every kind of metadata) or 'prompts' (prompt text only)."""


def default_steps(n: int) -> int:
    """More timed steps where a step is cheap: 200 at 1e4, 50 at 1e5, 20 at 1e6."""
    return max(20, min(200, round(5e6 / n)))


# --------------------------------------------------------------------------- world
@dataclass
class World:
    """A learner-free world: a task pool with informative metadata and fixed pass rates."""

    pool: TaskPool
    pass_rates: NDArray[np.float64]
    uniforms: NDArray[np.float64]
    """(steps, batch * rollouts) pre-drawn uniforms; a rollout succeeds if u < p(task)."""
    rollouts: int

    def feedback(self, ids: NDArray[np.int64], step: int) -> Feedback:
        task_ids = np.repeat(ids, self.rollouts)
        u = self.uniforms[step % self.uniforms.shape[0], : task_ids.shape[0]]
        rewards = (u < self.pass_rates[task_ids]).astype(np.float64)
        return Feedback(task_ids=task_ids, rewards=rewards, step=step)


def make_world(n: int, settings: Settings, steps: int) -> World:
    rng = np.random.default_rng([settings.seed, n])
    kind = rng.random(n)
    p = np.where(kind < 0.25, 1.0, np.where(kind < 0.5, 0.0, rng.uniform(0.02, 0.98, n)))
    hardness = np.clip(1.0 - p + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    features = rng.standard_normal((n, FEATURE_DIM))
    features[:, 0] += 3.0 * p
    weak = np.clip(p - 0.2 + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    strong = np.clip(p + 0.1 + 0.05 * rng.standard_normal(n), 0.0, 1.0)
    keys = [f"task-{i}" for i in range(n)]
    if settings.given == "prompts":
        pool = TaskPool(num_tasks=n, prompts=world_prompts(rng, p), keys=keys)
    else:
        pool = TaskPool(
            num_tasks=n,
            categories=np.minimum((hardness * NUM_CATEGORIES).astype(np.int64), NUM_CATEGORIES - 1),
            difficulty=hardness,
            features=features,
            reference_pass_rates=np.stack([weak, strong], axis=1),
            prompts=[f"Problem {i}: reach the target using each number once." for i in range(n)],
            keys=keys,
        )
    reward_rng = np.random.default_rng([settings.seed, n, 1])
    uniforms = reward_rng.random((steps, settings.batch * settings.rollouts))
    return World(pool=pool, pass_rates=p, uniforms=uniforms, rollouts=settings.rollouts)


_SYLLABLES = ("ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "ze", "bo", "da", "fi")
_WORDS = tuple(a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("", "n", "s"))
"""A 432-word vocabulary: the prompts' text has to carry more than a handful of tokens."""


def world_prompts(rng: np.random.Generator, p: NDArray[np.float64]) -> list[str]:
    """Distinct prompts of 8 words whose vocabulary loosely follows the task's difficulty."""
    n = p.shape[0]
    # words near a difficulty-dependent centre of the vocabulary, plus numbers
    centre = (p * (len(_WORDS) - 1)).astype(np.int64)
    idx = np.clip(centre[:, None] + rng.integers(-40, 41, size=(n, 8)), 0, len(_WORDS) - 1)
    nums = rng.integers(1, 1000, size=(n, 3))
    return [
        f"Problem {i}: " + " ".join(_WORDS[k] for k in idx[i]) + " " + " ".join(map(str, nums[i]))
        for i in range(n)
    ]


def derive_features(world: World, s: Settings) -> dict[str, float]:
    """Prompts only: derive the shared text features once (seconds, bytes per task)."""
    if s.given != "prompts":
        return {}
    from frontier_rft.features.derive import task_features

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feats, _ = task_features(world.pool, "overhead")
    return {
        "featurize_s": time.perf_counter() - start,
        "features_bytes_per_task": feats.nbytes / world.pool.num_tasks,
        "features_dim": float(feats.shape[1]),
    }


# --------------------------------------------------------------------------- floors
class ContractOnlySelector(Selector):
    """A no-op selector: its step time is the Selector base class's own per-step cost."""

    name = "contract-only"

    def __init__(self, pool: TaskPool, config: Any = None, *, seed: int = 0):
        super().__init__(pool, config, seed=seed)
        self._cursor = 0

    def _select(self, n: int) -> NDArray[np.int64]:
        ids = (self._cursor + np.arange(n, dtype=np.int64)) % self.num_tasks
        self._cursor = int(ids[-1]) + 1
        return ids

    def _observe(self, batch: GroupBatch) -> None:
        pass

    def _state_dict(self) -> dict[str, Any]:
        return {"cursor": self._cursor}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self._cursor = int(state["cursor"])


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def floor_ops(world: World) -> dict[str, Callable[[], object]]:
    """The unavoidable O(N) work at this N, as callables to time."""
    n = world.pool.num_tasks
    rng = np.random.default_rng(7)
    # Beta parameters of a Beta(1, 1) prior after one group of R rollouts of each task:
    # both > 1, numpy's fast (gamma-ratio) path. The prior itself is also measured
    # (numpy switches to Johnk's slower algorithm when both parameters are <= 1).
    s = rng.binomial(world.rollouts, world.pass_rates).astype(np.float64)
    alpha, beta = 1.0 + s, 1.0 + world.rollouts - s
    ones = np.ones(n)
    x = rng.random(n)
    batch = world.uniforms.shape[1] // world.rollouts
    return {
        "thompson": lambda: rng.beta(alpha, beta),
        "thompson_prior": lambda: rng.beta(ones, ones),
        "linear": x.sum,
        # Greedy top-B toward p* over fresh per-task scores: one distance pass + a partition.
        "greedy": lambda: np.argpartition(np.abs(x - 0.5), batch - 1)[:batch],
    }


def measure_floors(ops: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Each floor in ms (median over `repeats`), for the summary table."""
    return {f"{kind}_ms": _median_ms(op, repeats) for kind, op in ops.items()}


# --------------------------------------------------------------------------- runs
class Skipped(Exception):
    """The selector cannot be benchmarked here (not implemented yet, batch > pool)."""


class TimedJudge:
    """Wraps a METIS judge and accumulates the seconds spent inside it."""

    def __init__(self, judge: Callable[[Sequence[str]], list[str]]):
        self.inner = judge
        self.seconds = 0.0

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        start = time.perf_counter()
        try:
            return self.inner(prompts)
        finally:
            self.seconds += time.perf_counter() - start

    def __getattr__(self, attr: str) -> Any:  # is_llm and the like come from the inner judge
        return getattr(self.inner, attr)


def build(name: str, pool: TaskPool, seed: int) -> Selector:
    if name == ContractOnlySelector.name:
        return ContractOnlySelector(pool, seed=seed)
    kwargs = SELECTORS[name].default_collaborators()  # no rollouts here: none to estimate
    if "judge" in kwargs:
        # A real judge (METIS's) is the policy LLM itself, whose cost is inference, not the
        # selector's; the packaged heuristic judge stands in, timed separately.
        kwargs["judge"] = TimedJudge(kwargs["judge"])
    try:
        return make_selector(name, pool, seed=seed, **kwargs)
    except NotImplementedError as exc:
        raise Skipped("not implemented yet") from exc


def _judge_seconds(sel: Selector) -> float:
    judge = getattr(sel, "judge", None)
    return judge.seconds if isinstance(judge, TimedJudge) else 0.0


def _contract_step(ref: Selector, world: World, batch: int, t: int) -> float:
    start = time.perf_counter()
    ref.flush()
    ids = ref.select(batch)
    mid = time.perf_counter()
    fb = world.feedback(ids, t)
    resume = time.perf_counter()
    ref.update(fb)
    return (mid - start) + (time.perf_counter() - resume)


def time_run(
    name: str,
    world: World,
    s: Settings,
    steps: int,
    floor_op: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """Timing pass (no tracemalloc): per-step select and update seconds after warm-up.

    With `floor_op`, every step also times a no-op selector's step and one `floor_op()`
    right after the selector's, so the floor is measured under the same machine load.
    """
    gc.collect()
    start = time.perf_counter()
    sel = build(name, world.pool, s.seed)
    build_s = time.perf_counter() - start
    ref = ContractOnlySelector(world.pool, seed=s.seed) if floor_op is not None else None
    select_t: list[float] = []
    update_t: list[float] = []
    judge_t: list[float] = []
    contract_t: list[float] = []
    pass_t: list[float] = []
    warmup, cut = s.warmup, False
    start = time.perf_counter()
    for t in range(s.warmup + steps):
        j0 = _judge_seconds(sel)
        t0 = time.perf_counter()
        sel.flush()
        t1 = time.perf_counter()
        ids = sel.select(s.batch)
        t2 = time.perf_counter()
        fb = world.feedback(ids, t)
        t3 = time.perf_counter()
        sel.update(fb)
        t4 = time.perf_counter()
        if ref is not None and floor_op is not None:
            contract = _contract_step(ref, world, s.batch, t)
            f0 = time.perf_counter()
            floor_op()
            f1 = time.perf_counter()
        if t >= warmup:
            select_t.append(t2 - t1)
            update_t.append((t1 - t0) + (t4 - t3))
            judge_t.append(_judge_seconds(sel) - j0)
            if ref is not None:
                contract_t.append(contract)
                pass_t.append(f1 - f0)
        if time.perf_counter() - start > s.budget_s:
            if t < warmup:  # over budget while warming up: start timing now
                warmup, cut = t + 1, True
            elif len(select_t) >= 3:
                cut = True
                break
    sel_ms, upd_ms = 1e3 * np.array(select_t), 1e3 * np.array(update_t)
    step_ms, judge_ms = sel_ms + upd_ms, 1e3 * np.array(judge_t)
    paired = {}
    if ref is not None:
        paired = {
            "floor_contract_ms": 1e3 * float(np.median(contract_t)),
            "floor_pass_ms": 1e3 * float(np.median(pass_t)),
        }
    return {
        **paired,
        "build_s": build_s,
        "steps_timed": len(select_t),
        "warmup": warmup,
        "cut_short": cut,
        "step_ms_median": float(np.median(step_ms)),
        "step_ms_p90": float(np.percentile(step_ms, 90)),
        "step_ms_min": float(np.min(step_ms)),  # least disturbed by other load
        "select_ms_median": float(np.median(sel_ms)),
        "update_ms_median": float(np.median(upd_ms)),
        "judge_ms_median": float(np.median(judge_ms)),
        # Step time without a collaborator judge's (the step time for every other selector).
        "selector_ms_median": float(np.median(step_ms - judge_ms)),
    }


def allocation_case(
    name: str, world: World, s: Settings, steps: int, floor_op: Callable[[], object]
) -> dict[str, Any]:
    """A WRAPPED case: select + allocate + update per step (one `Allocation.sample`, its
    rollouts' time taken out), with the floor measured alongside, then retained bytes per
    task under tracemalloc (the selector's and the allocation's posteriors)."""
    from frontier_rft.wrappers.allocation import Allocation

    def build_case() -> Allocation:
        """The wrapper with every prompt tried once (one group of R rollouts each): the
        steady state, where the greedy runs for every prompt of a step (an untried prompt
        just gets its default n)."""
        alloc = Allocation(build(WRAPPED[name], world.pool, s.seed))
        n = world.pool.num_tasks
        sums = np.round(world.pass_rates * s.rollouts)
        alloc.posteriors.observe(n, np.arange(n), sums, np.full(n, float(s.rollouts)))
        return alloc

    rollout_s = [0.0]

    def rollout(ids: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.float64]:
        start = time.perf_counter()
        t = rollout.step % world.uniforms.shape[0]  # type: ignore[attr-defined]
        u = world.uniforms[t]
        need = int(counts.sum())
        reps = -(-need // u.shape[0])  # a budget above B x R reuses the step's uniforms
        out = (np.tile(u, reps)[:need] < np.repeat(world.pass_rates[ids], counts)).astype(float)
        rollout_s[0] += time.perf_counter() - start
        return out

    gc.collect()
    alloc = build_case()
    ref = ContractOnlySelector(world.pool, seed=s.seed)
    step_t, contract_t, pass_t = [], [], []
    start = time.perf_counter()
    for t in range(s.warmup + steps):
        rollout.step = t  # type: ignore[attr-defined]
        rollout_s[0] = 0.0
        t0 = time.perf_counter()
        alloc.sample(t, s.batch, s.rollouts, rollout)
        spent = time.perf_counter() - t0 - rollout_s[0]
        contract = _contract_step(ref, world, s.batch, t)
        f0 = time.perf_counter()
        floor_op()
        f1 = time.perf_counter()
        if t >= s.warmup:
            step_t.append(spent)
            contract_t.append(contract)
            pass_t.append(f1 - f0)
        if time.perf_counter() - start > s.budget_s and len(step_t) >= 3:
            break
    ms = 1e3 * np.array(step_t)
    n = world.pool.num_tasks
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        mem = build_case()
        for t in range(min(s.mem_steps, 8)):
            rollout.step = t  # type: ignore[attr-defined]
            mem.sample(t, s.batch, s.rollouts, rollout)
        retained = tracemalloc.get_traced_memory()[0] - base
        peak = tracemalloc.get_traced_memory()[1] - base
        del mem
    finally:
        tracemalloc.stop()
    return {
        "floor_contract_ms": 1e3 * float(np.median(contract_t)),
        "floor_pass_ms": 1e3 * float(np.median(pass_t)),
        "build_s": 0.0,
        "steps_timed": len(step_t),
        "warmup": s.warmup,
        "cut_short": len(step_t) < steps,
        "step_ms_median": float(np.median(ms)),
        "step_ms_p90": float(np.percentile(ms, 90)),
        "step_ms_min": float(np.min(ms)),
        "select_ms_median": float("nan"),
        "update_ms_median": float("nan"),
        "judge_ms_median": 0.0,
        "selector_ms_median": float(np.median(ms)),
        "mem_steps": s.mem_steps,
        "bytes_per_task_built": float("nan"),
        "bytes_per_task": retained / n,
        "peak_temp_bytes_per_task": max(peak - retained, 0) / n,
    }


def memory_run(name: str, world: World, s: Settings) -> dict[str, Any]:
    """Memory pass under tracemalloc: retained bytes and peak temporary bytes per task."""
    n = world.pool.num_tasks
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        sel = build(name, world.pool, s.seed)
        built = tracemalloc.get_traced_memory()[0] - base
        peak, steps, start = 0, 0, time.perf_counter()
        for t in range(s.mem_steps):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            sel.flush()
            ids = sel.select(s.batch)
            peak = max(peak, tracemalloc.get_traced_memory()[1] - before)
            fb = world.feedback(ids, t)
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            sel.update(fb)
            peak = max(peak, tracemalloc.get_traced_memory()[1] - before)
            steps = t + 1
            if time.perf_counter() - start > s.budget_s and steps >= 3:
                break
        sel.flush()
        del ids, fb
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - base
        del sel
    finally:
        tracemalloc.stop()
    return {
        "mem_steps": steps,
        "bytes_per_task_built": built / n,
        "bytes_per_task": retained / n,
        "peak_temp_bytes_per_task": peak / n,
    }


def verdict(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """Attach the floor, the ratios and the pass/fail flags to a result row.

    `row` holds the paired floor measured alongside the selector (`floor_contract_ms`,
    `floor_pass_ms`) and its step time without any judge (`selector_ms_median`).
    """
    kind = cost_of(name).kind
    step = row.get("selector_ms_median", row["step_ms_median"])  # a judge's time excluded
    out: dict[str, Any] = {"floor_kind": kind}
    if kind == "absolute":
        out.update(floor_ms=None, ratio=None, ratio_pass_only=None)
        out["time_ok"] = step <= ABSOLUTE_TARGET_MS
    else:
        floor = row["floor_contract_ms"] + row["floor_pass_ms"]
        out.update(floor_ms=floor, ratio=step / floor, ratio_pass_only=step / row["floor_pass_ms"])
        # Sublinear methods are judged on flat scaling once every size has run (see run()).
        out["time_ok"] = None if kind == "sublinear" else step <= RATIO_TARGET * floor
    out["memory_ok"] = row["bytes_per_task"] <= BYTES_TARGET
    return out


def _judge_sublinear_scaling(results: list[dict[str, Any]]) -> None:
    """Sublinear methods pass when their step time at every N is <= 2x that at the smallest N."""
    smallest: dict[str, dict[str, Any]] = {}
    for r in results:
        if r["floor_kind"] == "sublinear" and (
            r["selector"] not in smallest or r["n"] < smallest[r["selector"]]["n"]
        ):
            smallest[r["selector"]] = r
    for r in results:
        if r["floor_kind"] != "sublinear":
            continue
        base = smallest[r["selector"]]
        key = "selector_ms_median" if "selector_ms_median" in r else "step_ms_median"
        r["scaling"] = r[key] / base[key]
        r["time_ok"] = r["scaling"] <= RATIO_TARGET


def run(s: Settings, log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Run the whole benchmark; returns a JSON-ready dict (see `render_markdown`)."""
    results: list[dict[str, Any]] = []
    floors_by_n: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}  # one line per selector (first problem met)
    for n in s.sizes:
        steps = s.steps if s.steps is not None else default_steps(n)
        log(f"N={n:,}: building the task pool")
        world = make_world(n, s, max(s.warmup + steps, s.mem_steps))
        derived = derive_features(world, s)
        if derived:
            log(
                f"N={n:,}: text features {derived['featurize_s']:.3g} s, "
                f"{derived['features_bytes_per_task']:.3g} B/task (shared)"
            )
        ops = floor_ops(world)
        floors = measure_floors(ops, repeats=max(10, min(steps, 50)))
        floors.update(derived)
        contract = time_run(ContractOnlySelector.name, world, s, steps)
        contract.update(memory_run(ContractOnlySelector.name, world, s))
        floors.update(
            contract_ms=contract["step_ms_median"],
            contract_bytes_per_task=contract["bytes_per_task"],
        )
        floors_by_n[str(n)] = floors
        log(
            f"N={n:,}: floors contract {floors['contract_ms']:.3g} ms, Beta draw "
            f"{floors['thompson_ms']:.3g} ms, pass {floors['linear_ms']:.3g} ms, "
            f"greedy {floors['greedy_ms']:.3g} ms"
        )
        for name in s.selectors:
            if notes.get(name, "").startswith("skipped: not implemented"):
                continue
            if s.batch > n:
                notes.setdefault(name, f"skipped at N={n}: batch {s.batch} > pool")
                continue
            try:
                row: dict[str, Any] = {"selector": name, "n": n}
                kind = cost_of(name).kind
                op = ops[kind if kind in ("thompson", "greedy") else "linear"]
                if name in WRAPPED:
                    row.update(allocation_case(name, world, s, steps, op))
                else:
                    row.update(time_run(name, world, s, steps, floor_op=op))
                    row.update(memory_run(name, world, s))
            except Skipped as exc:
                notes.setdefault(name, f"skipped: {exc}")
                log(f"N={n:,} {name}: skipped ({exc})")
                continue
            except Exception as exc:  # report and carry on with the other selectors
                where = traceback.extract_tb(exc.__traceback__)[-1]
                notes.setdefault(
                    name,
                    f"ERROR at N={n}: {type(exc).__name__}: {exc!s:.200} "
                    f"({os.path.basename(where.filename)}:{where.lineno})",
                )
                log(f"N={n:,} {name}: ERROR {type(exc).__name__}: {exc}")
                continue
            row["cost"] = cost_of(name).big_o
            row.update(verdict(name, row))
            results.append(row)
            log(
                f"N={n:,} {name}: {row['step_ms_median']:.3g} ms/step "
                f"({row['steps_timed']} steps), {row['bytes_per_task']:.3g} B/task"
            )
        del world
        gc.collect()
    _judge_sublinear_scaling(results)
    return {
        "settings": asdict(s),
        "machine": machine_info(),
        "floors": floors_by_n,
        "results": results,
        "notes": notes,
    }


# --------------------------------------------------------------------------- output
def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            models = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        cpu = models[0] if models else cpu
    except OSError:
        pass
    affinity = getattr(os, "sched_getaffinity", None)  # what `nproc` reports; Linux only
    return {
        "cpu": cpu,
        "nproc": len(affinity(0)) if affinity else os.cpu_count(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "thread_env": {
            k: os.environ[k]
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            if k in os.environ
        },
    }


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x >= 0.01 else f"{x:.2g}"


def _n(n: int) -> str:
    exp = int(np.log10(n))
    return f"1e{exp}" if 10**exp == n else f"{n:,}"


GIVEN_TEXT = {
    "all": "Pool given every kind of metadata (14-dim features, reference pass rates, "
    "categories, difficulty, prompts).",
    "prompts": "Pool given **prompt text only** (the BOTS family's regression plug-in on "
    "text features derived from it).",
}


def render_markdown(res: dict[str, Any], command: str) -> str:
    s, m = res["settings"], res["machine"]
    steps = ", ".join(
        f"{s['steps'] if s['steps'] is not None else default_steps(n)} at N={_n(n)}"
        for n in s["sizes"]
    )
    lines = [
        "## Selector overhead: select + update per step, memory per task",
        "",
        f"Command: `{command}`  ",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs, {m['platform']}, Python {m['python']}, "
        f"numpy {m['numpy']}"
        + "".join(f", {k}={v}" for k, v in m.get("thread_env", {}).items())
        + "  ",
        f"Batch {s['batch']} tasks x {s['rollouts']} rollouts per step; timed steps: {steps}, "
        f"after {s['warmup']} warm-up steps; memory after {s['mem_steps']} steps. "
        + GIVEN_TEXT[s.get("given", "all")],
        "",
        "Floors measured in the same run (median ms per step; each row below re-measures "
        "its floor step by step alongside the selector, under the same machine load):",
        "",
        "| N | contract (base class) | Beta draw per task | Beta draw at Beta(1,1) "
        "| read pass over N floats | distance pass + argpartition | contract bytes/task |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n_str, f in res["floors"].items():
        lines.append(
            f"| {_n(int(n_str))} | {_ms(f['contract_ms'])} | {_ms(f['thompson_ms'])} "
            f"| {_ms(f['thompson_prior_ms'])} | {_ms(f['linear_ms'])} | {_ms(f['greedy_ms'])} "
            f"| {f['contract_bytes_per_task']:.3g} |"
        )
    if any("featurize_s" in f for f in res["floors"].values()):
        lines += [
            "",
            "Text features derived from the prompts, once per pool and shared by its selectors "
            "(not in the step times or bytes/task below):",
            "",
            "| N | seconds | prompts per second | dimensions | bytes/task |",
            "|---:|---:|---:|---:|---:|",
        ]
        for n_str, f in res["floors"].items():
            lines.append(
                f"| {_n(int(n_str))} | {f['featurize_s']:.3g} "
                f"| {int(n_str) / f['featurize_s']:,.0f} | {f['features_dim']:.0f} "
                f"| {f['features_bytes_per_task']:.3g} |"
            )
    lines += [
        "",
        "| selector | cost | N | step ms (median) | p90 | select | update | floor ms "
        "| x floor | bytes/task | peak temp bytes/task | target met |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    order = {name: i for i, name in enumerate(s["selectors"])}
    for r in sorted(res["results"], key=lambda r: (order.get(r["selector"], 99), r["n"])):
        label = r["selector"]
        if r.get("judge_ms_median"):
            label += f" (incl. {_ms(r['judge_ms_median'])} ms non-LLM judge)"
        if r["floor_kind"] == "absolute":
            floor, ratio = f"{ABSOLUTE_TARGET_MS:g} (target)", "-"
        else:
            floor = f"{_ms(r['floor_ms'])} ({r['floor_kind']})"
            ratio = f"{r['ratio']:.3g}"
            if r["floor_kind"] == "sublinear":
                ratio += f" (scaling {r['scaling']:.2f})"
        problems = []
        if not r["time_ok"]:
            problems.append("time")
        if not r["memory_ok"]:
            problems.append("memory")
        ok = "yes" if not problems else "NO: " + ", ".join(problems)
        if r["cut_short"] or r["mem_steps"] < s["mem_steps"]:
            ok += f" (budget: {r['steps_timed']} timed, {r['mem_steps']} memory steps)"
        lines.append(
            f"| {label} | {r['cost']} | {_n(r['n'])} | {_ms(r['step_ms_median'])} "
            f"| {_ms(r['step_ms_p90'])} | {_ms(r['select_ms_median'])} "
            f"| {_ms(r['update_ms_median'])} | {floor} | {ratio} | {r['bytes_per_task']:.3g} "
            f"| {r['peak_temp_bytes_per_task']:.3g} | {ok} |"
        )
    lines += [
        "",
        "- *step* = update (flush of the buffered feedback, where each method's update rule "
        "runs, plus `update()`'s validation and buffering) + `select()`; *cost* is the "
        "method's expected per-step complexity.",
        "- *floor* = contract + the O(N) work no method of its kind can avoid: *thompson* "
        "= one `rng.beta` draw per task (parameters of a Beta(1,1) prior after one group of "
        "rollouts); *greedy* = the distance pass and `np.argpartition` any greedy top-B "
        "over N fresh scores needs (dots); *linear* = one read pass over N float64 "
        "(`x.sum()`). *contract* is the "
        "step time of a no-op selector (the base class validating, de-duplicating and "
        f"grouping {s['batch'] * s['rollouts']:,} rollouts), the same for every selector. "
        f"Target: O(N) methods step <= {RATIO_TARGET:g}x floor; sublinear methods (O(B), "
        "O(mB), O(CM)) do no per-task work, so their target is flat scaling: step time at "
        f"every N <= {RATIO_TARGET:g}x their step time at the smallest N (*scaling*); "
        "prioritized replay: "
        f"<= {ABSOLUTE_TARGET_MS:g} ms per step; memory <= {BYTES_TARGET:g} bytes/task.",
        "- *bytes/task*: memory the selector retains (tracemalloc growth from before its "
        "construction, after the memory pass; the TaskPool's own metadata is the user's data "
        "and is not counted). *peak temp*: largest transient allocation during one "
        "select or update.",
    ]
    if any(r.get("judge_ms_median") for r in res["results"]):
        lines.append(
            "- metis runs with the packaged heuristic (non-LLM) judge, timed separately: its "
            "step time includes the judge's, *x floor* and the target exclude it. In "
            "training the judge is the policy LLM, whose cost is inference, not selection "
            "overhead. Its memory (bytes/task) includes the heuristic judge's."
        )
    heavy = [
        f"{f['contract_bytes_per_task']:.3g} B/task at N={_n(int(n))}"
        for n, f in res["floors"].items()
        if f["contract_bytes_per_task"] > BYTES_TARGET
    ]
    if heavy:
        lines.append(
            "- The Selector base class alone (the no-op selector) retains "
            + ", ".join(heavy)
            + ", so no selector can meet the memory target there; this is a fixed cost, "
            "independent of N, not a per-task one."
        )
    for name, note in res["notes"].items():
        lines.append(f"- {name}: {note}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI
def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(float(t)) for t in text.split(",") if t.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--sizes must be numbers like 1e4,1e5: {exc}") from exc
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("--sizes must be positive numbers like 1e4,1e5,1e6")
    return sizes


def _names(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [n for n in names if n not in SELECTORS and n not in WRAPPED]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown selector(s) {unknown}; known: {', '.join(SELECTORS)}"
        )
    return names


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=_sizes, default=FULL_SIZES, help="pool sizes N (1e4,1e5,1e6)")
    ap.add_argument("--batch", type=int, default=256, help="tasks selected per step")
    ap.add_argument("--rollouts", type=int, default=16, help="rollouts per selected task")
    ap.add_argument(
        "--steps", type=int, default=None, help="timed steps per run (default 200/50/20 at 1e4/5/6)"
    )
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps before timing")
    ap.add_argument("--mem-steps", type=int, default=72, help="steps of the memory pass")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per selector, size, pass")
    ap.add_argument(
        "--selectors",
        type=_names,
        default=tuple(SELECTORS),
        help="comma-separated names (default: all)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--given",
        choices=("all", "prompts"),
        default="all",
        help="what the pool carries: every kind of metadata, or prompt text only",
    )
    ap.add_argument("--json", metavar="PATH", help="also write machine-readable results here")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="tiny settings for a smoke test (N=1e3, batch 32, 4 rollouts, 3 steps)",
    )
    a = ap.parse_args(argv)
    for flag in ("batch", "rollouts", "warmup", "mem_steps"):
        if getattr(a, flag) < (0 if flag == "warmup" else 1):
            ap.error(f"--{flag.replace('_', '-')} must be positive")
    if a.steps is not None and a.steps < 1:
        ap.error("--steps must be positive")
    s = Settings(
        sizes=a.sizes,
        batch=a.batch,
        rollouts=a.rollouts,
        steps=a.steps,
        warmup=a.warmup,
        mem_steps=a.mem_steps,
        budget_s=a.budget,
        selectors=a.selectors,
        seed=a.seed,
        given=a.given,
    )
    if a.quick:
        s = replace(s, sizes=(1000,), batch=32, rollouts=4, steps=3, warmup=2, mem_steps=4)
    return s, a


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    settings, ns = parse_args(args)
    script = os.path.relpath(__file__) if not os.path.isabs(sys.argv[0]) else __file__
    command = " ".join(["python", script, *map(shlex.quote, args)])
    res = run(settings, log=lambda msg: print(f"[overhead] {msg}", file=sys.stderr, flush=True))
    res["command"] = command
    sys.stdout.write(render_markdown(res, command))
    if ns.json:
        with open(ns.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return 1 if any(v.startswith("ERROR") for v in res["notes"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
