"""The batch planner: the rows a step should train, from the run's gradient noise and a cost.

**Rule** (McCandlish et al. 2018). The optimizer steps to a given progress follow

    S(B) = S_min (1 + B_noise / B),

B the rows of a step and B_noise the gradient noise scale in rows. A step of B rows costs t(B)
seconds on the device (a `StepCost`: a measured or shipped curve at one completion length, the
run's own fit, or a datasheet projection), so the device seconds to that progress are

    T(B) = S(B) t(B) = S_min (1 + B_noise / B) t(B),

and the planner takes the shape minimising T over its candidates: B prompts x K rollouts with
K an allowed group size and the rows B K within [min_rows, max_rows] (the prompts at most the
pool's). S_min, which no run knows, is the same for every B: it cancels from the choice and
from the ratio T(B*) / T(B_now) the plan reports. With a linear cost t(B) = a + b B,
T / S_min = a + b B_noise + a B_noise / B + b B is least at B* = sqrt(a B_noise / b)
(`tests/test_batch_planner.py` holds the search to it).

**Split.** With the meter's terms (core/noise_scale.py), a step of B prompts x K rollouts,
N = B K rows, has gradient variance per unit of signal

    V(B, K) = (tr Sigma_inter / B + tr Sigma_intra / N) / |G|^2
            = (K tr Sigma_inter + tr Sigma_intra) / (N |G|^2) = B_noise(K) / N,

B_noise(K) = (K tr Sigma_inter + tr Sigma_intra) / |G|^2 rows (`noise/b_simple_ema` at the
step's own K). At a row budget N the intra term is the same for every split and the inter term
grows with K: where tr Sigma_inter > 0 the smallest allowed K dividing N wins (more prompts),
where it is 0 the splits tie and the current K is kept. A group has at least 2 rollouts (GRPO's
advantage compares two). The allowed sizes default to the run's own K alone: the terms are
measured at that K, and GRPO's group-normalised advantages couple a group's rows (and a small
group of binary rewards is more often flat, with no gradient at all), so the variance at another
K is the model's, not a measurement; `group_sizes(K)` offers K's divisors for a caller that
accepts that.

**Learning rate.** A step of other rows has other noise. For Adam-like optimizers the
square-root rule (Malladi et al. 2022, the SDE scaling of adaptive methods) scales the learning
rate by sqrt(new rows / old rows); the plan gives that factor, capped at `max_lr_factor` either
way. It is a rule of thumb: on the one regime measured (fast-format-lr4, bench entries
`uniform-auto` and `uniform-auto-lr1`) the planned step did better with the rate kept, so the
advice names both.

Pure: it reads the meter's smoothed terms (`NoiseTerms`) and a cost, and returns a frozen
`BatchPlan`; nothing it is given changes, and bad input is refused by name in one line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from frontier_rft.core.noise_scale import NoiseEma
from frontier_rft.step_cost.curve import CURVES, StepCostCurve, StepShape
from frontier_rft.step_cost.own_curve import OwnFit

__all__ = [
    "COST_KINDS",
    "BatchPlan",
    "NoiseTerms",
    "StepCost",
    "curve_cost",
    "group_sizes",
    "linear_cost",
    "own_cost",
    "plan_batch",
    "split_rows",
    "sqrt_lr_factor",
]

COST_KINDS = {
    "own": "the run's own cost",
    "shipped": "a shipped curve",
    "measured": "a measured curve",
    "datasheet": "a datasheet projection",
}
"""Where a step's seconds come from, by kind: what `BatchPlan.describe` names."""
MAX_CANDIDATES = 100_000
"""The most row counts one plan weighs (each one call of the cost)."""
_EMA_KEYS = ("noise/grad_sq_ema", "noise/inter_ema", "noise/intra_ema")


def _fail(message: str) -> NoReturn:
    raise ValueError(f"batch planner: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class NoiseTerms:
    """The meter's smoothed terms, the evidence a plan reads; refused where they do not yet
    define a noise scale."""

    grad_sq: float
    """|G|^2 (`noise/grad_sq_ema`)."""
    inter: float
    """tr Sigma_inter, one prompt's (`noise/inter_ema`)."""
    intra: float
    """tr Sigma_intra, one rollout's (`noise/intra_ema`)."""
    steps: int
    """Metered steps the averages hold."""

    def __post_init__(self) -> None:
        if not _is_int(self.steps) or self.steps < 1:
            _fail(
                f"not enough metered steps ({self.steps!r}): the noise meter has no estimate "
                "yet; train with noise_every > 0 until it logs noise/grad_sq_ema"
            )
        for name in ("grad_sq", "inter", "intra"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                _fail(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                _fail(f"{name} must be finite, got {value!r}")
        if self.grad_sq <= 0:
            _fail(
                f"not enough metered steps: |G|^2 is {self.grad_sq:.3g} after {self.steps} "
                "metered step(s), and the noise scale is defined only where it is > 0; meter "
                "more steps"
            )
        for name in ("inter", "intra"):
            if getattr(self, name) < 0:
                _fail(
                    f"not enough metered steps: {name} (a variance) is "
                    f"{getattr(self, name):.3g} after {self.steps} metered step(s); meter more "
                    "steps"
                )

    @classmethod
    def from_ema(cls, ema: NoiseEma) -> NoiseTerms:
        """The terms a trainer's `NoiseEma` holds now (read, not changed)."""
        grad_sq, inter, intra = ema.smoothed()
        return cls(grad_sq, inter, intra, ema.count)

    @classmethod
    def from_metrics(cls, rows: Iterable[Mapping[str, Any]]) -> NoiseTerms:
        """The terms of the last metered step of a run's logged metric rows (metrics.jsonl)."""
        metered = [r for r in rows if all(isinstance(r.get(k), (int, float)) for k in _EMA_KEYS)]
        if not metered:
            return cls(math.nan, math.nan, math.nan, 0)
        grad_sq, inter, intra = (float(metered[-1][k]) for k in _EMA_KEYS)
        return cls(grad_sq, inter, intra, len(metered))

    def b_noise(self, rollouts: int) -> float:
        """B_noise in rows at group size `rollouts`: (K tr Sigma_inter + tr Sigma_intra) / |G|^2."""
        return (rollouts * self.inter + self.intra) / self.grad_sq

    def variance(self, prompts: int, rollouts: int) -> float:
        """A step's gradient variance over |G|^2: (inter / B + intra / (B K)) / |G|^2."""
        return (self.inter / prompts + self.intra / (prompts * rollouts)) / self.grad_sq


@dataclass(frozen=True)
class StepCost:
    """Seconds of one step of some rows, and where they come from."""

    seconds: Callable[[int], float]
    """Rows -> seconds of a step that generates and trains them."""
    kind: str
    """A key of COST_KINDS."""
    source: str
    """Which curve or fit, at what length (one line)."""

    def __post_init__(self) -> None:
        if self.kind not in COST_KINDS:
            _fail(f"a cost's kind must be one of {tuple(COST_KINDS)}, got {self.kind!r}")


def curve_cost(curve: StepCostCurve, length: int, kind: str | None = None) -> StepCost:
    """A step of r rows on `curve`: one call to generate r completions of `length` tokens, then
    the update over them. Kind 'own' for a run's fitted curve (named 'run'), 'shipped' for one
    of CURVES, else 'measured' (a step_cost.py file), unless given."""
    if not _is_int(length) or length < 1:
        _fail(f"a completion length must be an int >= 1, got {length!r}")
    if kind is None:
        kind = "own" if curve.name == "run" else "shipped" if curve.name in CURVES else "measured"

    def seconds(rows: int) -> float:
        return curve.step_seconds(StepShape((rows,), length, rows))

    where = curve.device_name or curve.device_class
    # the model named too: a shipped curve measured one model, which a user's may not be
    source = f"curve {curve.name} ({curve.model_name} on {where}) at {length} tokens"
    return StepCost(seconds, kind, source)


def own_cost(fit: OwnFit, length: int) -> StepCost:
    """A step of r rows by the run's own fit: a call to generate r rows for `length` decode
    steps, then an update over r rows `length` tokens wide."""
    if not _is_int(length) or length < 1:
        _fail(f"a completion length must be an int >= 1, got {length!r}")

    def seconds(rows: int) -> float:
        return fit.generate_seconds(rows, length) + fit.update_seconds(rows, length)

    return StepCost(seconds, "own", f"the run's own fit over {fit.steps} steps at {length} tokens")


def linear_cost(fixed_s: float, per_row_s: float, kind: str, source: str) -> StepCost:
    """t(r) = fixed_s + per_row_s r (e.g. a datasheet projection's fixed and per-row seconds)."""
    for name, value in (("fixed_s", fixed_s), ("per_row_s", per_row_s)):
        if not (math.isfinite(value) and value >= 0):
            _fail(f"{name} must be finite and >= 0, got {value!r}")
    return StepCost(lambda rows: fixed_s + per_row_s * rows, kind, source)


def group_sizes(rollouts: int, low: int = 2) -> tuple[int, ...]:
    """`rollouts` and its divisors of at least `low` (2: GRPO compares two rollouts), ascending."""
    if not _is_int(rollouts) or rollouts < 2 or not _is_int(low) or low < 2:
        _fail(f"a group size must be an int >= 2 (GRPO needs two rollouts), got {rollouts!r}")
    return tuple(k for k in range(low, rollouts + 1) if rollouts % k == 0)


def split_rows(
    rows: int,
    terms: NoiseTerms,
    sizes: Sequence[int],
    keep: int,
    max_prompts: int | None = None,
) -> tuple[int, int] | None:
    """(prompts, rollouts) of `rows` rows with the least variance `terms.variance`: K among
    `sizes` dividing `rows` (prompts at most `max_prompts`), a tie kept at `keep`, else the
    smaller K; None where no size fits."""
    fits = [k for k in sizes if rows % k == 0 and (max_prompts is None or rows // k <= max_prompts)]
    if not fits:
        return None
    k = min(fits, key=lambda k: (terms.variance(rows // k, k), k != keep, k))
    return rows // k, k


@dataclass(frozen=True)
class BatchPlan:
    """The rows a step should train, and what the choice read."""

    rows: int
    """Rows a step (prompts x rollouts)."""
    prompts: int
    """Prompts a step."""
    rollouts: int
    """Rollouts a prompt (the group size)."""
    current: tuple[int, int]
    """The step it was planned against: (prompts, rollouts)."""
    seconds_ratio: float
    """T(plan) / T(current): device seconds to the same progress (S_min cancels)."""
    steps_ratio: float
    """S(plan) / S(current): optimizer steps to the same progress."""
    b_noise: float
    """B_noise in rows at the plan's group size."""
    lr_factor: float
    """The learning-rate advice: sqrt(rows / current rows), capped (a rule of thumb)."""
    max_lr_factor: float
    """The cap on lr_factor, either way."""
    terms: NoiseTerms
    """The meter's evidence."""
    cost_kind: str
    """COST_KINDS key of the cost read."""
    cost_source: str
    """Which curve or fit, at what length."""

    @property
    def current_rows(self) -> int:
        return self.current[0] * self.current[1]

    def describe(self) -> str:
        """One line: the plan, the evidence it read and the learning-rate advice."""
        p0, k0 = self.current
        t = self.terms
        return (
            f"batch plan: {self.rows:,} rows a step ({self.prompts:,} prompts x {self.rollouts} "
            f"rollouts) against {self.current_rows:,} now ({p0:,} x {k0}): "
            f"{self.seconds_ratio:.3g}x the device seconds and {self.steps_ratio:.3g}x the steps "
            "to the same progress (McCandlish: S_min (1 + B_noise/B) t(B), S_min cancels); read "
            f"the noise meter's EMA over {t.steps} metered step(s) (|G|^2 {t.grad_sq:.3g}, "
            f"tr Sigma_inter {t.inter:.3g}, tr Sigma_intra {t.intra:.3g}: B_noise "
            f"{self.b_noise:,.0f} rows at K={self.rollouts}) and {COST_KINDS[self.cost_kind]}, "
            f"{self.cost_source}; learning rate: keep Adam's (on the one regime measured, "
            "fast-format-lr4, the planned step reached uniform's plateau sooner with it: "
            f"docs/results/device_cost.md) or scale it by {self.lr_factor:.3g}x, "
            f"sqrt({self.rows:,}/{self.current_rows:,}) capped at {self.max_lr_factor:g}x by the "
            "square-root rule of Malladi et al. 2022, a rule of thumb: check it"
        )


def sqrt_lr_factor(rows: float, base_rows: float, cap: float) -> float:
    """The square-root rule's factor on Adam's learning rate at `rows` a step against
    `base_rows`, capped at `cap` either way (module docstring, "Learning rate")."""
    return min(max(math.sqrt(rows / base_rows), 1.0 / cap), cap)


def _check_int(value: Any, name: str, low: int) -> None:
    if not _is_int(value) or value < low:
        _fail(f"{name} must be an int >= {low}, got {value!r}")


def _seconds(cost: StepCost, rows: int) -> float:
    """The cost's seconds at `rows`, refused where not finite and > 0."""
    value = float(cost.seconds(rows))
    if not (math.isfinite(value) and value > 0):
        _fail(f"the cost ({cost.source}) gave {value!r} seconds at {rows} rows; need > 0")
    return value


def plan_batch(
    terms: NoiseTerms,
    cost: StepCost,
    *,
    prompts: int,
    rollouts: int,
    min_rows: int,
    max_rows: int,
    sizes: Sequence[int] | None = None,
    max_prompts: int | None = None,
    max_lr_factor: float = 2.0,
) -> BatchPlan:
    """The shape minimising T(B) = (1 + B_noise/B) t(B) (module docstring) over B prompts x K
    rollouts, K in `sizes` (default: the current `rollouts` alone), B K in [min_rows,
    max_rows], B at most `max_prompts` (the pool); ties go to fewer rows. Against the current
    step of `prompts` x `rollouts`."""
    _check_int(prompts, "prompts", 1)
    if not _is_int(rollouts) or rollouts < 2:
        _fail(f"rollouts must be an int >= 2 (GRPO needs two rollouts a prompt), got {rollouts!r}")
    sizes = (rollouts,) if sizes is None else tuple(sizes)
    bad = [k for k in sizes if not _is_int(k) or k < 2]
    if not sizes or bad:
        _fail(f"group sizes must be ints >= 2 (GRPO needs two rollouts), got {sizes!r}")
    _check_int(min_rows, "min_rows", 1)
    _check_int(max_rows, "max_rows", 1)
    if min_rows > max_rows:
        _fail(f"min_rows {min_rows} is above max_rows {max_rows}")
    if max_prompts is not None:
        _check_int(max_prompts, "max_prompts", 1)
    number = isinstance(max_lr_factor, (int, float)) and not isinstance(max_lr_factor, bool)
    if not (number and math.isfinite(max_lr_factor) and max_lr_factor >= 1):
        _fail(f"max_lr_factor must be finite and >= 1, got {max_lr_factor!r}")
    step = min(sizes)
    weighed = max_rows // step - (min_rows - 1) // step
    if weighed > MAX_CANDIDATES:
        _fail(f"{weighed:,} row counts in [{min_rows}, {max_rows}], more than {MAX_CANDIDATES:,}")
    candidates = sorted({n for k in sizes for n in range(-(-min_rows // k) * k, max_rows + 1, k)})
    best: tuple[float, int, int, int] | None = None
    for n in candidates:
        split = split_rows(n, terms, sizes, rollouts, max_prompts)
        if split is None:
            continue
        total = (1.0 + terms.variance(*split)) * _seconds(cost, n)
        if best is None or total < best[0]:
            best = (total, n, *split)
    if best is None:
        _fail(
            f"no step of group size {sizes} fits in [{min_rows}, {max_rows}] rows"
            + (f" with at most {max_prompts} prompts" if max_prompts is not None else "")
        )
    total, rows, p, k = best
    now = (1.0 + terms.variance(prompts, rollouts)) * _seconds(cost, prompts * rollouts)
    steps_ratio = (1.0 + terms.variance(p, k)) / (1.0 + terms.variance(prompts, rollouts))
    lr = sqrt_lr_factor(rows, prompts * rollouts, max_lr_factor)
    return BatchPlan(
        rows=rows,
        prompts=p,
        rollouts=k,
        current=(prompts, rollouts),
        seconds_ratio=total / now,
        steps_ratio=steps_ratio,
        b_noise=terms.b_noise(k),
        lr_factor=lr,
        max_lr_factor=max_lr_factor,
        terms=terms,
        cost_kind=cost.kind,
        cost_source=cost.source,
    )
