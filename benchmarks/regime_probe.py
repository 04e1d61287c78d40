"""Probe a candidate CPU regime on calibration seeds (issue 70, item 1): uniform and skip-kept
on the standard testbed's model with some settings changed, no ledger; prints per seed the
statistics of `bench.real_rl.regime` (gain, start zero-variance share, epoch-2 mixed share and
skip-kept's left-out mixed rate over the base rate). What chose `--scale fast`
(docs/results/fast_regime.md):

    python benchmarks/regime_probe.py --name L3_T13 --seeds 20,21 --temperature 1.3 --lr 2e-4 \
        --levels 2x20,2x50,2x99 --start-weights d8e66360e158

`--sft-steps N` warm-starts a fresh tiny model for N steps instead of the ledger's weights;
`--task arithmetic` (with `--levels 1x2,1*2,2,2-2`, SmolLM2's mix) builds, warm-starts and
trains the tiny model on that task instead of Countdown (it needs `--sft-steps`);
`--hidden-size W` builds it W wide (MLP 3W) instead of the standard 128.
Runs go to runs/regime-probe/NAME (resumable).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.bench.real_rl.benchmark import RunOptions, run_comparison
from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES
from frontier_rft.bench.real_rl.regime import OUTCOMES, epoch_transitions
from frontier_rft.bench.real_rl.start_models import START_MODELS
from frontier_rft.bench.real_rl.testbed import Testbed, testbed

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True)
    p.add_argument("--seeds", default="20,21")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--levels", default="")
    p.add_argument("--start-weights", default="", help="a start model the ledger holds")
    p.add_argument("--sft-steps", type=int, default=0, help="warm-start steps (0: standard's)")
    p.add_argument("--sft-levels", default="", help="warm-start levels ('': standard's)")
    p.add_argument("--sft-examples", type=int, default=0, help="demonstrations (0: standard's)")
    p.add_argument("--task", default="countdown", help="the task of model, warm start and RL")
    p.add_argument("--hidden-size", type=int, default=0, help="model width (0: standard's)")
    p.add_argument(
        "--uniform-only",
        action="store_true",
        help="run uniform alone; its reward log gives the ratio of epoch 2's mixed rate among "
        "prompts flat in epoch 1 to the base rate (a cheaper, steadier proxy of the skip's)",
    )
    p.add_argument("--max-new-tokens", type=int, default=0, help="0: standard's")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling (SmolLM2's: 0.9)")
    p.add_argument(
        "--unformatted-share",
        type=float,
        default=0.0,
        help="share of the warm start's Countdown demonstrations written without the <answer> "
        "tags the reward needs (a warm start that knows answers but not the format, as a "
        "pretrained LM may; needs a fresh warm start: --sft-steps)",
    )
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_args(argv)
    if args.task != "countdown" and (args.start_weights or not args.sft_steps):
        p.error("--task other than countdown builds its own model: give --sft-steps only")
    if args.unformatted_share and (args.start_weights or not args.sft_steps):
        p.error("--unformatted-share trains a fresh Countdown warm start: give --sft-steps")
    std = testbed("standard")
    assert std.model is not None and std.sft is not None
    model = dataclasses.replace(std.model, task=args.task)
    if args.hidden_size:
        if args.start_weights:
            p.error("--hidden-size builds its own model: give --sft-steps, not --start-weights")
        # the standard model's MLP is 3x its width; keep that shape
        model = dataclasses.replace(
            model, hidden_size=args.hidden_size, intermediate_size=3 * args.hidden_size
        )
    sft = dataclasses.replace(
        std.sft,
        task=args.task,
        levels=args.sft_levels or (args.levels if args.task != "countdown" else std.sft.levels),
        steps=args.sft_steps or std.sft.steps,
        # a small task's levels hold fewer distinct demonstrations than Countdown's default
        num_examples=args.sft_examples
        or (std.sft.num_examples if args.task == "countdown" else 1600),
        device="cpu",
        unformatted_share=args.unformatted_share,
    )
    train = dataclasses.replace(
        std.train,
        task=args.task,
        lr=args.lr,
        temperature=args.temperature,
        levels=args.levels or std.train.levels,
        steps=64,
        eval_every=8,
        reward_log=args.uniform_only,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens or std.train.max_new_tokens,
        checkpoint_every=1000,
        device="cpu",
    )
    root = ROOT / "runs" / "regime-probe" / args.name
    if args.start_weights:
        held = ROOT / "benchmarks" / "ledger" / START_MODELS / args.start_weights
        if not (root / "model-sft").exists():
            shutil.copytree(held, root / "model-sft")
    tb = Testbed(model, sft, train)
    entries = {e.label: e for e in MAIN_ENTRIES + EFFECT_ENTRIES}
    seeds = [int(s) for s in args.seeds.split(",")]
    labels = ["uniform"] if args.uniform_only else ["uniform", "skip-kept"]
    got = run_comparison(
        tb,
        [entries[label] for label in labels],
        seeds,
        RunOptions(root=root, jobs=args.jobs, progress=False, ledger=None),
    )
    batch, epoch = train.batch_size, train.train_size // train.batch_size
    if args.uniform_only:
        for s in seeds:
            start, uni = got.start[str(s)], got.runs["uniform"][s]
            p1 = uni["pass1"]
            log = root / "runs" / "uniform" / f"seed{s}" / "rewards.jsonl"
            base, flat, ratio = flat_to_mixed(log, train.train_size // train.batch_size)
            print(
                f"{args.name} seed {s}: start zero-variance {start['zero_variance']:.2f}, pass@1 "
                f"{p1[0]:.3f} -> {p1[-1]:.3f} (x{p1[-1] / max(p1[0], 1e-9):.2f}), epoch-2 mixed "
                f"{base:.2f}; prompts flat in epoch 1: {flat:.2f}, their epoch-2 mixed rate / "
                f"base {ratio:.2f}"
            )
        return 0
    for s in seeds:
        start, uni, skip = got.start[str(s)], got.runs["uniform"][s], got.runs["skip-kept"][s]

        def col(run: dict[str, Any], key: str) -> np.ndarray:
            return np.array([r[key] for r in run["train"]], dtype=float)

        iu, isk = col(uni, "train/informative_groups"), col(skip, "train/informative_groups")
        left = (batch - col(skip, "train/groups_trained"))[epoch : 2 * epoch].sum()
        lost = iu[epoch : 2 * epoch].sum() - isk[epoch : 2 * epoch].sum()
        base = iu[epoch : 2 * epoch].sum() / (batch * epoch)
        p1 = uni["pass1"]
        print(
            f"{args.name} seed {s}: start zero-variance {start['zero_variance']:.2f}, pass@1 "
            f"{p1[0]:.3f} -> {p1[-1]:.3f} (x{p1[-1] / max(p1[0], 1e-9):.2f}), epoch-2 mixed "
            f"{base:.2f}; skip-kept epoch 2: left out {left / (batch * epoch):.2f}, lost "
            f"{lost / max(iu[epoch : 2 * epoch].sum(), 1):.2f}, left-out rate / base "
            f"{lost / max(left, 1) / max(base, 1e-9):.2f}, pass@1 {skip['pass1'][-1]:.3f}"
        )
    return 0


def flat_to_mixed(log: Path, epoch: int) -> tuple[float, float, float]:
    """From uniform's reward log: epoch 2's mixed share, the share of epoch-2 groups whose
    prompt was flat in epoch 1, and their epoch-2 mixed rate over the epoch-2 base rate."""
    got = epoch_transitions(log, epoch)
    groups, mixed = sum(n for n, _ in got.values()), sum(m for _, m in got.values())
    flat = [got[o] for o in OUTCOMES if o != "mixed"]
    flat_n, flat_m = sum(n for n, _ in flat), sum(m for _, m in flat)
    base = mixed / groups
    return base, flat_n / groups, flat_m / max(flat_n, 1) / max(base, 1e-9)


if __name__ == "__main__":
    raise SystemExit(main())
