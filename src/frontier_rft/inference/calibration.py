"""Calibration of a ZIP-RC-Lite head on held-out rollouts, and offline selection at K (numpy).

Input: the head's slice logits along each of K rollouts of N prompts ([task][sample] arrays
of shape (T, R*L), position 0 = the prompt's last token), the verifier rewards (N, K) and,
for majority voting, each completion's answer key. Reported (paper section 5.2, tables 3, 5):

- AUC of the value against correctness, pooled over all rollouts: at the end (value_end:
  mean V over the last 16 positions), mid-generation (V at position T // 2), at the prompt
  (V before any token), and along the generation (V at a fraction of T). Pooled AUC mixes
  telling easy prompts from hard ones with telling a prompt's good samples from its bad
  ones; the within-prompt AUC of value_end (mean over prompts with both outcomes) isolates
  the second, which is what selection among a prompt's samples needs.
- Total variation between the head's outcome distribution at the prompt and the empirical
  distribution of the prompt's K rollouts, TV = 0.5 * sum |p - q|, mean over prompts: over
  reward states (the joint's reward marginal) and over the full (reward state, length bin)
  grid, each rollout binned by its total length. A constant predictor (the pooled empirical
  distribution) gives the reference.
- End-of-generation reward accuracy and F1 (positive = the top state, "correct"): predicted
  state = argmax of the reward marginal at the last position.
- Remaining-length MAE of E[remaining] at the prompt against the true length, next to the
  MAE of the constant mean-length predictor.
- Offline selection at K over disjoint groups of K samples: value@K (highest value_end),
  majority@K (most frequent answer key; unparseable answers do not vote; ties go to the key
  seen first; the group's first sample with that key is chosen; with no vote at all, the
  first sample), random@K (mean correctness, the chance floor), oracle@K (any correct).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from frontier_rft.inference.spec import ZipRCSpec

__all__ = [
    "POSITION_FRACTIONS",
    "auc",
    "calibration_report",
    "countdown_answer_value",
    "empirical_joint",
    "format_calibration_table",
    "majority_pick",
    "reliability",
    "reward_f1",
    "selection_at_k",
    "total_variation",
]

POSITION_FRACTIONS = tuple(i / 10 for i in range(11))
"""Fractions of each completion at which `auc_by_position` reads V (0 = the prompt)."""


def auc(scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray) -> float:
    """ROC AUC by ranks (Mann-Whitney U / (n_pos * n_neg)); tied scores share their average
    rank, so a tie between a positive and a negative counts one half. NaN with one class."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels, dtype=bool).ravel()
    if s.shape != y.shape:
        raise ValueError(f"{s.size} scores but {y.size} labels: pass one label per score")
    if np.any(~np.isfinite(s)):
        raise ValueError("scores must be finite (no NaN or inf)")
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # 1-based average rank of each score
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """0.5 * sum |p - q| over all axes after the first (or over all, for 1-d inputs)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"distributions differ in shape: {p.shape} vs {q.shape}")
    diff = np.abs(p - q)
    axes = tuple(range(1, diff.ndim)) if diff.ndim > 1 else None
    return np.asarray(0.5 * diff.sum(axis=axes))


def empirical_joint(spec: ZipRCSpec, rewards: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(R, L) share of rollouts per (reward state, length bin of the total length)."""
    states = spec.reward_state(rewards).ravel()
    bins = spec.length_bin(np.asarray(lengths)).ravel()
    counts = np.zeros((spec.num_rewards, spec.num_lengths))
    np.add.at(counts, (states, bins), 1.0)
    return counts / max(states.size, 1)


def reward_f1(predicted: np.ndarray, actual: np.ndarray, positive: int) -> float:
    """F1 of class `positive`: 2 TP / (2 TP + FP + FN); NaN when it is neither predicted nor
    present."""
    pred = np.asarray(predicted) == positive
    true = np.asarray(actual) == positive
    tp = int(np.sum(pred & true))
    denom = 2 * tp + int(np.sum(pred & ~true)) + int(np.sum(~pred & true))
    return float("nan") if denom == 0 else 2 * tp / denom


def majority_pick(keys: Sequence[Hashable | None]) -> int:
    """Index of the first sample carrying the most frequent non-None key (ties: the key seen
    first); 0 when no sample has a key."""
    first: dict[Hashable, int] = {}
    counts: dict[Hashable, int] = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        first.setdefault(key, i)
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return 0
    best = max(counts, key=lambda k: (counts[k], -first[k]))
    return first[best]


def selection_at_k(
    value_end: np.ndarray,
    correct: np.ndarray,
    answers: Sequence[Sequence[Hashable | None]] | None,
    k: int,
) -> dict[str, float]:
    """value@k, majority@k, random@k, oracle@k: mean over disjoint groups of k samples per
    prompt (samples [0, k), [k, 2k), ...; a remainder shorter than k is left out)."""
    v = np.asarray(value_end, dtype=np.float64)
    c = np.asarray(correct, dtype=bool)
    if v.shape != c.shape or v.ndim != 2:
        raise ValueError(f"value_end {v.shape} and correct {c.shape} must both be (N, K)")
    if not 1 <= k <= v.shape[1]:
        raise ValueError(f"k must be in 1..{v.shape[1]} (samples per prompt), got {k}")
    picks: dict[str, list[float]] = {"value": [], "majority": [], "random": [], "oracle": []}
    for i in range(v.shape[0]):
        for lo in range(0, v.shape[1] - k + 1, k):
            group = slice(lo, lo + k)
            picks["value"].append(float(c[i, lo + int(np.argmax(v[i, group]))]))
            if answers is not None:
                picks["majority"].append(float(c[i, lo + majority_pick(answers[i][group])]))
            picks["random"].append(float(c[i, group].mean()))
            picks["oracle"].append(float(c[i, group].any()))
    return {f"{name}@{k}": float(np.mean(x)) for name, x in picks.items() if x}


def reliability(
    predicted: np.ndarray, outcome: np.ndarray, bins: int = 10
) -> dict[str, list[float]]:
    """Equal-width bins over [0, 1]: count, mean prediction, empirical success per bin."""
    p = np.clip(np.asarray(predicted, dtype=np.float64).ravel(), 0.0, 1.0)
    y = np.asarray(outcome, dtype=np.float64).ravel()
    idx = np.minimum((p * bins).astype(np.int64), bins - 1)
    count = np.bincount(idx, minlength=bins).astype(np.float64)
    mean_p = np.bincount(idx, weights=p, minlength=bins) / np.maximum(count, 1)
    mean_y = np.bincount(idx, weights=y, minlength=bins) / np.maximum(count, 1)
    return {
        "edges": np.linspace(0.0, 1.0, bins + 1).tolist(),
        "count": count.tolist(),
        "predicted": mean_p.tolist(),
        "empirical": mean_y.tolist(),
    }


def countdown_answer_value(reference: dict[str, Any], text: str) -> Fraction | None:
    """Exact value of the completion's last <answer> expression (the task's whitelist parser;
    nothing is evaluated as code), whatever numbers it uses; None when there is no answer,
    it does not parse, or it divides by zero."""
    from frontier_rft.tasks.countdown import (
        ParseError,
        analyse_countdown,
        evaluate_expression,
        parse_expression,
    )

    analysis = analyse_countdown(reference.get("numbers", []), reference.get("target", 0), text)
    if analysis.value is not None:
        return analysis.value
    if not analysis.answer or analysis.status == "too_long":
        return None
    try:
        return evaluate_expression(parse_expression(analysis.answer))
    except (ParseError, ZeroDivisionError):
        return None


def calibration_report(
    spec: ZipRCSpec,
    slice_logits: Sequence[Sequence[np.ndarray]],
    rewards: np.ndarray,
    answers: Sequence[Sequence[Hashable | None]] | None = None,
    ks: Sequence[int] = (8,),
    window: int = 16,
) -> dict[str, Any]:
    """Every metric of the module docstring, as a JSON-ready dict."""
    r = np.asarray(rewards, dtype=np.float64)
    n, k = r.shape if r.ndim == 2 else (0, 0)
    if n == 0 or k == 0 or len(slice_logits) != n:
        raise ValueError(
            f"need (N, K) rewards with N, K >= 1 and one row of slice logits per prompt; got "
            f"rewards {r.shape} and {len(slice_logits)} rows"
        )
    states = spec.reward_state(r)
    top = spec.num_rewards - 1
    correct = states == top
    lengths = np.zeros((n, k), dtype=np.int64)
    v_end, v_mid, v_prompt = (np.zeros((n, k)) for _ in range(3))
    end_state = np.zeros((n, k), dtype=np.int64)
    at_fraction = np.zeros((len(POSITION_FRACTIONS), n, k))
    prompt_joint = np.zeros((n, spec.num_rewards, spec.num_lengths))
    rem_prompt = np.zeros((n, k))
    rem_errors: list[np.ndarray] = []
    for i in range(n):
        if len(slice_logits[i]) != k:
            raise ValueError(f"prompt {i}: {len(slice_logits[i])} sequences, rewards have {k}")
        for j, logits in enumerate(slice_logits[i]):
            joint = spec.joint(logits)  # (T, R, L)
            t = joint.shape[0]
            if t == 0:
                raise ValueError(f"prompt {i} sample {j}: empty completion")
            values = spec.value(joint)
            remaining = spec.expected_remaining(joint)
            lengths[i, j] = t
            v_end[i, j] = float(np.mean(values[-window:]))
            v_mid[i, j] = values[t // 2]
            v_prompt[i, j] = values[0]
            end_state[i, j] = int(np.argmax(spec.reward_marginal(joint[-1])))
            for f, frac in enumerate(POSITION_FRACTIONS):
                at_fraction[f, i, j] = values[round(frac * (t - 1))]
            prompt_joint[i] += joint[0] / k  # the same context for every sample of a prompt
            rem_prompt[i, j] = remaining[0]
            rem_errors.append(np.abs(remaining - (t - np.arange(t))))
    empirical = np.stack([empirical_joint(spec, r[i], lengths[i]) for i in range(n)])
    pooled = empirical.mean(axis=0)
    tv_joint = total_variation(prompt_joint, empirical)
    tv_reward = total_variation(prompt_joint.sum(-1), empirical.sum(-1))
    const_joint = total_variation(np.broadcast_to(pooled, empirical.shape), empirical)
    const_reward = total_variation(
        np.broadcast_to(pooled.sum(-1), (n, spec.num_rewards)), empirical.sum(-1)
    )
    selection: dict[str, float] = {}
    for kk in ks:
        if kk <= k:
            selection.update(selection_at_k(v_end, correct, answers, kk))
    value_range = [float(v_prompt[:, 0].min()), float(v_prompt[:, 0].max())]
    return {
        "prompts": n,
        "samples": k,
        "sequences": n * k,
        "success_rate": float(correct.mean()),
        "auc_end": auc(v_end, correct),
        "auc_end_within_prompt": _within_prompt_auc(v_end, correct),
        "mixed_prompts": int(np.sum((correct.sum(1) > 0) & (correct.sum(1) < k))),
        "auc_mid": auc(v_mid, correct),
        "auc_prompt": auc(v_prompt, correct),
        "auc_by_position": {
            "fractions": list(POSITION_FRACTIONS),
            "auc": [auc(at_fraction[f], correct) for f in range(len(POSITION_FRACTIONS))],
            "auc_within_prompt": [
                _within_prompt_auc(at_fraction[f], correct) for f in range(len(POSITION_FRACTIONS))
            ],
        },
        "tv_joint": float(tv_joint.mean()),
        "tv_reward": float(tv_reward.mean()),
        "tv_joint_constant": float(const_joint.mean()),
        "tv_reward_constant": float(const_reward.mean()),
        "end_reward_accuracy": float(np.mean(end_state == states)),
        "end_reward_f1": reward_f1(end_state, states, top),
        "brier_end": float(np.mean((np.clip(v_end, 0, 1) - correct) ** 2)),
        "length_mae_prompt": float(np.mean(np.abs(rem_prompt - lengths))),
        "length_mae_constant": float(np.mean(np.abs(lengths.mean() - lengths))),
        "length_mae_all_positions": float(np.mean(np.concatenate(rem_errors))),
        "mean_length": float(lengths.mean()),
        "prompt_value_range": value_range,
        "selection": selection,
        "reliability_end": reliability(v_end, correct),
    }


def _within_prompt_auc(scores: np.ndarray, correct: np.ndarray) -> float:
    """Mean over prompts with both outcomes of the AUC among that prompt's own samples: how
    well the score ranks samples of one prompt (what selection needs), with the prompt's
    difficulty taken out; NaN when no prompt has both outcomes."""
    per = [auc(s, c) for s, c in zip(scores, correct, strict=True) if 0 < c.sum() < c.size]
    return float(np.mean(per)) if per else float("nan")


def _fmt(value: Any) -> str:
    """A metric to 3 decimals; "nan" where undefined (NaN, or null in a calibration.json)."""
    return "nan" if value is None or value != value else f"{value:.3f}"


def format_calibration_table(report: dict[str, Any]) -> str:
    """Markdown: the calibration table (paper table 3 style) and offline selection (table 5)."""
    rows = [
        ("AUC(value_end -> correct)", report["auc_end"], "0.5"),
        (
            f"  within a prompt (mean over {report['mixed_prompts']} mixed prompts)",
            report["auc_end_within_prompt"],
            "0.5",
        ),
        ("AUC(value mid-generation -> correct)", report["auc_mid"], "0.5"),
        ("AUC(value at prompt -> correct)", report["auc_prompt"], "0.5"),
        ("Mean TV, joint (reward x length) at prompt", report["tv_joint"], None),
        ("Mean TV, reward marginal at prompt", report["tv_reward"], None),
        ("End-of-gen reward F1 (correct class)", report["end_reward_f1"], None),
        ("End-of-gen reward accuracy", report["end_reward_accuracy"], None),
        ("Brier(value_end)", report["brier_end"], None),
        ("Remaining-length MAE at prompt (tokens)", report["length_mae_prompt"], None),
    ]
    refs = {
        "Mean TV, joint (reward x length) at prompt": report["tv_joint_constant"],
        "Mean TV, reward marginal at prompt": report["tv_reward_constant"],
        "Remaining-length MAE at prompt (tokens)": report["length_mae_constant"],
    }
    lines = [
        f"Calibration: {report['prompts']} prompts x {report['samples']} samples, success rate "
        f"{report['success_rate']:.3f}, mean length {report['mean_length']:.1f} tokens",
        "",
        "| metric | head | reference |",
        "|---|---:|---:|",
    ]
    for name, value, chance in rows:
        ref = chance if chance is not None else (_fmt(refs[name]) if name in refs else "-")
        lines.append(f"| {name} | {_fmt(value)} | {ref} |")
    lines.append("")
    lines.append(
        "Reference: AUC of chance; TV and MAE of a constant predictor (the pooled distribution "
        "/ mean length of these same rollouts)."
    )
    sel = report["selection"]
    if sel:
        lines += ["", "| method | accuracy |", "|---|---:|"]
        order = ("random", "value", "majority", "oracle")
        for key in sorted(sel, key=lambda s: (int(s.split("@")[1]), order.index(s.split("@")[0]))):
            lines.append(f"| {key} | {sel[key]:.3f} |")
    return "\n".join(lines)
