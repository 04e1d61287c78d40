"""The gradient noise scale of a GRPO step, read from inner products of sub-batch gradients
(McCandlish et al. 2018, App. A), split into its inter- and intra-prompt terms.

**Model.** A step trains N rows of B prompts (row r a completion of prompt p(r)); its loss is
a weighted sum of per-row terms, so its gradient is `sum_r c_r g_r` with known coefficients
c_r (the loss's weights: token counts, group weights, normaliser) and per-row gradients

    g_r = G + a_p(r) + e_r,

a_p independent across prompts (mean 0, covariance Sigma_inter: how prompts differ), e_r
independent across rows (mean 0, covariance Sigma_intra: how one prompt's rollouts differ),
G the gradient of the expected loss. The variance of a step of B prompts x K rollouts is then
tr(Sigma_inter) / B + tr(Sigma_intra) / (B K), the form of the 2026 critical-batch-size study
for GRPO.

**Moments.** For two linear forms U = sum_r u_r g_r and V = sum_r v_r g_r of the rows,

    E[U . V] = (sum u)(sum v) |G|^2 + sum_p U_p V_p tr(Sigma_inter) + sum_r u_r v_r tr(Sigma_intra),

U_p = the sum of u_r over prompt p's rows (`moment_row`). Observed inner products with known
u, v are a linear system in theta = (|G|^2, tr Sigma_inter, tr Sigma_intra); its least-squares
solution (`solve`) is linear in the observations, so its expectation is theta exactly, for any
split, ragged groups and unequal weights included. Nothing is assumed about the rows but the
model: conditioning on the step's lengths and weights, which fix c.

**Halves** (`halves`, the reference trainer's design). The prompts split into two halves A, B
(alternate groups), and A's rows into two rollout halves R1, R2 (alternate rows of each of its
groups); G_S = sum_{r in S} c_r g_r / sum_{r in S} c_r is the mean gradient over S. Three
observations fix theta:

- G_A . G_B: independent halves, so E = |G|^2;
- |G_A - G_B|^2: E = tr(Sigma_inter) (sum_p beta_Ap^2 + beta_Bp^2) + tr(Sigma_intra)(...);
- |G_R1 - G_R2|^2: every prompt of A in both, so the inter term nearly cancels (exactly, with
  even groups and equal weights) and the intra term is left.

A trainer computes two quarter-passes, R1 and R2, and takes A = R1 + R2 and B = the step's own
gradient minus A: half a step's rows of extra passes. With B prompts of K rollouts, equal
weights and B, K even these are McCandlish's two-batch formulas: halving the prompts (B_s = B/2
of B_b = B at fixed K), |G|^2 = (B_b |G_b|^2 - B_s |G_s|^2)/(B_b - B_s) = G_A . G_B (|G_s|^2
the halves' mean square, G_b their mean) and tr(Sigma_inter) + tr(Sigma_intra)/K =
(|G_s|^2 - |G_b|^2)/(1/B_s - 1/B_b) = B |G_A - G_B|^2 / 4; halving the rollouts of A's B/2
prompts, tr(Sigma_intra) = (B/2) K |G_R1 - G_R2|^2 / 4.

**Accumulated micro-batches** (`accumulated_estimate`, TRL's design). Under gradient
accumulation a hook on each parameter sees micro-batch i's gradient m_i before it is added to
the sum of the earlier ones: |m_i|^2 and m_i . (m_1 + ... + m_{i-1}) are inner products of
linear forms of the rows, with the micro-batch's loss coefficients, so the same solve holds,
for micro-batches of shuffled rows (a prompt's rollouts spread over several) included; the
terms are told apart by the micro-batches that hold several rollouts of a prompt and by the
prompts they share, and a step whose micro-batches cannot tell them apart is not solved.

**Noise scale.** The step's per-row noise is trace = N (P tr Sigma_inter + Q tr Sigma_intra),
N rows, P = sum_p (C_p / C)^2 and Q = sum_r (c_r / C)^2 its own design (K tr Sigma_inter +
tr Sigma_intra for B x K equal rows), and B_simple = trace / |G|^2 is in rows: the rows a
step of this shape needs for its noise to equal its signal. McCandlish smooths the numerator
and the denominator apart (`NoiseEma`), since their ratio on one step is noisy and its
estimate of |G|^2 may be negative.

**Caveat.** GRPO's group-normalised advantages sum to zero in a group, which couples a group's
rows: their covariance is then an inter-prompt term of negative sign, measured as part of
tr(Sigma_inter) at the step's own group size (the step's variance stays right; its split
across other group sizes is the model's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ADAM_PREFIX",
    "GEOMETRIES",
    "NOISE_METRICS",
    "Halves",
    "NoiseEma",
    "NoiseEstimate",
    "accumulated_estimate",
    "halves",
    "halves_estimate",
    "moment_row",
    "solve",
]

NOISE_METRICS = {
    "noise/grad_sq": "|G|^2, this step's unbiased estimate (may be negative)",
    "noise/inter": "tr(Sigma_inter): the inter-prompt noise of one prompt, this step",
    "noise/intra": "tr(Sigma_intra): the intra-prompt noise of one rollout, this step",
    "noise/trace": "tr(Sigma) of one row at this step's shape (K tr Sigma_inter + tr Sigma_intra "
    "for B x K equal rows), this step",
    "noise/b_simple": "B_simple = noise/trace / noise/grad_sq in rows, this step (noisy; "
    "logged where noise/grad_sq > 0)",
    "noise/grad_sq_ema": "|G|^2 smoothed (bias-corrected EMA over metered steps)",
    "noise/inter_ema": "tr(Sigma_inter) smoothed",
    "noise/intra_ema": "tr(Sigma_intra) smoothed",
    "noise/trace_ema": "tr(Sigma) of one row at this step's shape, from the smoothed terms",
    "noise/b_simple_ema": "B_simple from the smoothed numerator and denominator: the one to read "
    "(logged where noise/grad_sq_ema > 0)",
    "noise/inter_share_ema": "share of the step's variance that is inter-prompt, smoothed",
}
"""The meter's metrics (what every trainer that meters logs), by name."""

ADAM_PREFIX = "noise/adam/"
"""The reference trainer's second reading: the same metrics (NOISE_METRICS' names after
`noise/`) with every inner product weighted by Adam's preconditioner, 1 / (sqrt(v_hat) + eps)
a coordinate (training/noise_meter.py, `adam_geometry`): B_simple in the geometry Adam steps
in. McCandlish's B_noise for an update -eps P g is tr(P H P Sigma) / (G' P H P G); where P
matches the curvature (H proportional to P^-1, what Adam's diagonal estimates), it is
tr(P Sigma) / (G' P G). Every moment above holds with the weighted product, so the estimator is
exact for it as for the plain one."""

GEOMETRIES = {"plain": "noise/", "adam": ADAM_PREFIX}
"""The meter's readings by name (TrainConfig.plan_noise's choices): their metrics' prefix."""


def moment_row(
    u: NDArray[np.float64], v: NDArray[np.float64], prompt: NDArray[np.int64]
) -> NDArray[np.float64]:
    """E[U . V] as coefficients of (|G|^2, tr Sigma_inter, tr Sigma_intra), for U = sum u_r g_r
    and V = sum v_r g_r over rows of prompts `prompt` (ids 0..B-1, one per row)."""
    size = int(prompt.max()) + 1 if prompt.size else 0
    per_u = np.bincount(prompt, weights=u, minlength=size)
    per_v = np.bincount(prompt, weights=v, minlength=size)
    return np.array([u.sum() * v.sum(), per_u @ per_v, u @ v], dtype=np.float64)


@dataclass(frozen=True)
class NoiseEstimate:
    """One step's estimate, and the step's own design (what its trace is measured at)."""

    grad_sq: float
    """|G|^2."""
    inter: float
    """tr(Sigma_inter)."""
    intra: float
    """tr(Sigma_intra)."""
    rows: int
    """N: rows of the step."""
    prompt_share: float
    """P = sum_p (C_p / C)^2: 1 / B for B prompts of equal weight."""
    row_share: float
    """Q = sum_r (c_r / C)^2: 1 / (B K) for B x K rows of equal weight."""

    def trace(self, inter: float | None = None, intra: float | None = None) -> float:
        """tr(Sigma) of one row at the step's shape, N (P inter + Q intra) (this step's terms,
        or those given: the smoothed ones)."""
        a = self.inter if inter is None else inter
        b = self.intra if intra is None else intra
        return self.rows * (self.prompt_share * a + self.row_share * b)

    def inter_share(self, inter: float | None = None, intra: float | None = None) -> float:
        """The share of the step's variance P inter + Q intra that is inter-prompt."""
        a = self.inter if inter is None else inter
        b = self.intra if intra is None else intra
        total = self.prompt_share * a + self.row_share * b
        return self.prompt_share * a / total if total else math.nan


def solve(values: Sequence[float], rows: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
    """(|G|^2, tr Sigma_inter, tr Sigma_intra) from observed inner products `values` and their
    `moment_row`s, by least squares (exact with three independent rows); a ValueError when the
    observations cannot separate the three."""
    design = np.vstack(rows)
    y = np.asarray(values, dtype=np.float64)
    if design.shape[0] < 3 or np.linalg.matrix_rank(design) < 3:
        raise ValueError(
            "noise meter: these sub-batches cannot separate |G|^2 and the inter- and "
            "intra-prompt terms (they need two prompts and two rollouts of a prompt)"
        )
    if design.shape[0] == 3:  # exactly determined: no rounding residue where a term is exact
        theta = np.linalg.solve(design, y)
    else:
        theta = np.linalg.lstsq(design, y, rcond=None)[0]
    return np.asarray(theta, dtype=np.float64)


@dataclass(frozen=True)
class Halves:
    """The reference trainer's two splits of a step's rows (row indices, ascending)."""

    prompt_a: NDArray[np.int64]
    """Rows of the even-numbered groups."""
    prompt_b: NDArray[np.int64]
    """Rows of the odd-numbered groups."""
    rollout_1: NDArray[np.int64]
    """The even-numbered rows of each of A's groups."""
    rollout_2: NDArray[np.int64]
    """The odd-numbered rows of each of A's groups (with rollout_1: prompt_a)."""
    prompt: NDArray[np.int64]
    """Each row's group."""


def halves(sizes: Sequence[int]) -> Halves:
    """The prompt halves (alternate groups) and the rollout halves of the first (alternate rows
    of each of its groups) of a step whose groups have `sizes` rows, in order; a one-line
    ValueError for a group of one rollout or a step of fewer than two groups."""
    sizes = [int(n) for n in sizes]
    if len(sizes) < 2:
        raise ValueError(
            f"noise meter: a step of {len(sizes)} group(s) has no two halves of prompts; it "
            "needs two groups or more"
        )
    ones = [g for g, n in enumerate(sizes) if n < 2]
    if ones:
        raise ValueError(
            f"noise meter: group {ones[0]} has {sizes[ones[0]]} rollout(s); the intra-prompt "
            "term needs two rollouts in every group (drop groups of one, or set noise_every 0)"
        )
    prompt = np.repeat(np.arange(len(sizes)), sizes)
    within = np.concatenate([np.arange(n) for n in sizes])
    rows = np.arange(prompt.size)
    return Halves(
        prompt_a=rows[prompt % 2 == 0],
        prompt_b=rows[prompt % 2 == 1],
        rollout_1=rows[(prompt % 2 == 0) & (within % 2 == 0)],
        rollout_2=rows[(prompt % 2 == 0) & (within % 2 == 1)],
        prompt=prompt,
    )


def _mean_weights(coef: NDArray[np.float64], rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """The weights of the mean gradient over `rows`: c_r / C_S on them, 0 elsewhere."""
    out = np.zeros_like(coef)
    out[rows] = coef[rows] / coef[rows].sum()
    return out


def halves_estimate(
    split: Halves,
    coef: NDArray[np.float64],
    cross_ab: float,
    diff_ab: float,
    diff_r: float,
) -> NoiseEstimate:
    """The step's estimate from its halves' mean gradients: `cross_ab` = G_A . G_B, `diff_ab` =
    |G_A - G_B|^2, `diff_r` = |G_R1 - G_R2|^2 (G_S the c-weighted mean gradient over S; `coef`
    the rows' c_r, all > 0)."""
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != split.prompt.shape or not np.all(coef > 0):
        raise ValueError("noise meter: one positive loss coefficient a row is needed")
    a, b = _mean_weights(coef, split.prompt_a), _mean_weights(coef, split.prompt_b)
    r1, r2 = _mean_weights(coef, split.rollout_1), _mean_weights(coef, split.rollout_2)
    p = split.prompt
    return _estimate(
        [cross_ab, diff_ab, diff_r],
        [moment_row(a, b, p), moment_row(a - b, a - b, p), moment_row(r1 - r2, r1 - r2, p)],
        coef,
        p,
    )


def accumulated_estimate(
    prompts: Sequence[NDArray[np.int64]],
    coefs: Sequence[NDArray[np.float64]],
    squares: Sequence[float],
    crosses: Sequence[float],
) -> NoiseEstimate:
    """The estimate of a step accumulated micro-batch by micro-batch (gradient accumulation):
    micro-batch i's gradient m_i = sum of coefs[i][r] g_r over its rows, of prompts
    prompts[i] (ids shared across the step's micro-batches), `squares[i]` = |m_i|^2 and
    `crosses[i]` = m_i . (m_1 + ... + m_{i-1}), what a gradient hook reads before adding m_i
    to the gradient held. Every micro-batch a set of rows (shuffled or not)."""
    prompt = np.concatenate(prompts).astype(np.int64)
    coef = np.concatenate(coefs).astype(np.float64)
    ends = np.cumsum([len(c) for c in coefs])
    values, rows = [], []
    earlier = np.zeros_like(coef)
    for i, end in enumerate(ends):
        mine = np.zeros_like(coef)
        mine[end - len(coefs[i]) : end] = coefs[i]
        values.append(squares[i])
        rows.append(moment_row(mine, mine, prompt))
        if i:
            values.append(crosses[i])
            rows.append(moment_row(mine, earlier, prompt))
        earlier += mine
    return _estimate(values, rows, coef, prompt)


def _estimate(
    values: Sequence[float],
    rows: Sequence[NDArray[np.float64]],
    coef: NDArray[np.float64],
    prompt: NDArray[np.int64],
) -> NoiseEstimate:
    """Solve the observations, and the step's own design (coef, prompt) for its trace."""
    theta = solve(values, rows)
    full = coef / coef.sum()
    per_prompt = np.bincount(prompt, weights=full)
    return NoiseEstimate(
        grad_sq=float(theta[0]),
        inter=float(theta[1]),
        intra=float(theta[2]),
        rows=int(np.count_nonzero(coef)),
        prompt_share=float(per_prompt @ per_prompt),
        row_share=float(full @ full),
    )


def _ratio(num: float, den: float) -> float:
    """num / den where den > 0, else NaN (no key): a noise scale needs |G|^2 > 0."""
    return num / den if den > 0 else math.nan


_SMOOTHED = ("grad_sq", "inter", "intra")
"""The terms NoiseEma smooths, each apart."""


class NoiseEma:
    """|G|^2 and the two noise terms smoothed apart, each a bias-corrected exponential moving
    average over the metered steps (Adam's correction: the first value is its own mean)."""

    def __init__(self, decay: float, prefix: str = "noise/"):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"noise_ema must be in [0, 1), got {decay!r}")
        self.decay = decay
        """Weight of the past at each metered step, in [0, 1)."""
        self.prefix = prefix
        """What its metrics' names start with: NOISE_METRICS' `noise/`, or ADAM_PREFIX."""
        self.count = 0
        """Estimates folded in."""
        self.sums = dict.fromkeys(_SMOOTHED, 0.0)
        """The uncorrected averages, by term."""

    def update(self, est: NoiseEstimate) -> dict[str, float]:
        """Fold in one step's estimate; its `noise/...` metrics (NOISE_METRICS)."""
        d = self.decay
        self.count += 1
        for name in _SMOOTHED:
            self.sums[name] = d * self.sums[name] + (1 - d) * getattr(est, name)
        g, a, b = self.smoothed()
        trace, trace_ema = est.trace(), est.trace(a, b)
        out = {
            "grad_sq": est.grad_sq,
            "inter": est.inter,
            "intra": est.intra,
            "trace": trace,
            "b_simple": _ratio(trace, est.grad_sq),
            "grad_sq_ema": g,
            "inter_ema": a,
            "intra_ema": b,
            "trace_ema": trace_ema,
            "b_simple_ema": _ratio(trace_ema, g),
            "inter_share_ema": est.inter_share(a, b),
        }
        # an undefined ratio: no key
        return {self.prefix + k: v for k, v in out.items() if math.isfinite(v)}

    def smoothed(self) -> tuple[float, float, float]:
        """The bias-corrected averages (|G|^2, tr Sigma_inter, tr Sigma_intra); NaN before the
        first estimate."""
        if self.count == 0:
            return math.nan, math.nan, math.nan
        scale = 1.0 - self.decay**self.count
        g, a, b = (self.sums[name] / scale for name in _SMOOTHED)
        return g, a, b

    def state_dict(self) -> dict[str, float]:
        """What a checkpoint keeps (exact resume)."""
        return {"count": float(self.count), **self.sums}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.count = int(state["count"])
        self.sums = {name: float(state[name]) for name in _SMOOTHED}
