"""What a bigger step buys: steps to a named target as rows a step grow, and the noise-scale
law S = S_min (1 + N_noise / N) fitted to them where the data can carry it.

    python benchmarks/noise_scale.py benchmarks/results/real_rl_format_lr4_grid_full.json \
        --name noise_scale_format_lr4 --target half

Reads a bench-rl report's `_full.json` (each seed's steps to the target, read at evaluation
points, censored where never reached: `device.time_<target>_steps`) for the entries that grow
the step by prompts (uniform-b*, K fixed) and by rollouts (uniform-k*, B fixed), N = B x K,
and fits the law to the Kaplan-Meier median steps at each N (frontier_rft.bench.real_rl.
noise_fit, which says when a fit is withdrawn and why).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.device_report import TARGETS
from frontier_rft.bench.real_rl.noise_fit import noise_fit, steps_series
from frontier_rft.bench.scripts import RESULTS_DIR, command_line, write_outputs


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(name: str, data: dict[str, Any]) -> list[str]:
    lines = [
        f"# What a bigger step buys: {name}",
        "",
        f"    {data['command']}",
        "",
        f"From `{data['source']}` ({data['seeds']} paired seeds). Target: "
        f"{TARGETS[data['target']]}. Steps to it per seed, read at evaluation points; each row "
        "count's steps are the Kaplan-Meier median over seeds (a seed that never reached is "
        "censored at its budget, not dropped). Learning rate "
        f"{data['lr']:g}, the same for every row count (the law assumes it re-tuned for each); "
        "a larger step walks more passes over the pool in its steps.",
        "",
    ]
    for axis, f in data["fits"].items():
        if not f["rows"]:
            continue
        lines += [
            f"## Growing the step by {axis}",
            "",
            "| rows a step N | median steps to the target | seeds reached | evaluations before "
            "(median) |",
            "|---:|---:|---:|---:|",
            *(
                f"| {n} | {_num(m)} | {r}/{f['seeds']} | {e:.0f} |"
                for n, m, r, e in zip(
                    f["rows"], f["median_steps"], f["reached"], f["evals_before"], strict=True
                )
            ),
            "",
        ]
        if f["withdrawn"]:
            lines += ["**No fit** (withdrawn): " + "; ".join(f["withdrawn"]) + ".", ""]
            continue
        lo, hi = f["n_noise_ci"]
        lines += [
            f"S_min = {f['s_min']:.1f} [{f['s_min_ci'][0]:.1f}, {f['s_min_ci'][1]:.1f}] steps; "
            f"N_noise = {f['n_noise']:.0f} [{lo:.0f}, {hi:.0f}] rows (bootstrap 95% CIs over "
            f"seeds; undefined in {100 * f['n_noise_undefined_share']:.0f}% of resamples).",
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("full_json", type=Path, help="a bench-rl report's <name>_full.json")
    p.add_argument("--name", required=True, help="output name under --out")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--resamples", type=int, default=2_000)
    p.add_argument("--target", choices=tuple(TARGETS), default="half", help="the named target")
    args = p.parse_args(argv)
    full = json.loads(args.full_json.read_text(encoding="utf-8"))
    train = full["testbed"]["train"]
    batch, group = int(train["batch_size"]), int(train["group_size"])
    labels = full["summary"]["labels"]
    fits = {
        axis: noise_fit(
            steps_series(labels, axis, batch, group, args.target), resamples=args.resamples
        )
        for axis in ("prompts", "rollouts")
    }
    data = {
        "command": command_line(),
        "source": str(args.full_json),
        "target": args.target,
        "lr": float(train["lr"]),
        "seeds": len(full["summary"]["seeds"]),
        "fits": fits,
    }
    write_outputs(args.out, args.name, data, markdown(args.name, data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
