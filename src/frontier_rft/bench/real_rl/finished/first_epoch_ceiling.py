"""What any skip could save in uniform's first epoch: the ceiling for issue 62
(`benchmarks/first_epoch_ceiling.py` runs it; its page is
benchmarks/results/first_epoch_ceiling.md).

Uniform reruns on the standard CPU testbed (the ledger's start weights) with the reward log
on (`run`), each checked against the ledger's record of the same seed, then counted per epoch
and per level: the share of uniform's groups that came out all-correct, all-wrong and mixed
(`count`). A perfect oracle that skipped exactly the flat groups (and paid nothing to know
them) would spend the mixed share of uniform's rollouts; a skip that only reads a prompt's own
history can skip nothing in epoch 1, since every prompt there is untried. The committed
uniform records give the mixed share over every seed (`ledger_mixed_share`,
`testbed_mixed_share`); `page` writes the page.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.real_rl.testbed import FAST_START_WEIGHTS, standard_cpu_testbed

__all__ = [
    "KINDS",
    "SMOLLM2_TESTBED",
    "count",
    "ledger_mixed_share",
    "ledger_roots",
    "page",
    "run",
    "testbed_mixed_share",
]


def ledger_roots(repo: Path) -> tuple[Path, Path]:
    """The ledgers uniform's committed records are read from, under the repository `repo`:
    benchmarks/ledger, then the timed ledger beside it (benchmarks/ledger/timed)."""
    main = repo / "benchmarks" / "ledger"
    return main, main / "timed"


KINDS = ("all_correct", "all_wrong", "mixed")


def run(pool_size: int, steps: int, seeds: list[int], runs: Path, jobs: int, ledger: Path) -> int:
    """Uniform with the reward log on, one run a seed, resumable, from the start weights of
    the ledger at `ledger` (benchmarks/ledger); the number of runs that failed."""
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES
    from frontier_rft.bench.real_rl.runs import run_all, run_specs
    from frontier_rft.bench.real_rl.start_models import prepare_start_model

    tb = standard_cpu_testbed(pool_size, steps)
    root = runs / f"pool{pool_size}_steps{steps}"
    model_dir = prepare_start_model(tb, root, ledger_root=ledger)
    uniform = next(e for e in MAIN_ENTRIES if e.label == "uniform")
    specs = [
        dataclasses.replace(
            s, config=dataclasses.replace(s.config, reward_log=True), start_state=None
        )
        for s in run_specs(tb, [uniform], seeds, model_dir, root)
    ]
    return len(run_all(specs, jobs))


def _ledger_record(pool_size: int, steps: int, seed: int, timed: Path) -> dict[str, Any] | None:
    """The timed ledger's uniform record of this testbed and seed (None when it has none)."""
    from frontier_rft.bench.real_rl.ledger import read_record, testbed_digest

    digest = testbed_digest(standard_cpu_testbed(pool_size, steps))
    for path in sorted((timed / digest / "cpu" / "uniform").glob(f"*/seed{seed}.json.gz")):
        return read_record(path)
    return None


def ledger_mixed_share(pool_size: int, steps: int, ledgers: Sequence[Path]) -> dict[str, Any]:
    """The standard CPU testbed's `testbed_mixed_share` at this pool and schedule: the oracle's
    spend on every seed the ledgers hold, without the all-correct / all-wrong split."""
    from frontier_rft.bench.real_rl.ledger import testbed_digest

    digest = testbed_digest(standard_cpu_testbed(pool_size, steps))
    return testbed_mixed_share(digest, "cpu", ledgers)


SMOLLM2_TESTBED = "619d1051399b"
"""The ledger's SmolLM2-135M-Instruct testbed (GPU, arithmetic, 512 prompts, 64 steps of 16:
2 epochs): the only pretrained-LM start state the ledger holds uniform runs of."""


def testbed_mixed_share(digest: str, device: str, ledgers: Sequence[Path]) -> dict[str, Any]:
    """Per epoch (the first and second half of the steps), each committed uniform seed's mean
    share of mixed groups (its logged effective task ratio) and mean training success rate,
    from the records of testbed `digest` on `device` in `ledgers` (`ledger_roots`: a seed
    the first holds counts from it; `twins` says whether a later one's record differs)."""
    from frontier_rft.bench.real_rl.ledger import read_record

    per_seed: dict[int, dict[str, float]] = {}
    twins: dict[int, bool] = {}  # a seed also held by a later ledger: whether it differs
    for ledger in ledgers:
        for path in sorted((ledger / digest / device / "uniform").glob("*/seed*.json.gz")):
            seed = int(path.name[4:].split(".")[0])
            cols = read_record(path)["columns"]  # the ledger's reader: bounded, checked
            etr = [v for v in cols["train/effective_task_ratio"] if v is not None]
            success = [v for v in cols["train/success_rate"] if v is not None]
            half = len(etr) // 2
            shares = {
                "1": float(np.mean(etr[:half])),
                "2": float(np.mean(etr[half:])),
                "success1": float(np.mean(success[:half])),
                "success2": float(np.mean(success[half:])),
            }
            if seed in per_seed:  # the first ledger's record counts; say what the other holds
                twins[seed] = shares != per_seed[seed]
                continue
            per_seed[seed] = shares
    out: dict[str, Any] = {"seeds": sorted(per_seed), "mixed": per_seed}
    if twins:
        out["twins"] = {str(s): twins[s] for s in sorted(twins)}
    return out


def _seed_list(seeds: list[int]) -> str:
    """'0-9, 15' from [0, ..., 9, 15]."""
    runs: list[list[int]] = []
    for s in sorted(seeds):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _run_evals(run_dir: Path) -> list[float]:
    out = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "eval/pass@1" in rec:
            out.append(round(float(rec["eval/pass@1"]), 6))
    return out


def count(pool_size: int, steps: int, seed: int, runs: Path, timed: Path) -> dict[str, Any]:
    """Per epoch and level: groups all-correct, all-wrong, mixed; rollouts; whether the rerun
    reproduces the timed ledger's (`timed`) record of the seed."""
    from frontier_rft.tasks.suite import load_task, train_split

    tb = standard_cpu_testbed(pool_size, steps)
    cfg = tb.run_config(_uniform(), seed)
    items = train_split(
        load_task(cfg.task, cfg.format_reward), pool_size, cfg.train_seed, cfg.levels
    )
    level = {it.task_id: it.level for it in items}
    run_dir = runs / f"pool{pool_size}_steps{steps}" / "runs" / "uniform" / f"seed{seed}"
    per_epoch = steps * cfg.batch_size // pool_size or 1
    steps_per_epoch = pool_size // cfg.batch_size
    counts: dict[str, Any] = {}
    for line in (run_dir / "rewards.jsonl").read_text().splitlines():
        rec = json.loads(line)
        epoch = min(rec["step"] // steps_per_epoch, per_epoch - 1) + 1
        for task, rewards in zip(rec["task_ids"], rec["rewards"], strict=True):
            r = np.asarray(rewards, dtype=float)
            kind = "all_correct" if r.min() >= 1.0 else "all_wrong" if r.max() <= 0.0 else "mixed"
            if r.min() == r.max() and kind == "mixed":
                kind = "all_wrong"  # a flat group of partial rewards teaches nothing either
            slot = counts.setdefault(str(epoch), {}).setdefault(
                str(level[task]), dict.fromkeys(KINDS, 0)
            )
            slot[kind] += 1
    record = _ledger_record(pool_size, steps, seed, timed)
    reproduced = None
    if record is not None:
        mine = _run_evals(run_dir)
        theirs = [round(float(v), 6) for v in record["columns"]["eval/pass@1"] if v is not None]
        reproduced = mine == theirs
    code = json.loads((run_dir / "spec.json").read_text()).get("code", {}).get("commit")
    return {"seed": seed, "counts": counts, "reproduces_ledger": reproduced, "code": code}


def _uniform() -> Any:
    from frontier_rft.bench.real_rl.entries import MAIN_ENTRIES

    return next(e for e in MAIN_ENTRIES if e.label == "uniform")


def _share(rows: list[dict[str, Any]], epoch: str, level: str | None) -> dict[str, float]:
    tot = dict.fromkeys(KINDS, 0)
    for row in rows:
        for lv, c in row["counts"].get(epoch, {}).items():
            if level is None or lv == level:
                for k in KINDS:
                    tot[k] += c[k]
    n = sum(tot.values())
    return {k: tot[k] / n if n else float("nan") for k in KINDS} | {"groups": n}


def _mean_ci(vals: list[float]) -> tuple[float, float, float]:
    """Mean with a bootstrap 95% CI over seeds (the bench's own, bench/metrics.py)."""
    from frontier_rft.bench.metrics import mean_ci

    got = mean_ci(vals)
    return float(got["mean"]), float(got["ci"][0]), float(got["ci"][1])


def _fmt(ci: tuple[float, float, float]) -> str:
    return f"{ci[0]:.2f}x [{ci[1]:.2f}, {ci[2]:.2f}]"


def _seed_ci(rows: list[dict[str, Any]], epoch: str) -> tuple[float, float, float]:
    """Mean of the per-seed mixed share with a bootstrap 95% CI over seeds."""
    return _mean_ci([_share([r], epoch, None)["mixed"] for r in rows])


def page(results: dict[str, Any]) -> str:
    """The results page (benchmarks/results/first_epoch_ceiling.md) of the saved JSON."""
    lines = [
        "# The first-epoch ceiling: what a perfect skip could save in uniform's epoch 1",
        "",
        "Real RL on the CPU testbed (tiny Llama, Countdown levels 2x20, 2x50, 3x30, start weights "
        f"`{FAST_START_WEIGHTS}`, 16 prompts x 8 rollouts a step, 2 epochs). Uniform's own groups, "
        "counted from its reward log; each rerun is checked against the ledger's record of the "
        "same seed. An oracle that skipped every flat group at no cost would spend the mixed "
        "share of uniform's rollouts in that epoch: that share bounds what any skip can save "
        "there without losing a trained group (backfill aside).",
        "",
        "Commands: `python benchmarks/first_epoch_ceiling.py --pool-size 512 --steps 64 "
        "--seeds 0-2` (the split below; the reruns' code is named per pool) and `--report` "
        "(the page; the ledger's shares).",
        "",
        "## Every committed uniform seed: the mixed share per epoch (the oracle's spend)",
        "",
        "| prompts | steps | seeds | epoch 1 | epoch 2 | both |",
        "|---|---|---|---|---|---|",
    ]
    for size, block in sorted(results.get("ledger", {}).items(), key=lambda kv: int(kv[0])):
        shares = block["mixed"]
        e1 = _mean_ci([v["1"] for v in shares.values()])
        e2 = _mean_ci([v["2"] for v in shares.values()])
        both = _mean_ci([(v["1"] + v["2"]) / 2 for v in shares.values()])
        lines.append(
            f"| {size} | {block['steps']} | {len(shares)} | {_fmt(e1)} | {_fmt(e2)} | "
            f"{_fmt(both)} |"
        )
    for size, block in sorted(results.get("ledger", {}).items(), key=lambda kv: int(kv[0])):
        twins = {int(k): v for k, v in block.get("twins", {}).items()}
        if twins:
            differ = [s for s, d in twins.items() if d]
            lines.append(
                f"\n{size} prompts: seeds {_seed_list(list(twins))} have two uniform records "
                "of the same testbed and definition, one in `benchmarks/ledger` and one in "
                "`benchmarks/ledger/timed` (rerun at other code to time it); "
                + (
                    f"those of seeds {_seed_list(differ)} differ (a run is not bitwise "
                    "reproducible across code versions), "
                    if differ
                    else "they agree, "
                )
                + "and this row reads the `benchmarks/ledger` record of each, once."
            )
    smol = results.get("smollm2")
    if smol and smol["mixed"]:
        shares = smol["mixed"]
        e1 = _mean_ci([v["1"] for v in shares.values()])
        e2 = _mean_ci([v["2"] for v in shares.values()])
        both = _mean_ci([(v["1"] + v["2"]) / 2 for v in shares.values()])
        s1 = np.mean([v["success1"] for v in shares.values()])
        s2 = np.mean([v["success2"] for v in shares.values()])
        lines += [
            "",
            f"### A pretrained LM: SmolLM2-135M-Instruct (ledger testbed `{SMOLLM2_TESTBED}`)",
            "",
            "The ledger's uniform runs of the GPU testbed (SmolLM2-135M-Instruct from its GGUF, "
            "arithmetic levels 1x2, 1\\*2, 2, 2-2, 512 prompts, 64 steps x 16 prompts x 8 "
            "rollouts, 2 epochs, one H200; code named in each record). Their records log each "
            "step's mixed share but not the all-correct / all-wrong split, so only the oracle's "
            "spend is given, with the mean training success rate beside it.",
            "",
            "| seeds | epoch 1 | epoch 2 | both | mean success rate, epoch 1 / 2 |",
            "|---|---|---|---|---|",
            f"| {len(shares)} | {_fmt(e1)} | {_fmt(e2)} | {_fmt(both)} | {s1:.2f} / {s2:.2f} |",
        ]
    lines += ["", "## The split by outcome and level (reruns of uniform with the reward log)", ""]
    for key, block in sorted(results["pools"].items(), key=lambda kv: int(kv[0])):
        rows = block["seeds"]
        repro = [r["reproduces_ledger"] for r in rows]
        commits = sorted({str(r.get("code")) for r in rows})
        lines += [
            f"### {key} prompts, {block['steps']} steps, seeds "
            f"{', '.join(str(r['seed']) for r in rows)}",
            "",
            f"Code {', '.join(f'`{c[:7]}`' for c in commits)}. "
            f"Reproduces the ledger's uniform run of the same seed: "
            f"{sum(1 for x in repro if x)} of {len(repro)} "
            f"({sum(1 for x in repro if x is None)} with no ledger record).",
            "",
            "| epoch | level | groups | all-correct | all-wrong | mixed (oracle spends) |",
            "|---|---|---|---|---|---|",
        ]
        levels = sorted({lv for r in rows for e in r["counts"].values() for lv in e})
        for epoch in sorted({e for r in rows for e in r["counts"]}):
            for lv in [*levels, None]:
                s = _share(rows, epoch, lv)
                name = "all" if lv is None else lv
                lines.append(
                    f"| {epoch} | {name} | {s['groups']} | {s['all_correct']:.3f} | "
                    f"{s['all_wrong']:.3f} | {s['mixed']:.3f} |"
                )
        lines.append("")
        for epoch in sorted({e for r in rows for e in r["counts"]}):
            m, lo, hi = _seed_ci(rows, epoch)
            lines.append(
                f"- Epoch {epoch}: a perfect skip spends {m:.2f}x [{lo:.2f}, {hi:.2f}] of "
                "uniform's rollouts (mean over seeds, bootstrap 95% CI)."
            )
        lines.append("")
    return "\n".join(lines)
