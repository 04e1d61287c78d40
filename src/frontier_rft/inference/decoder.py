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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from frontier_rft.inference.decoder_config import (
    CHECK_MODES,
    POLICIES,
    TINY_COUNTDOWN,
    UTILITY_NORMS,
    DecoderConfig,
)
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
    ids = np.asarray(prompt_ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= spec.start_id:
        raise ValueError(
            f"prompt_ids must be token ids in [0, {spec.start_id}) (the tokenizer's, below the "
            f"reserved slice), got {list(prompt_ids)[:8]}"
        )
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
