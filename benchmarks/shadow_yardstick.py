"""The shadow's yardstick: what `skip`'s shadow showed where `skip` with `rollouts: kept` lost.

"Switch when the shadow shows little lost" needs a number in the shadow's own units. Per
regime of the run ledger whose uniform runs left their reward logs (`bench-rl --reward-log`:
`seed<s>.rewards.jsonl.gz`), this replays `skip` (the adapters' default shadow: what `skip`
with `rollouts: kept` would save and lose) on uniform's own rewards with `frontier shadow
replay`'s `replay`, as a user's run shows it at its end, and sets its figures beside what
`skip` with `kept` cost in held-out score there (the regime's paired A/B, quoted from its
results page). A reward log names prompts by id only; `skip` reads prompt features, so each
seed's pool is regenerated from its run's own record (task, levels, pool size and pool seed:
the tasks are generated deterministically), checked against the record's start-state count of
prompts per level, and given as the replay's prompts (features derived from their text, as an
adapter's pool without features derives them; the live run's skip read the policy's
self-embeddings). Per regime: the mean and bootstrap 95% CI over seeds of the shadow's
figures, over the whole run and over its second pass (epoch 2, where skip leaves groups out):
rollouts saved share, precision, informative groups lost (count, and share of uniform's
informative groups) and |A| lost share.

    python benchmarks/shadow_yardstick.py --out benchmarks/results --name shadow_yardstick

One seed with the command line (`--write-prompts DIR` writes every seed's pool, then exits):

    python benchmarks/shadow_yardstick.py --write-prompts /tmp/pools
    frontier shadow replay \\
        benchmarks/ledger/a633e2cc481f/cpu/uniform/61328573/seed0.rewards.jsonl.gz \\
        --rule skip --prompts /tmp/pools/fast-format-lr4-seed0.prompts.jsonl
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.metrics import mean_ci
from frontier_rft.bench.real_rl.ledger import MAX_RECORD_BYTES
from frontier_rft.bench.scripts import command_line, file_stem, write_outputs
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.shadow.replay import read_reward_log, replay
from frontier_rft.tasks.suite import load_task, train_split

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "benchmarks" / "ledger"
RULE = "skip"
"""The adapters' default shadow: `skip` with `rollouts: kept`."""


@dataclass(frozen=True)
class Regime:
    """A testbed of the ledger with uniform's reward logs, and what `kept` cost there."""

    name: str
    folder: str
    """The ledger's <testbed digest>/<device class>."""
    seeds: tuple[int, ...]
    kept_lost: bool
    """Whether skip with rollouts: kept lost held-out score there (its CI below 0)."""
    kept: str
    """What skip with rollouts: kept cost there, and where that is reported."""


REGIMES = (
    Regime(
        "smollm2",
        "65008bd2b869/cuda",
        tuple(range(40, 46)),
        True,
        "pass@1 last quarter −0.021 [−0.032, −0.007] at 0.78x (6 pairs, seeds 0-5; "
        "docs/results/fast_regime.md; these logs: uniform's fresh seeds 40-45)",
    ),
    Regime(
        "fast-format-lr4",
        "a633e2cc481f/cpu",
        (*range(10), *range(20, 30)),
        True,
        "pass@1 last quarter −0.024 [−0.044, −0.006] at 0.77x (20 pairs, seeds 0-19 pooled; "
        "−0.041 [−0.069, −0.012] on seeds 0-9; docs/results/fast_regime.md; these logs: "
        "seeds 0-9 and the calibration seeds 20-29)",
    ),
    Regime(
        "fast-format",
        "9ce0bba6df80/cpu",
        tuple(range(10)),
        False,
        "within noise: pass@1 last quarter −0.005 [−0.027, +0.018] at 0.78x (10 pairs; "
        "docs/results/fast_regime.md)",
    ),
    Regime(
        "fast-nucleus",
        "bfb0aef89a53/cpu",
        tuple(range(5)),
        False,
        "within noise: pass@1 last quarter −0.009 [−0.022, +0.003] at 0.83x (5 pairs; "
        "docs/results/fast_regime.md)",
    ),
    Regime(
        "fast",
        "cebabb1e33c3/cpu",
        tuple(range(15)),
        False,
        "within noise: pass@1 last quarter −0.005 [−0.012, +0.004] at 0.84x (10 pairs; "
        "docs/results/audited_skip.md)",
    ),
    Regime(
        "standard",
        "fcca87e79ef9/cpu",
        tuple(range(3)),
        False,
        "no loss: pass@1 last quarter +0.002 [−0.004, +0.007] at 0.82x (20 pairs; "
        "docs/results/audited_skip.md; these logs: uniform's seeds 0-2 run again with "
        "--reward-log, every reward and evaluation as the records')",
    ),
)
"""The regimes whose uniform runs left reward logs in the ledger."""

FIGURES = (
    ("rollouts_saved_share", "saved share"),
    ("skip_precision", "precision"),
    ("informative_lost", "informative lost"),
    ("informative_lost_share", "informative lost / uniform's"),
    ("abs_advantage_lost_share", "abs(A) lost"),
)
"""The shadow's figures reported, as its end-of-run table names them."""


def read_record(path: Path) -> dict[str, Any]:
    """A ledger record (bounded, as the ledger reads one)."""
    with gzip.open(path, "rb") as fh:
        raw = fh.read(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise SystemExit(f"shadow_yardstick: {path} is larger than {MAX_RECORD_BYTES} bytes")
    record = loads_bounded(raw.decode("utf-8"), max_chars=MAX_RECORD_BYTES, max_depth=16)
    if not isinstance(record, dict):
        raise SystemExit(f"shadow_yardstick: {path} is not a run ledger record")
    return record


def uniform_runs(regime: Regime) -> list[tuple[int, Path, Path]]:
    """(seed, record, reward log) of each of the regime's seeds with a reward log."""
    found = []
    for seed in regime.seeds:
        logs = sorted((LEDGER / regime.folder / "uniform").glob(f"*/seed{seed}.rewards.jsonl.gz"))
        if len(logs) != 1:
            raise SystemExit(
                f"shadow_yardstick: {regime.folder}/uniform holds {len(logs)} reward logs of "
                f"seed {seed}, expected 1"
            )
        found.append((seed, logs[0].with_name(f"seed{seed}.json.gz"), logs[0]))
    return found


def pool_prompts(record: dict[str, Any]) -> tuple[str, ...]:
    """The run's training pool's prompts by id, regenerated from its settings and checked
    against its start state's count of prompts per level."""
    c = record["info"]["config"]
    items = train_split(
        load_task(c["task"], c["format_reward"]), c["train_size"], c["train_seed"], c["levels"]
    )
    levels = collections.Counter(str(item.level) for item in items)
    recorded = {k: v["tasks"] for k, v in record["start_state"]["per_level"].items()}
    if dict(levels) != recorded:
        raise SystemExit(
            f"shadow_yardstick: seed {record['seed']}'s pool regenerates as {dict(levels)} "
            f"prompts per level, its record says {recorded}: not the run's pool"
        )
    return tuple(item.prompt for item in items)


def informative_groups(log: Path, pass_size: int) -> tuple[int, int]:
    """Uniform's mixed groups over the whole run and in its second pass over the pool."""
    total = second = 0
    for step in read_reward_log(log):
        mixed = int((step.rewards.min(axis=1) != step.rewards.max(axis=1)).sum())
        total += mixed
        second += mixed if step.step * step.task_ids.size // pass_size == 1 else 0
    return total, second


def replay_seed(record: Path, log: Path) -> dict[str, Any]:
    """The skip shadow's figures on one uniform run: whole run and second pass."""
    shadow = replay(log, [RULE], prompts=pool_prompts(read_record(record)))[0]
    rows = shadow.passes()
    mixed = informative_groups(log, shadow.pass_size)
    out: dict[str, Any] = {}
    for label, row, informative in (("all", rows[-1], mixed[0]), ("pass2", rows[1], mixed[1])):
        figures = {key: row[key] for key, _ in FIGURES if key in row}
        figures["informative_lost_share"] = row["informative_lost"] / informative
        out[label] = figures
    return out


def _cell(stat: dict[str, Any], key: str) -> str:
    if stat["mean"] is None:
        return "—"
    lo, hi = stat["ci"]
    if key == "informative_lost":
        return f"{stat['mean']:.0f} [{lo:.0f}, {hi:.0f}]"
    return f"{stat['mean']:.0%} [{lo:.0%}, {hi:.0%}]"


def yardstick(regimes: dict[str, Any]) -> dict[str, Any]:
    """Per figure of the whole run: the range of the regimes' means where kept lost and where
    it did not, and whether the two ranges are apart (the figure tells them apart)."""
    out = {}
    for key, _ in FIGURES:
        sides = {}
        for side, lost in (("kept_lost", True), ("kept_did_not_lose", False)):
            means = [r["all"][key]["mean"] for r in regimes.values() if r["kept_lost"] is lost]
            sides[side] = [min(means), max(means)]
        a, b = sides["kept_lost"], sides["kept_did_not_lose"]
        out[key] = {**sides, "apart": a[0] > b[1] or a[1] < b[0]}
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    names = " | ".join(label for _, label in FIGURES)
    lines = [
        "# The shadow's yardstick: what skip's shadow showed where skip with kept lost",
        "",
        f"Command: `{result['command']}`  ",
        f"Rule: `{RULE}` (the adapters' default shadow), replayed on uniform's own reward logs "
        "from the run ledger over each seed's regenerated pool (features from the prompts' "
        "text). Mean and bootstrap 95% CI over seeds.",
        "",
    ]
    for part, title in (("all", "whole run (2 epochs)"), ("pass2", "epoch 2 alone")):
        lines += [
            f"## {title}",
            "",
            f"| regime | kept lost? | seeds | {names} | what skip with kept cost there |",
            "|---|---|---:|" + "---:|" * len(FIGURES) + "---|",
        ]
        for name, r in result["regimes"].items():
            cells = " | ".join(_cell(r[part][key], key) for key, _ in FIGURES)
            verdict = "**lost**" if r["kept_lost"] else "no"
            lines.append(f"| {name} | {verdict} | {r['seeds']} | {cells} | {r['kept']} |")
        lines.append("")
    lines += [
        "## The yardstick (whole run: the range of the regimes' means)",
        "",
        "| figure | where kept lost | where it did not | apart |",
        "|---|---:|---:|---|",
    ]
    for key, label in FIGURES:
        y = result["yardstick"][key]
        fmt = "{:.0f}" if key == "informative_lost" else "{:.0%}"
        lost, kept = (" to ".join(fmt.format(v) for v in y[side]) for side in y if side != "apart")
        lines.append(f"| {label} | {lost} | {kept} | {'yes' if y['apart'] else 'no'} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="benchmarks/results", help="results directory")
    p.add_argument("--name", type=file_stem, default="shadow_yardstick", help="file stem")
    p.add_argument(
        "--write-prompts",
        type=Path,
        default=None,
        metavar="DIR",
        help="write each seed's pool as DIR/<regime>-seed<s>.prompts.jsonl (for "
        "`frontier shadow replay --prompts`) and exit",
    )
    args = p.parse_args(argv)
    if args.write_prompts is not None:
        args.write_prompts.mkdir(parents=True, exist_ok=True)
        for regime in REGIMES:
            for seed, record, _ in uniform_runs(regime):
                texts = pool_prompts(read_record(record))
                path = args.write_prompts / f"{regime.name}-seed{seed}.prompts.jsonl"
                path.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
        return 0
    regimes: dict[str, Any] = {}
    for regime in REGIMES:
        per_seed = {seed: replay_seed(record, log) for seed, record, log in uniform_runs(regime)}
        summary: dict[str, Any] = {
            "folder": regime.folder,
            "seeds": len(per_seed),
            "kept_lost": regime.kept_lost,
            "kept": regime.kept,
        }
        for part in ("all", "pass2"):
            summary[part] = {
                key: mean_ci([s[part].get(key, math.nan) for s in per_seed.values()])
                for key, _ in FIGURES
            }
        summary["per_seed"] = per_seed
        regimes[regime.name] = summary
        print(f"shadow_yardstick: {regime.name}: {len(per_seed)} seeds replayed", flush=True)
    result = {"command": command_line(), "rule": RULE, "regimes": regimes}
    result["yardstick"] = yardstick(regimes)
    write_outputs(args.out, args.name, _jsonable(result), markdown(result))
    return 0


def _jsonable(value: Any) -> Any:
    """NaN as null (a pass with nothing left out has no precision)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    return value


if __name__ == "__main__":
    raise SystemExit(main())
