"""ZIP-RC-Lite live adaptive decoder: K samples of one prompt, a meta-policy reading the head.

The prompt is prefilled once and its KV cache repeated K times. Every decode step reads the
head from the same forward pass that gives the next-token logits (`readout`), masks the
reserved slice to -inf (`mask_reserved`) and samples; a meta-policy (paper section 3.2,
appendix B.5) may abandon samples:

- none: every sample runs to completion (best-of-N);
- prune: from `warmup` on, every `interval` steps, abandon active samples whose smoothed value
  is below `prune_threshold`, keeping the `k_min` highest-valued ones alive;
- early_stop: from `warmup` on, at every step, once the best active sample's smoothed value
  reaches `tau`, commit to it and abandon the other active samples;
- utility: at the prune schedule, keep active sample j only if its marginal gain to the
  expected best-of-set reward, `v_j * prod_{i != j} (1 - v_i)`, is at least
  `beta * E[l_j] / l_max` (greedy: the worst net margin is dropped and the rest re-scored).

Finished samples (EOS, a stop id or `max_new_tokens`) that were not abandoned are the
candidates; the one with the highest `value_end` (mean V over its last `end_window` positions)
is returned. Cost is forward passes actually run: the shared prefill counts 1, then every
active row costs 1 per decode step after the first. Latency is decode steps until the last
active sample stops. Stopped rows (finished or abandoned) are removed from the KV cache
(`DynamicCache.batch_select_indices`), so the batch never carries padding: all live rows
share one position and need no attention mask.

Sampling draws K uniforms per step (one per sample, inverse CDF), whatever is active: a
sample's tokens depend only on the seed and its own prefix, so all policies run with the same
seed see the same trajectories (common random numbers: paired policy comparisons), and a
pruned sample is a prefix of the same sample under `none`.

Invariants checked on every run: no reserved id is ever sampled, and the live values of the
returned sequences equal offline teacher-forced scoring (`score_sequences`) within
`value_tolerance`. See docs/inference/decoder.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from frontier_rft.core.config import check, check_choice
from frontier_rft.inference.head import mask_reserved, readout
from frontier_rft.inference.scoring import score_sequences
from frontier_rft.inference.spec import ZipRCSpec

__all__ = [
    "CHECK_MODES",
    "POLICIES",
    "TINY_COUNTDOWN",
    "UTILITY_NORMS",
    "DecodeResult",
    "DecoderConfig",
    "decode",
    "prune_keep",
    "utility_keep",
]

POLICIES = ("none", "prune", "early_stop", "utility")
UTILITY_NORMS = ("prompt", "max_new_tokens")
CHECK_MODES = ("all", "selected", "off")


def _int_at_least(name: str, value: object, low: int) -> None:
    check(
        isinstance(value, int) and not isinstance(value, bool) and value >= low,
        f"{name} must be an int >= {low}, got {value!r}",
    )


def _unit(name: str, value: object) -> None:
    check(
        isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0,
        f"{name} must be a number in [0, 1], got {value!r}",
    )


@dataclass(frozen=True)
class DecoderConfig:
    """The live decoder: K, sampling, the meta-policy and its schedule (paper defaults)."""

    k: int = 8
    """K: parallel samples per prompt."""
    max_new_tokens: int = 1024
    """Longest completion; a sample reaching it stops (and is still a candidate)."""
    temperature: float = 1.0
    """Sampling temperature (pure sampling: no top-k, no top-p)."""
    policy: str = "none"
    """Meta-policy: none (best-of-N), prune, early_stop or utility."""
    warmup: int = 128
    """Decode steps before any policy may act (paper 128; tiny Countdown preset 4)."""
    interval: int = 32
    """prune/utility act at steps warmup, warmup+interval, ... (paper 32; tiny preset 2)."""
    k_min: int = 2
    """prune keeps at least this many samples active (the highest-valued ones)."""
    smoothing: int = 4
    """Policies read each sample's value averaged over its last this-many positions."""
    end_window: int = 16
    """value_end, the selection signal, is the mean value over this many last positions."""
    prune_threshold: float = 0.5
    """prune abandons active samples whose smoothed value is below this."""
    tau: float = 0.8
    """early_stop commits once the best smoothed value reaches this (paper sweeps 0.7-0.95)."""
    beta: float = 0.02
    """utility's price of normalised expected remaining tokens (paper sweeps 0.002-0.1)."""
    utility_norm: str = "prompt"
    """l_max of utility's cost E[l_j]/l_max: prompt = the head's predicted total length at
    the prompt (per-prompt normalisation, as the paper), max_new_tokens = the length cap."""
    stop_ids: tuple[int, ...] = ()
    """Token ids that end a sample besides the model's EOS (e.g. the id of '</answer>')."""
    check_values: str = "all"
    """Compare live values with teacher-forced scoring: all samples, the selected one, off."""
    value_tolerance: float = 1e-4
    """Largest |live - offline| value difference tolerated before decode raises."""

    def __post_init__(self) -> None:
        _int_at_least("k", self.k, 1)
        _int_at_least("max_new_tokens", self.max_new_tokens, 1)
        check(
            isinstance(self.temperature, (int, float)) and self.temperature > 0,
            f"temperature must be > 0 (pure sampling; K greedy samples would be identical), "
            f"got {self.temperature!r}",
        )
        check_choice("policy", self.policy, POLICIES)
        _int_at_least("warmup", self.warmup, 1)  # step 0 is the prompt: every sample equal
        _int_at_least("interval", self.interval, 1)
        _int_at_least("k_min", self.k_min, 1)
        check(self.k_min <= self.k, f"k_min ({self.k_min}) must not exceed k ({self.k})")
        _int_at_least("smoothing", self.smoothing, 1)
        _int_at_least("end_window", self.end_window, 1)
        _unit("prune_threshold", self.prune_threshold)
        _unit("tau", self.tau)
        check(
            isinstance(self.beta, (int, float)) and not isinstance(self.beta, bool)
            and self.beta >= 0,
            f"beta must be a number >= 0 (paper sweeps 0.002..0.1), got {self.beta!r}",
        )  # fmt: skip
        check_choice("utility_norm", self.utility_norm, UTILITY_NORMS)
        check(
            isinstance(self.stop_ids, tuple)
            and all(isinstance(s, int) and s >= 0 for s in self.stop_ids),
            f"stop_ids must be a tuple of token ids >= 0, got {self.stop_ids!r}",
        )
        check_choice("check_values", self.check_values, CHECK_MODES)
        check(
            isinstance(self.value_tolerance, (int, float)) and self.value_tolerance > 0,
            f"value_tolerance must be > 0, got {self.value_tolerance!r}",
        )

    @property
    def label(self) -> str:
        """Short name of the operating point, e.g. 'early_stop tau=0.8' or 'prune thr=0.5'."""
        if self.policy == "prune":
            return f"prune thr={self.prune_threshold:g}"
        if self.policy == "early_stop":
            return f"early_stop tau={self.tau:g}"
        if self.policy == "utility":
            return f"utility beta={self.beta:g}"
        return self.policy

    def replace(self, **changes: Any) -> DecoderConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


TINY_COUNTDOWN = DecoderConfig(max_new_tokens=40, warmup=4, interval=2, end_window=4)
"""The paper's decoder scaled to the tiny Countdown policy. The paper's completions are a
few hundred tokens (warmup 128 is about a quarter of one, interval 32 about a sixteenth, the
16-position end window its last few percent); the tiny model's are 10-24 tokens ('<answer>'
alone is 3), so warmup 4 acts right after the first operand, interval 2 every second token,
and value_end averages the last 4 positions: those that have seen the whole expression
('</answer>' and EOS are 4 tokens), where 16 would average the whole completion. 40 is the
policy's training length cap."""


@dataclass
class DecodeResult:
    """What one live decode produced and what it cost."""

    sequences: list[list[int]]
    """Completion ids of every sample (a finished one ends with its EOS/stop id)."""
    status: list[str]
    """Per sample: finished (EOS/stop id), max_tokens (hit the cap) or abandoned."""
    values: list[np.ndarray]
    """Per sample: live V at positions 0..len-1 (an abandoned one also has the value read at
    the step it was abandoned, so one more than its tokens)."""
    remaining: list[np.ndarray]
    """Per sample: live expected remaining tokens at the same positions as `values`."""
    value_end: np.ndarray
    """(K,) mean V over the last end_window positions of each candidate; nan if abandoned."""
    selected: int
    """Index of the returned sample (the candidate with the highest value_end)."""
    cost: int
    """Forward passes: 1 for the shared prefill + active rows at every later decode step."""
    latency: int
    """Decode steps until the last active sample stopped."""
    stopped_at: list[int]
    """Per sample: the decode step at which it finished or was abandoned."""
    committed: int | None = None
    """early_stop: the sample committed to (None when the threshold was never reached)."""
    events: list[tuple[int, str, tuple[int, ...]]] = field(default_factory=list)
    """(step, action, samples) of every policy action: 'abandon' or 'commit'."""
    value_check: float = float("nan")
    """Largest |live - offline| value over the checked samples (nan when check_values=off)."""

    @property
    def candidates(self) -> list[int]:
        """Samples that finished without being abandoned."""
        return [j for j, s in enumerate(self.status) if s != "abandoned"]

    @property
    def selected_ids(self) -> list[int]:
        """Completion ids of the returned sample."""
        return self.sequences[self.selected]

    @property
    def prompt_value(self) -> float:
        """V at the prompt (before any sampled token): the per-prompt difficulty estimate."""
        return float(self.values[0][0])

    @property
    def prompt_remaining(self) -> float:
        """Expected completion length predicted at the prompt."""
        return float(self.remaining[0][0])


# ---------------------------------------------------------------------------- policy rules


def prune_keep(values: np.ndarray, threshold: float, k_min: int) -> np.ndarray:
    """Keep mask over active samples: value >= threshold, topped up to k_min by value.

    Ties in the top-up go to the lower index (a stable sort).
    """
    v = np.asarray(values, dtype=np.float64)
    keep = v >= threshold
    need = min(k_min, len(v)) - int(keep.sum())
    if need > 0:
        order = np.argsort(-v, kind="stable")
        for j in order:
            if need == 0:
                break
            if not keep[j]:
                keep[j] = True
                need -= 1
    return keep


def utility_keep(
    values: np.ndarray,
    costs: np.ndarray,
    beta: float,
    others: Sequence[float] = (),
    keep_at_least: int = 1,
) -> np.ndarray:
    """Keep mask over active samples under the ZIP-RC sampling utility.

    Sample j's net margin is `v_j * prod_{i != j}(1 - v_i) - beta * costs_j`, the product over
    the other kept samples and `others` (values of finished candidates, which stay in the
    set). While more than `keep_at_least` remain, the sample with the most negative margin is
    dropped and the margins recomputed, so in the kept set every sample pays for itself
    (dropping all negatives at once would drop redundant pairs together). Ties drop the
    higher index, as prune keeps the lower one.
    """
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(costs, dtype=np.float64)
    fail_others = float(np.prod([1.0 - o for o in others])) if len(others) else 1.0
    keep = np.ones(len(v), dtype=bool)
    while int(keep.sum()) > keep_at_least:
        idx = np.flatnonzero(keep)
        fails = 1.0 - v[idx]
        margins = np.empty(len(idx))
        for n, j in enumerate(idx):
            rest = float(np.prod(np.delete(fails, n)))
            margins[n] = v[j] * rest * fail_others - beta * c[j]
        worst = len(margins) - 1 - int(np.argmin(margins[::-1]))  # ties: the higher index
        if margins[worst] >= 0:
            break
        keep[idx[worst]] = False
    return keep


# ---------------------------------------------------------------------------- decoder


def _stop_ids(model: Any, config: DecoderConfig) -> set[int]:
    eos = model.generation_config.eos_token_id
    ids = set(config.stop_ids)
    if isinstance(eos, int):
        ids.add(eos)
    elif eos is not None:
        ids.update(int(e) for e in eos)
    if not ids:
        raise ValueError("the model has no eos_token_id and no stop_ids were given: set stop_ids")
    return ids


def _sample(
    logits: torch.Tensor, spec: ZipRCSpec, temperature: float, uniforms: torch.Tensor
) -> torch.Tensor:
    """Inverse-CDF sampling from the masked softmax, one given uniform per row."""
    probs = torch.softmax(mask_reserved(logits, spec).double() / temperature, dim=-1)
    cdf = torch.cumsum(probs, dim=-1)
    # side=right: the first index whose cdf exceeds u * total has positive probability,
    # so a masked (zero-probability) id can never be picked, even for u = 0.
    target = (uniforms * cdf[:, -1]).unsqueeze(1)
    return torch.searchsorted(cdf, target, right=True).squeeze(1).clamp_(max=probs.shape[1] - 1)


def _smoothed(history: list[float], window: int) -> float:
    return float(np.mean(history[-window:]))


@torch.no_grad()
def decode(
    model: Any,
    spec: ZipRCSpec,
    prompt_ids: Sequence[int],
    config: DecoderConfig,
    generator: torch.Generator | None = None,
) -> DecodeResult:
    """Decode K samples of one prompt under `config.policy`; see the module docstring.

    `model` is a head model (attach_head / load_head_model); `generator` seeds sampling
    (None = a generator seeded 0). Raises RuntimeError when an invariant fails.
    """
    from transformers import DynamicCache

    if len(prompt_ids) == 0:
        raise ValueError("prompt_ids is empty: the decoder needs at least one prompt token")
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    k = config.k
    stops = _stop_ids(model, config)
    bad_stops = sorted(s for s in stops if spec.start_id <= s < spec.end_id)
    if bad_stops:
        raise ValueError(f"stop ids {bad_stops} lie in the reserved slice: they can never occur")
    was_training = model.training
    model.eval()

    try:
        cache = DynamicCache()
        out = model(
            input_ids=torch.tensor([list(prompt_ids)]), past_key_values=cache, use_cache=True
        )
        logits = out.logits[:, -1].float().expand(k, -1)
        cache.batch_repeat_interleave(k)
        cost, step = 1, 0
        rows = list(range(k))  # sample index of each live cache row
        seqs: list[list[int]] = [[] for _ in range(k)]
        vals: list[list[float]] = [[] for _ in range(k)]
        rems: list[list[float]] = [[] for _ in range(k)]
        status = [""] * k
        stopped_at = [-1] * k
        events: list[tuple[int, str, tuple[int, ...]]] = []
        committed: int | None = None
        l_max = 1.0
        while True:
            value, remaining = readout(logits, spec)
            for i, j in enumerate(rows):
                vals[j].append(float(value[i]))
                rems[j].append(float(remaining[i]))
            if step == 0:
                norm = (
                    float(remaining[0])
                    if config.utility_norm == "prompt"
                    else config.max_new_tokens
                )
                l_max = max(norm, 1.0)
            uniforms = torch.rand(k, generator=generator, dtype=torch.float64)

            commit, drop = _policy(config, step, rows, vals, rems, status, l_max, committed)
            if commit is not None:
                committed = commit
                events.append((step, "commit", (commit,)))
            dropped = set(drop)
            if dropped:
                events.append((step, "abandon", tuple(sorted(dropped))))
                for j in dropped:
                    status[j], stopped_at[j] = "abandoned", step
            keep = [i for i, j in enumerate(rows) if j not in dropped]
            sampled = _sample(
                logits[keep], spec, config.temperature, uniforms[[rows[i] for i in keep]]
            )
            reserved = (sampled >= spec.start_id) & (sampled < spec.end_id)
            if bool(reserved.any()):
                raise RuntimeError(
                    f"reserved id {int(sampled[reserved][0])} sampled at step {step}: the slice "
                    f"[{spec.start_id}, {spec.end_id}) must be masked before sampling"
                )
            step += 1
            live: list[int] = []
            next_tokens: list[int] = []
            for n, i in enumerate(keep):
                j, tok = rows[i], int(sampled[n])
                seqs[j].append(tok)
                if tok in stops or len(seqs[j]) >= config.max_new_tokens:
                    status[j] = "finished" if tok in stops else "max_tokens"
                    stopped_at[j] = step - 1
                else:
                    live.append(i)
                    next_tokens.append(tok)
            if not live:
                break
            if len(live) < len(rows):
                cache.batch_select_indices(torch.tensor(live, dtype=torch.long))
            out = model(
                input_ids=torch.tensor(next_tokens, dtype=torch.long).unsqueeze(1),
                past_key_values=cache,
                use_cache=True,
            )
            logits = out.logits[:, -1].float()
            rows = [rows[i] for i in live]
            cost += len(rows)
    finally:
        model.train(was_training)

    value_end = np.full(k, np.nan)
    for j in range(k):
        if status[j] != "abandoned":
            value_end[j] = float(np.mean(vals[j][-config.end_window :]))
    candidates = [j for j in range(k) if status[j] != "abandoned"]
    if not candidates:  # every policy keeps >= 1 sample active, and active samples finish
        raise RuntimeError("no sample finished un-abandoned: a policy dropped every sample")
    selected = max(candidates, key=lambda j: (value_end[j], -j))
    result = DecodeResult(
        sequences=seqs,
        status=status,
        values=[np.asarray(v) for v in vals],
        remaining=[np.asarray(r) for r in rems],
        value_end=value_end,
        selected=selected,
        cost=cost,
        latency=step,
        stopped_at=stopped_at,
        committed=committed,
        events=events,
    )
    if config.check_values != "off":
        check_rows = list(range(k)) if config.check_values == "all" else [selected]
        result.value_check = _check_live_values(model, spec, prompt_ids, result, check_rows)
        if result.value_check > config.value_tolerance:
            raise RuntimeError(
                f"live values differ from teacher-forced scoring by {result.value_check:.2e} "
                f"(> value_tolerance {config.value_tolerance:g}): the live readout is not "
                "reading the same forward pass as the offline scorer"
            )
    return result


def _policy(
    config: DecoderConfig,
    step: int,
    rows: list[int],
    vals: list[list[float]],
    rems: list[list[float]],
    status: list[str],
    l_max: float,
    committed: int | None,
) -> tuple[int | None, list[int]]:
    """(sample committed to at this step or None, samples to abandon at this step)."""
    if config.policy == "none" or step < config.warmup:
        return None, []
    smooth = np.array([_smoothed(vals[j], config.smoothing) for j in rows])
    if config.policy == "early_stop":
        if committed is not None:
            return None, []
        best = int(np.argmax(smooth))  # first of equals: the lowest sample index
        if smooth[best] < config.tau:
            return None, []
        return rows[best], [j for j in rows if j != rows[best]]
    if (step - config.warmup) % config.interval != 0:
        return None, []
    if config.policy == "prune":
        keep = prune_keep(smooth, config.prune_threshold, config.k_min)
    else:
        costs = np.array([_smoothed(rems[j], config.smoothing) for j in rows]) / l_max
        done = [
            _smoothed(vals[j], config.end_window)
            for j in range(len(status))
            if status[j] in ("finished", "max_tokens")
        ]
        keep = utility_keep(smooth, costs, config.beta, others=done)
    return None, [j for j, kept in zip(rows, keep, strict=True) if not kept]


def _check_live_values(
    model: Any, spec: ZipRCSpec, prompt_ids: Sequence[int], result: DecodeResult, rows: list[int]
) -> float:
    """Max |live - teacher-forced| value over `rows` (positions that sampled a token)."""
    rows = [j for j in rows if result.sequences[j]]
    if not rows:
        return 0.0
    offline = score_sequences(
        model, spec, [list(prompt_ids)] * len(rows), [result.sequences[j] for j in rows]
    )
    worst = 0.0
    for j, ref in zip(rows, offline, strict=True):
        n = len(result.sequences[j])
        worst = max(worst, float(np.max(np.abs(result.values[j][:n] - ref.values))))
    return worst
