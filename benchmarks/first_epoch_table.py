"""Issue 62's table, from the run ledger alone: per entry, rollouts in uniform's first epoch and
over the whole run, generated tokens, held-out pass@1 and pass@8 at the end (and pass@1 over the
last quarter of evaluations) minus uniform's, paired by seed with bootstrap 95% CIs, and distinct
prompts trained. Nothing is run. `--against ENTRY` pairs with another entry than uniform.

    python benchmarks/first_epoch_table.py --pool-size 512 --steps 64 --seeds 0-9 \
        --entries skip-kept,scalerl,scalerl-kept,skip-eager-kept
    python benchmarks/first_epoch_table.py --pool-size 1280 --steps 160 --seeds 0-4 \
        --entries skip-kept,scalerl-kept
    python benchmarks/first_epoch_table.py --pool-size 1280 --steps 160 --seeds 10-19 \
        --entries skip-predict-kept-w50-backfill --against skip-kept

Prints a markdown table (the rows of docs/results/first_epoch.md) and, for entries whose
selector logs its predictor's calibration (`skip-predict`, `predict-only`), a second one: per
epoch and side (all-correct, all-wrong), the Brier score beside the base rate's (the share's own
variance, what a constant prediction scores), the AUC, and the mean prediction beside the
observed share, each the mean over the seeds' last logged value of the epoch (nan AUCs, a side
with one class, left out). `--skip-cost` adds issue 70's per-epoch table for entries that pass
over groups: the share of B x steps left out, the left-out groups' mixed rate against the base
rate, and the mixed groups lost as a share of the paired run's
(`frontier_rft.bench.real_rl.skip_cost`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci
from frontier_rft.bench.real_rl.ledger import read_record

ROOT = Path(__file__).resolve().parents[1]
LEDGERS = (ROOT / "benchmarks" / "ledger" / "timed", ROOT / "benchmarks" / "ledger")


def _record(
    digest: str, entry: str, seed: int, ledgers: tuple[Path, ...] = LEDGERS
) -> dict[str, Any] | None:
    """The entry's record of `seed` in the first of `ledgers` that holds it (one definition
    per entry here); None when none does."""
    for ledger in ledgers:
        for path in sorted((ledger / digest / "cpu" / entry).glob(f"*/seed{seed}.json.gz")):
            return read_record(path)  # the ledger's own reader: bounded, every value checked
    return None


def _ledger_of(digest: str, entry: str) -> tuple[Path, ...]:
    """The ledger that holds `entry`'s runs, so that it is paired with that ledger's runs of
    the entry it is compared with (the timed and untimed ledgers' runs ran on other code)."""
    held = [ledger for ledger in LEDGERS if (ledger / digest / "cpu" / entry).is_dir()]
    return tuple(held[:1]) or LEDGERS


def _col(rec: dict[str, Any], name: str) -> list[float]:
    return [float(v) for v in rec["columns"].get(name, []) if v is not None]


def _facts(rec: dict[str, Any], epoch_steps: int) -> dict[str, float]:
    """What the table reads of one record; tokens and distinct prompts trained as the bench's
    own report counts them (records that predate a count give nan, shown as "—")."""
    from frontier_rft.bench.real_rl.ledger import run_from_record
    from frontier_rft.bench.real_rl.report import distinct_trained, generated_tokens

    rollouts = _col(rec, "train/rollouts")
    p1, p8 = _col(rec, "eval/pass@1"), _col(rec, "eval/pass@8")
    quarter = max(1, math.ceil(len(p1) / 4))
    run = run_from_record(rec)
    trained = distinct_trained(run)[0]
    return {
        "epoch1": sum(rollouts[:epoch_steps]),
        "all": sum(rollouts),
        "tokens": generated_tokens(run),
        "cpu": sum(_col(rec, "perf/step_cpu_s")) or float("nan"),
        "pass1": p1[-1],
        "pass8": p8[-1],
        "pass1_last_quarter": float(np.mean(p1[-quarter:])),
        "trained": float("nan") if trained is None else trained,
        "steps": float(len(rollouts)),  # a fewer_steps run ends early
    }


def _fmt(ci: dict[str, Any], digits: int = 3, ratio: bool = False) -> str:
    if ci["mean"] is None:
        return "—"
    lo, hi = ci["ci"]
    if ratio:
        return f"{ci['mean']:.2f}x [{lo:.2f}, {hi:.2f}]"
    return f"{ci['mean']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def table(
    pool_size: int, steps: int, seeds: list[int], entries: list[str], against: str = "uniform"
) -> str:
    from frontier_rft.bench.real_rl.ledger import testbed_digest
    from frontier_rft.bench.real_rl.testbed import standard_cpu_testbed

    digest = TESTBED or testbed_digest(standard_cpu_testbed(pool_size, steps))
    epoch_steps = pool_size // 16
    lines = [
        f"| entry ({pool_size} prompts, seeds {seeds[0]}-{seeds[-1]}) | epoch-1 rollouts | "
        f"all rollouts | generated tokens | training CPU time | pass@1 − {against} | "
        "pass@1 last quarter | "
        f"pass@8 − {against} | distinct prompts trained | steps |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in [against, *entries]:
        rows = []
        ledger = _ledger_of(digest, entry)
        for s in seeds:
            rec, ref = _record(digest, entry, s, ledger), _record(digest, against, s, ledger)
            if rec is None or ref is None:
                continue
            rows.append((_facts(rec, epoch_steps), _facts(ref, epoch_steps)))
        if not rows:
            lines.append(f"| {entry} | no runs | | | | | | | | |")
            continue

        def ratio(key: str, rows: list[Any] = rows) -> str:
            return _fmt(mean_ci([a[key] / b[key] for a, b in rows]), ratio=True)

        def diff(key: str, rows: list[Any] = rows) -> str:
            return _fmt(mean_ci([a[key] - b[key] for a, b in rows]))

        trained = mean_ci([a["trained"] for a, _ in rows])
        lines.append(
            f"| {entry} ({len(rows)} seeds) | {ratio('epoch1')} | {ratio('all')} | "
            f"{ratio('tokens')} | {ratio('cpu')} | {diff('pass1')} | "
            f"{diff('pass1_last_quarter')} | "
            f"{diff('pass8')} | "
            + ("—" if trained["mean"] is None else f"{trained['mean']:.0f}")
            + f" | {ratio('steps')} |"
        )
    return "\n".join(lines)


CALIBRATION = "curriculum/{selector}/calibration/epoch{e}/{name}"
TESTBED = ""
"""--testbed: a ledger testbed digest instead of the standard testbed's (e.g. the fast
regime's, cebabb1e33c3); --pool-size and --steps still say its epochs."""


def calibration_key(entry: str, e: int, name: str) -> str | None:
    """The ledger column of `entry`'s predictor calibration `name` in epoch e: the metric
    is its selector's (skip-predict, predict-only); None for a label no bench entry has."""
    from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES

    selector = next((b.selector for b in MAIN_ENTRIES + EFFECT_ENTRIES if b.label == entry), None)
    return None if selector is None else CALIBRATION.format(selector=selector, e=e, name=name)


def calibration_table(pool_size: int, steps: int, seeds: list[int], entries: list[str]) -> str:
    """Per entry that logs it: its predictor's calibration per epoch and side (see above)."""
    from frontier_rft.bench.real_rl.ledger import testbed_digest
    from frontier_rft.bench.real_rl.testbed import standard_cpu_testbed

    digest = TESTBED or testbed_digest(standard_cpu_testbed(pool_size, steps))
    lines = [
        f"| entry ({pool_size} prompts) | epoch | side | groups | Brier (base rate's) | AUC | "
        "mean prediction (observed share) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for entry in entries:
        records = [r for s in seeds if (r := _record(digest, entry, s)) is not None]
        for e in range(1, 1 + math.ceil(steps * 16 / pool_size)):
            for side in ("correct", "wrong"):

                def last(
                    name: str,
                    side: str = side,
                    e: int = e,
                    records: list[Any] = records,
                    entry: str = entry,
                ) -> list[float]:
                    key = calibration_key(entry, e, f"{name}_{side}" if name else "groups")
                    vals = [_col(r, key) for r in records] if key else []
                    return [v[-1] for v in vals if v and math.isfinite(v[-1])]

                share = last("share")
                if not share:
                    continue
                base = float(np.mean([q * (1 - q) for q in share]))
                auc = last("auc")
                lines.append(
                    f"| {entry} ({len(share)} seeds) | {e} | all-{side} | "
                    f"{np.mean(last('')):.0f} | {np.mean(last('brier')):.3f} ({base:.3f}) | "
                    + (f"{np.mean(auc):.2f} ({len(auc)} seeds)" if auc else "—")
                    + f" | {np.mean(last('mean')):.3f} ({np.mean(share):.3f}) |"
                )
    return "\n".join(lines) if len(lines) > 2 else ""


def skip_cost_table(
    pool_size: int, steps: int, seeds: list[int], entries: list[str], against: str = "uniform"
) -> str:
    """Per entry, what passing over groups cost per epoch (`skip_cost_lines`), paired with
    `against` in the ledger that holds the entry."""
    from frontier_rft.bench.real_rl.ledger import testbed_digest
    from frontier_rft.bench.real_rl.skip_cost import ledger_skip_cost, skip_cost_lines
    from frontier_rft.bench.real_rl.testbed import standard_cpu_testbed

    digest = TESTBED or testbed_digest(standard_cpu_testbed(pool_size, steps))
    costs = ledger_skip_cost(LEDGERS, digest, "cpu", entries, seeds, against=against)
    return "\n".join(skip_cost_lines(costs)) if costs else ""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool-size", type=int, default=512)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--seeds", default="0-9")
    p.add_argument("--entries", default="skip-kept")
    p.add_argument("--against", default="uniform", help="the entry each is paired with")
    p.add_argument(
        "--skip-cost", action="store_true", help="add the per-epoch skip-cost table (issue 70)"
    )
    p.add_argument("--testbed", default="", help="a ledger testbed digest (default: standard's)")
    args = p.parse_args()
    from frontier_rft.bench.scripts import seed_list

    global TESTBED
    TESTBED = args.testbed

    seeds = seed_list(args.seeds)
    entries = args.entries.split(",")
    print(table(args.pool_size, args.steps, seeds, entries, args.against))
    calibration = calibration_table(args.pool_size, args.steps, seeds, entries)
    if calibration:
        print("\n" + calibration)
    if args.skip_cost:
        print("\n" + skip_cost_table(args.pool_size, args.steps, seeds, entries, args.against))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
