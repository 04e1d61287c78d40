"""Seconds of one training step's generation and policy update over kept rows and lengths.

    PYTHONPATH=src python benchmarks/step_cost.py --device cpu --plot
    PYTHONPATH=src python benchmarks/step_cost.py --device cuda --model DIR --precision bf16 --plot

Times the two costs of a step of the reference trainer (training/grpo.py) on the device it
runs on, for every cell of a grid of kept rows (the completions a step generates and trains)
and completion lengths:

- generation: the trainer's `generate_completions` over `rows` completions, `--group-size`
  per synthetic prompt of `--prompt-tokens` random token ids, each forced to exactly
  `length` new tokens (the model's EOS suppressed) so that every cell does the same work;
- update: one forward, backward and AdamW step of the trainer's own `policy_loss` (GRPO's
  token-mean clipped surrogate at ppo_epochs 1, no KL, no entropy bonus: the testbeds'
  settings) over those rows, gradients clipped, as `Trainer._update` runs it.

Each cell is the median and min of `--repeats` timed repeats after `--warmup` untimed ones.
The default model is the tiny Llama of the CPU testbed (the ledger's committed start weights);
`--model` takes a local Hugging Face directory, a GGUF file or smollm2-135m-instruct, never a
hub id. Writes `<name>.json` and `<name>.md` under `--out` (and `<name>.png` with `--plot`);
the markdown gives each cell's time over the largest-rows cell's at the same length: near
1.00 throughout is a latency-bound step, rows / max rows a step whose time grows with rows.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.start_models import START_MODELS
from frontier_rft.bench.real_rl.testbed import FAST_START_WEIGHTS
from frontier_rft.bench.scripts import (
    RESULTS_DIR,
    command_line,
    file_stem,
    int_at_least,
    positive_ints,
    write_outputs,
)
from frontier_rft.cli.common import Parser, UsageError, model_dir
from frontier_rft.lm.device import DEVICE_HELP, valid_device_name
from frontier_rft.progress import progress_bar
from frontier_rft.reporting.png import save_png

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "benchmarks" / "ledger" / START_MODELS / FAST_START_WEIGHTS
"""The standard testbed's warm-started tiny Llama, committed with the ledger."""
UPDATE = (
    "one forward, backward and AdamW step of the reference trainer's policy_loss (token-mean "
    "clipped surrogate, ppo_epochs 1, no KL, no entropy bonus) over every kept row, gradients "
    "clipped to norm 1, as Trainer._update runs it"
)
GENERATION = (
    "the reference trainer's generate_completions (a prompt's KV cache shared by its group), "
    "EOS suppressed so that every completion has exactly `length` new tokens"
)


def parse_args(argv: Sequence[str] | None) -> Any:
    """The flags, checked: every mistake ends in one `error:` line and exit status 2."""
    parser = Parser(prog="step_cost.py", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default="cpu", help=f"where to run: {DEVICE_HELP}")
    parser.add_argument(
        "--model",
        default=str(DEFAULT_MODEL),
        help="local model directory, .gguf file or smollm2-135m-instruct (default: the tiny "
        "Llama of the CPU testbed, the ledger's start model)",
    )
    parser.add_argument(
        "--rows", type=positive_ints, default=(8, 16, 32, 64, 96, 128), help="kept rows per step"
    )
    parser.add_argument(
        "--lengths", type=positive_ints, default=(24, 256, 1024), help="new tokens per completion"
    )
    positive, natural = int_at_least(1), int_at_least(0)
    parser.add_argument("--prompt-tokens", type=positive, default=32, help="tokens per prompt")
    parser.add_argument("--group-size", type=positive, default=8, help="completions per prompt")
    parser.add_argument("--repeats", type=positive, default=3, help="timed repeats per cell")
    parser.add_argument("--warmup", type=natural, default=1, help="untimed repeats before them")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16"),
        default="fp32",
        help="float32, or forward passes under bfloat16 autocast (the SmolLM2 GPU testbed's)",
    )
    parser.add_argument("--threads", type=natural, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--seed", type=natural, default=0, help="seed of prompts and sampling")
    parser.add_argument("--out", default=RESULTS_DIR, help="output directory")
    parser.add_argument(
        "--name", type=file_stem, default=None, help="file stem (default: step_cost_<device>)"
    )
    parser.add_argument("--plot", action="store_true", help="also write <name>.png")
    args = parser.parse_args(argv)
    if not valid_device_name(args.device):
        parser.error(f"--device must be {DEVICE_HELP}, got {args.device!r}")
    try:
        args.model = model_dir(args.model, "--model")
    except UsageError as exc:
        parser.error(str(exc).splitlines()[0])
    return args


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(model: Any, path: Path) -> str:
    """Architecture, size and origin of the model, for the outputs and the figure's title."""
    cfg = model.config
    params = sum(p.numel() for p in model.parameters())
    if path == DEFAULT_MODEL:
        origin = f"the CPU testbed's tiny Llama, the ledger's start model {FAST_START_WEIGHTS}"
    else:
        origin = path.name
    return (
        f"{type(model).__name__} ({origin}), {params / 1e6:.2f}M parameters, "
        f"{cfg.num_hidden_layers} layers, width {cfg.hidden_size}, vocab {cfg.vocab_size}"
    )


def stats(seconds: list[float]) -> dict[str, Any]:
    """A cell part's median and min seconds, and every timed repeat's."""
    return {"median": statistics.median(seconds), "min": min(seconds), "all": seconds}


class Bench:
    """The model, optimizer and synthetic prompts; `cell` times one (rows, length)."""

    def __init__(self, args: Any) -> None:
        import numpy as np
        import torch
        from transformers import SuppressTokensLogitsProcessor

        from frontier_rft.lm.device import resolve_device
        from frontier_rft.lm.model_io import load_lm
        from frontier_rft.training.config import TrainConfig

        self.device = resolve_device(args.device)
        self.model, tokenizer = load_lm(args.model)
        self.model.to(self.device).train()
        # The loss and optimizer settings both testbeds train with (TrainConfig's defaults).
        self.config = TrainConfig(max_new_tokens=max(args.lengths), precision=args.precision)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        self.precision = args.precision
        eos = self.model.generation_config.eos_token_id
        eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        self.no_eos = [SuppressTokensLogitsProcessor(eos_ids, device=str(self.device))]
        special = set(tokenizer.all_special_ids) | set(eos_ids)
        ordinary = np.array([t for t in range(self.model.config.vocab_size) if t not in special])
        self.rng = np.random.default_rng(args.seed)
        self.ordinary = ordinary
        self.prompt_tokens, self.group = args.prompt_tokens, args.group_size

    def amp(self) -> Any:
        """The forward passes' context: bf16 autocast, or nothing (the trainer's _amp)."""
        from frontier_rft.lm.device import autocast

        return autocast(self.device, self.precision)

    def sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step(self, rows: int, length: int) -> tuple[float, float]:
        """Seconds of one step's generation and of its update, `rows` completions of `length`."""
        import torch

        from frontier_rft.lm.rollout import generate_completions, score_completions
        from frontier_rft.training.policy_loss import policy_loss

        full, rest = divmod(rows, self.group)
        counts = [self.group] * full + ([rest] if rest else [])
        prompts = [self.rng.choice(self.ordinary, self.prompt_tokens).tolist() for _ in counts]
        self.sync()
        t0 = time.perf_counter()
        with self.amp():
            completions = generate_completions(
                self.model,
                prompts,
                counts[0] if len(set(counts)) == 1 else counts,
                length,
                self.config.temperature,
                self.no_eos,
            )
        self.sync()
        t1 = time.perf_counter()
        if {len(c) for c in completions} != {length} or len(completions) != rows:
            raise RuntimeError(f"generation gave other than {rows} completions of {length}")
        rows_prompts = [p for p, n in zip(prompts, counts, strict=True) for _ in range(n)]
        advantages = torch.tensor(self.rng.standard_normal(rows), dtype=torch.float32)
        self.sync()
        t2 = time.perf_counter()
        with self.amp():  # forward only: backward runs outside autocast, as the trainer's
            scores = score_completions(
                self.model,
                rows_prompts,
                completions,
                with_entropy=True,
                temperature=self.config.temperature,
            )
            loss = policy_loss(
                scores, advantages.to(self.device), scores.logprobs.detach(), None, self.config
            )
        self.optimizer.zero_grad(set_to_none=True)
        total: Any = loss.total  # torch's backward is untyped
        total.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        # The weights drift over a run's steps; with EOS suppressed no cell's work depends on them.
        self.optimizer.step()
        self.sync()
        return t1 - t0, time.perf_counter() - t2

    def cell(self, rows: int, length: int, repeats: int, warmup: int) -> dict[str, Any]:
        """Median and min seconds of generation and update over `repeats` timed steps; a CUDA
        out-of-memory cell is recorded as such (the cells after it still run)."""
        import torch

        gen: Sequence[float] = ()
        upd: Sequence[float] = ()
        try:
            for _ in range(warmup):
                self.step(rows, length)
            gen, upd = zip(*(self.step(rows, length) for _ in range(repeats)), strict=True)
        except torch.cuda.OutOfMemoryError:
            pass  # recorded below, once the traceback no longer holds the step's tensors
        if not gen:
            self.optimizer.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
            return {"rows": rows, "length": length, "error": "CUDA out of memory"}
        timed = {"generate_s": stats(list(gen)), "update_s": stats(list(upd))}
        return {"rows": rows, "length": length, **timed}


def ratio(cell: dict[str, Any], ref: dict[str, Any], part: str) -> str:
    """A cell's median seconds over the reference cell's, as the tables print it."""
    if "error" in cell or "error" in ref:
        return "-"
    if part == "step_s":
        return f"{step_median(cell) / step_median(ref):.2f}"
    return f"{cell[part]['median'] / ref[part]['median']:.2f}"


def step_median(cell: dict[str, Any]) -> float:
    """Generation's median plus the update's: a whole step."""
    return float(cell["generate_s"]["median"] + cell["update_s"]["median"])


def markdown(out: dict[str, Any]) -> list[str]:
    """The page: what ran, then a table per length, times over the largest-rows cell's."""
    top = max(out["grid"]["rows"])
    lines = [
        f"# One training step's cost vs kept rows: {out['device_name']}",
        "",
        f"    {out['command']}",
        "",
        f"Model: {out['model']}. Device: {out['device']} ({out['device_name']}), torch "
        f"{out['torch']}, {out['torch_threads']} torch threads, {out['precision']}; "
        f"{out['machine']}.",
        "",
        f"Prompts: {out['prompt_tokens']} random token ids, {out['group_size']} completions "
        f"each. Generation: {out['generation']}. Update: {out['update']}.",
        "",
        f"Seconds: median (min) of {out['repeats']} timed repeats after {out['warmup']} "
        f"untimed ones. `x{top}`: the median over the {top}-row cell's at the same length "
        "(near 1.00 throughout: a latency-bound step; rows / "
        f"{top}: a step whose time grows with rows). Step = generation + update.",
    ]
    longest = out["prompt_tokens"] + max(out["grid"]["lengths"])
    if out["model_positions"] and longest > out["model_positions"]:
        lines += [
            "",
            f"The longest sequences ({longest} tokens) run past the model's "
            f"{out['model_positions']} positions: rotary positions extrapolate, and the cost "
            "is what is measured here, not the text.",
        ]
    for length in out["grid"]["lengths"]:
        cells = {c["rows"]: c for c in out["cells"] if c["length"] == length}
        ref = cells[top]
        lines += [
            "",
            f"## {length} new tokens",
            "",
            f"| rows | generation s | x{top} | update s | x{top} | step s | x{top} |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for rows, cell in sorted(cells.items()):
            if "error" in cell:
                lines.append(f"| {rows} | {cell['error']} | - | | - | | - |")
                continue
            gen, upd = cell["generate_s"], cell["update_s"]
            lines.append(
                f"| {rows} | {gen['median']:.3f} ({gen['min']:.3f}) | "
                f"{ratio(cell, ref, 'generate_s')} | {upd['median']:.3f} ({upd['min']:.3f}) | "
                f"{ratio(cell, ref, 'update_s')} | {step_median(cell):.3f} | "
                f"{ratio(cell, ref, 'step_s')} |"
            )
    return lines


def plot(out: dict[str, Any], path: Path) -> None:
    """Generation and update time over the largest-rows cell's, per length, against rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = out["grid"]["rows"]
    top = max(rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    parts = (("generate_s", "generation"), ("update_s", "update"))
    for ax, (part, label) in zip(axes, parts, strict=True):
        ax.plot(rows, [r / top for r in rows], "k--", lw=1, label="in proportion to rows")
        for length in out["grid"]["lengths"]:
            cells = {c["rows"]: c for c in out["cells"] if c["length"] == length}
            if "error" in cells[top]:
                continue
            ref = cells[top][part]["median"]
            xs = [r for r in rows if "error" not in cells[r]]
            ax.plot(
                xs,
                [cells[r][part]["median"] / ref for r in xs],
                "o-",
                label=f"{length} new tokens ({ref:.2f} s at {top} rows)",
            )
        ax.set_title(label)
        ax.set_xticks(rows)
        ax.set_xlabel("kept rows (completions generated and trained)")
        ax.set_ylim(0, 1.1 * ax.get_ylim()[1])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel(f"seconds / seconds at {top} rows (median)")
    fig.suptitle(
        f"Measured: one GRPO step's cost vs kept rows on {out['device']} "
        f"({out['device_name']}, {out['precision']})\n{out['model']}",
        fontsize=10,
    )
    fig.tight_layout()
    save_png(fig, path, 120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from transformers.utils import logging

    hf_logging: Any = logging  # untyped upstream
    hf_logging.disable_progress_bar()

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    t_start = time.perf_counter()
    bench = Bench(args)
    name = args.name or f"step_cost_{bench.device.type}"
    device_name = (
        torch.cuda.get_device_name(bench.device) if bench.device.type == "cuda" else cpu_name()
    )
    out: dict[str, Any] = {
        "command": command_line(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load if load is None else round(load, 1)} at start",
        "device": str(bench.device),
        "device_name": device_name,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "precision": args.precision,
        "model": describe(bench.model, args.model),
        "model_path": str(args.model),
        "model_positions": getattr(bench.model.config, "max_position_embeddings", None),
        "generation": GENERATION,
        "update": UPDATE,
        "prompt_tokens": args.prompt_tokens,
        "group_size": args.group_size,
        "grid": {"rows": list(args.rows), "lengths": list(args.lengths)},
        "repeats": args.repeats,
        "warmup": args.warmup,
        "seed": args.seed,
        "cells": [],
    }
    with progress_bar(len(args.lengths) * len(args.rows), "cells", unit="cell") as bar:
        for length in args.lengths:
            for rows in args.rows:
                bar.set_postfix_str(f"{rows} rows x {length} tokens")
                cell = bench.cell(rows, length, args.repeats, args.warmup)
                out["cells"].append(cell)
                bar.update(1)
                print(f"rows {rows:4d} length {length:5d}: {cell_line(cell)}", flush=True)
                # The cells so far, in case the run is stopped (a device lease's time limit).
                Path(args.out).mkdir(parents=True, exist_ok=True)
                partial = Path(args.out) / f"{name}.json"
                partial.write_text(json.dumps({**out, "complete": False}, indent=1) + "\n")
    out["complete"] = True
    out["seconds_total"] = round(time.perf_counter() - t_start, 1)
    write_outputs(args.out, name, out, markdown(out))
    if args.plot:
        plot(out, Path(args.out) / f"{name}.png")
    return 0


def cell_line(cell: dict[str, Any]) -> str:
    """A cell in one progress line, printed as it finishes."""
    if "error" in cell:
        return str(cell["error"])
    gen, upd = cell["generate_s"]["median"], cell["update_s"]["median"]
    return f"generation {gen:.3f} s, update {upd:.3f} s"


if __name__ == "__main__":
    # A local model never needs the hub: offline, a stray lookup fails instead of downloading
    # (set here, before transformers is imported, and not by main() in a caller's process).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
