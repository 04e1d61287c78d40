"""What a bigger step buys: steps to uniform's final pass@1 as rows a step grow, and the
noise-scale law S = S_min (1 + N_noise / N) fitted to them, with a bootstrap 95% CI.

    python benchmarks/noise_scale.py benchmarks/results/real_rl_format_lr4_step_size_full.json \
        --name noise_scale_format_lr4

Reads a bench-rl report's `_full.json` (its per-seed steps to the paired uniform run's final
held-out pass@1, `device.steps_to_final`, and uniform's own) and fits, for the entries that
grow the step by prompts (uniform-b*, K fixed) and by rollouts (uniform-k*, B fixed), with
N = B x K rows a step: S(N) = a + b / N by least squares on the seed-mean S at each N, so that
S_min = a and N_noise = b / a (the gradient-noise scale, in rows; McCandlish et al. 2018).
Seeds resampled with replacement, paired across entries (10,000 resamples). A seed that never
reaches the target at some N is left out of that N's mean, and counted.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.scripts import RESULTS_DIR, command_line, write_outputs

SIZED = re.compile(r"^uniform(?:-b(?P<b>\d+))?(?:-k(?P<k>\d+))?$")


def rows_of(label: str, batch: int, group: int) -> tuple[str, int] | None:
    """('prompts' or 'rollouts', N) for a uniform entry of another step size, else None."""
    m = SIZED.match(label)
    if not m:
        return None
    b, k = int(m["b"] or batch), int(m["k"] or group)
    axis = "rollouts" if m["k"] else "prompts"
    return axis, b * k


def fit(ns: np.ndarray, steps: np.ndarray) -> tuple[float, float]:
    """(S_min, N_noise) of S = a + b / N by least squares; N_noise nan when a <= 0."""
    x = np.column_stack([np.ones_like(ns), 1.0 / ns])
    (a, b), *_ = np.linalg.lstsq(x, steps, rcond=None)
    return float(a), float(b / a) if a > 0 else math.nan


def series(
    labels: dict[str, Any], axis: str, batch: int, group: int, target: str
) -> dict[int, list[Any]]:
    """N -> per-seed steps to the target (None: never reached), uniform's own at B x K."""
    out: dict[int, list[Any]] = {}
    base = next(iter(labels.values()))["device"][f"base_steps_to_{target}"]["values"]
    out[batch * group] = list(base)
    for label, row in labels.items():
        got = rows_of(label, batch, group)
        if got is None or label == "uniform" or got[0] != axis:
            continue
        out[got[1]] = list(row["device"][f"steps_to_{target}"]["values"])
    return out


def fit_series(data: dict[int, list[Any]], resamples: int, seed: int) -> dict[str, Any]:
    ns = np.array(sorted(data), dtype=np.float64)
    n_seeds = len(next(iter(data.values())))
    table = np.array(
        [[math.nan if v is None else float(v) for v in data[int(n)]] for n in ns]
    )  # (N, seeds)

    def means(cols: np.ndarray) -> np.ndarray:
        return np.array(
            [np.nanmean(row[cols]) if np.isfinite(row[cols]).any() else math.nan for row in table]
        )

    point = means(np.arange(n_seeds))
    s_min, n_noise = fit(ns, point)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(resamples):
        m = means(rng.integers(0, n_seeds, n_seeds))
        if np.isfinite(m).all():
            boot.append(fit(ns, m))
    arr = np.array(boot)

    def ci(col: int) -> list[float]:
        vals = arr[:, col][np.isfinite(arr[:, col])]
        if vals.size == 0:
            return [math.nan, math.nan]
        return [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))]

    return {
        "rows": [int(n) for n in ns],
        "mean_steps": [float(v) for v in point],
        "reached": [int(np.isfinite(row).sum()) for row in table],
        "seeds": n_seeds,
        "s_min": s_min,
        "s_min_ci": ci(0),
        "n_noise": n_noise,
        "n_noise_ci": ci(1),
        "n_noise_undefined_share": float(np.mean(~np.isfinite(arr[:, 1]))),
    }


def markdown(name: str, source: str, fits: dict[str, Any], command: str, target: str) -> list[str]:
    what = (
        "final held-out pass@1" if target == "final" else "half gain (start + (final - start) / 2)"
    )
    lines = [
        f"# What a bigger step buys: {name}",
        "",
        f"    {command}",
        "",
        f"From `{source}`. Steps to the paired uniform run's {what} (seed-mean "
        "over the seeds that reach it), and S = S_min (1 + N_noise / N) fitted with N the rows "
        "a step; bootstrap 95% CIs over seeds (paired across entries).",
        "",
    ]
    for axis, f in fits.items():
        if len(f["rows"]) < 2:
            continue
        lines += [
            f"## Growing the step by {axis}",
            "",
            f"| rows a step N | mean steps to uniform's {target} target | seeds reached |",
            "|---:|---:|---:|",
            *(
                f"| {n} | {s:.1f} | {r}/{f['seeds']} |"
                for n, s, r in zip(f["rows"], f["mean_steps"], f["reached"], strict=True)
            ),
            "",
            f"S_min = {f['s_min']:.1f} [{f['s_min_ci'][0]:.1f}, {f['s_min_ci'][1]:.1f}] steps; "
            f"N_noise = {f['n_noise']:.0f} [{f['n_noise_ci'][0]:.0f}, {f['n_noise_ci'][1]:.0f}] "
            f"rows (undefined in {100 * f['n_noise_undefined_share']:.0f}% of resamples).",
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("full_json", type=Path, help="a bench-rl report's <name>_full.json")
    p.add_argument("--name", required=True, help="output name under --out")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument(
        "--target",
        choices=("final", "half"),
        default="final",
        help="uniform's final pass@1, or half its gain (start + (final - start) / 2)",
    )
    args = p.parse_args(argv)
    full = json.loads(args.full_json.read_text(encoding="utf-8"))
    train = full["testbed"]["train"]
    batch, group = int(train["batch_size"]), int(train["group_size"])
    labels = full["summary"]["labels"]
    labels = {k: v for k, v in labels.items() if k != "uniform" and "device" in v}
    fits = {
        axis: fit_series(series(labels, axis, batch, group, args.target), args.resamples, seed=0)
        for axis in ("prompts", "rollouts")
    }
    command = command_line()
    data = {"command": command, "source": str(args.full_json), "target": args.target}
    data["fits"] = fits
    lines = markdown(args.name, str(args.full_json), fits, command, args.target)
    write_outputs(args.out, args.name, data, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
