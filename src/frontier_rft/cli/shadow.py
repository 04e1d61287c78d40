"""`frontier shadow replay LOG --rule R...`: what rules that pass over prompts before rollout
would have saved and lost on a logged run (docs/shadow.md)."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.cli.common import UsageError, positive_int
from frontier_rft.shadow.foreign_logs import FORMATS

__all__ = ["add_command"]


def _cmd_replay(args: argparse.Namespace) -> int:
    from frontier_rft.shadow.live import switch_note
    from frontier_rft.shadow.replay import (
        CAVEAT,
        evidence_note,
        length_unit,
        read_prompts,
        replay,
        replay_table,
        reward_note,
        seed_note,
        tokens_note,
    )

    if args.format == "metrics" or (args.format is None and _is_metrics_log(args.log)):
        return _show_summary(args)
    if not args.rule:
        raise UsageError(
            "name a rule to replay: --rule greso, --rule screen4, ... (a TRL run's "
            "frontier_metrics.jsonl alone shows its live shadows' summary)"
        )
    figure = _figure_path(args.figure) if args.figure else None
    if args.reward_range is not None and not args.reward_range[0] < args.reward_range[1]:
        low, high = args.reward_range
        raise UsageError(f"--reward-range {low:g} {high:g}: LOW must be below HIGH")
    prompts = read_prompts(args.prompts) if args.prompts else None
    count = _tokenizer_count(args.tokenizer) if args.tokenizer else None
    if count is not None:
        count.total = _completions_total(args.log, args.format)
    trace: dict[str, dict[str, list[float]]] = {}

    def record(shadows: Any) -> None:
        for shadow in shadows:
            m = shadow.metrics()
            row = trace.setdefault(shadow.name, {k: [] for k in _TRACED})
            for key, metric in _TRACED.items():
                row[key].append(m[metric])

    shadows = replay(
        args.log,
        args.rule,
        pool_size=args.pool_size,
        seed=args.seed,
        on_step=record if figure else None,
        log_format=args.format,
        rewards=args.reward_column,
        reward_range=args.reward_range,
        count=count,
        prompts=prompts,
    )
    steps = int(shadows[0].passes()[-1]["steps"])
    per_pass = shadows[0].pass_size
    note = "" if per_pass == shadows[0].pool_size else f", {per_pass} of them a pass"
    print(f"Replay of {args.log}: {steps} steps, a pool of {shadows[0].pool_size} prompts{note}")
    print(seed_note(args.log, args.format, args.seed, shadows[0].seed))
    print(replay_table(shadows))
    print(
        "saved share: of the run's rollouts; precision: share of the groups a rule left out "
        "that were zero-variance; abs(A) lost: share of the sum of |GRPO advantage| they held."
    )
    if (summed := reward_note(args.log, args.format, args.reward_column)) is not None:
        print(summed)
    print(tokens_note(shadows[0].passes()[-1], length_unit(args.log, args.format, args.tokenizer)))
    if evidence := evidence_note(shadows, args.log, args.format, args.prompts):
        print(evidence)
    print(CAVEAT)
    if switch := switch_note([shadow.name for shadow in shadows]):
        print(switch)
    if figure is not None:
        from frontier_rft.reporting.shadow_plots import plot_shadow_replay

        curves = {
            rule: {k: np.asarray(v, dtype=np.float64) for k, v in row.items()}
            for rule, row in trace.items()
        }
        print(f"Figure: {plot_shadow_replay(curves, Path(args.log).name, figure)}")
    return 0


def _is_metrics_log(log: str) -> bool:
    """Whether LOG is (or is the run directory of) a TRL adapter's frontier_metrics.jsonl."""
    from frontier_rft.shadow.foreign_logs import detect_format

    path = Path(log)
    if path.name == "frontier_metrics.jsonl":
        return True
    try:
        return detect_format(path) == "metrics"
    except ValueError:
        return False  # the replay says why


def _show_summary(args: argparse.Namespace) -> int:
    """The end-of-run table a TRL run's live shadows wrote to its metrics log."""
    from frontier_rft.shadow.live import switch_note
    from frontier_rft.shadow.replay import CAVEAT, read_shadow_summary, tokens_note
    from frontier_rft.shadow.rule import passes_table

    given = [
        flag
        for flag, value in (
            ("--rule", args.rule),
            ("--reward-column", args.reward_column),
            ("--reward-range", args.reward_range),
            ("--pool-size", args.pool_size),
            ("--seed", args.seed),
            ("--tokenizer", args.tokenizer),
            ("--prompts", args.prompts),
            ("--figure", args.figure),
        )
        if value is not None
    ]
    if given:
        raise UsageError(
            f"{args.log}: a metrics log holds its live shadows' summary, not rewards, so "
            f"{', '.join(given)} cannot apply; drop them, or replay the run's completion log"
        )
    step, named = read_shadow_summary(args.log)
    print(f"Live shadows of {args.log}, at the end of the run (step {step})")
    print(passes_table(named))
    print(
        "saved share: of the run's rollouts; precision: share of the groups a rule left out "
        "that were zero-variance; abs(A) lost: share of the sum of |GRPO advantage| they held."
    )
    missing = (
        "its live shadows were given no completion lengths: a run scored by reward models "
        "alone, or one written before live shadows counted tokens"
    )
    print(tokens_note(named[0][1][-1], "the trainer's generated tokens", missing))
    print(CAVEAT)
    if switch := switch_note([name for name, _ in named]):
        print(switch)
    return 0


_TRACED = {
    "saved": "rollouts_saved",
    "informative_lost": "informative_lost",
    "abs_lost_share": "abs_advantage_lost_share_cumulative",
    "pass": "epoch",
}
"""The per-step metrics of each shadow the figure draws."""


def _completions_total(log: str, fmt: str | None) -> int | None:
    """The completions LOG holds, for --tokenizer's progress line (None: not known cheaply)."""
    from frontier_rft.shadow.foreign_logs import completions_total, detect_format

    try:
        return completions_total(log, fmt or detect_format(log))
    except ValueError:
        return None  # the replay says why


def _tokenizer_count(name: str) -> Any:
    """The lengths in tokens of a batch of completion texts under the run's tokenizer
    (transformers' AutoTokenizer, no remote code), special tokens not added."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError(
            "--tokenizer needs transformers (pip install transformers); leave it out to count "
            "characters"
        ) from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False)
    except (OSError, ValueError, KeyError, ImportError) as exc:
        raise UsageError(
            f"--tokenizer {name}: cannot load it ({str(exc)[:100]}); give the run's model "
            "directory or hub name, or leave it out to count characters"
        ) from None

    return _ProgressCount(tokenizer, name)


class _ProgressCount:
    """The token counts of a batch of completion texts under `tokenizer`, by one batch call
    (a fast tokenizer encodes the batch on its thread pool; each count is the per-text
    call's), saying on stderr every `every` seconds how many it has counted, of the `total`
    completions the log holds where known (a large log takes minutes: issue 72). A text
    holding a lone surrogate (JSON's "\\ud800", valid JSON but not Unicode: a tokenizer
    refuses it with a TypeError) is counted with each lone surrogate replaced by U+FFFD, and
    stderr says so once (issue 83, item 20)."""

    def __init__(self, tokenizer: Any, name: str, every: float = 10.0) -> None:
        self.tokenizer, self.name, self.every = tokenizer, name, every
        self.texts = 0
        self.replaced = 0  # texts whose lone surrogates were replaced
        self.total: int | None = None
        self.start = self.said = time.monotonic()

    def __call__(self, texts: list[str]) -> list[int]:
        texts = [self._unicode(t) for t in texts]
        encoded = self.tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
        n = [len(ids) for ids in encoded["input_ids"]]
        self.texts += len(texts)
        now = time.monotonic()
        if now - self.said >= self.every:
            self.said = now
            of = "" if self.total is None else f" (the log holds {self.total:,} completions)"
            print(
                f"--tokenizer {self.name}: {self.texts:,} completion texts counted{of}, "
                f"{now - self.start:,.0f} s",
                file=sys.stderr,
                flush=True,
            )
        return n

    def _unicode(self, text: str) -> str:
        """`text`, each lone surrogate replaced by U+FFFD (said once on stderr)."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            if not self.replaced:
                print(
                    f"--tokenizer {self.name}: a completion holds a lone surrogate (an escape "
                    "such as \\ud800, not valid Unicode); each is counted as U+FFFD",
                    file=sys.stderr,
                    flush=True,
                )
            self.replaced += 1
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return text


def _reward_column(text: str) -> tuple[str, float]:
    """NAME or NAME=WEIGHT: a TRL reward column and its reward_weights entry."""
    name, _, weight = text.partition("=")
    try:
        value = float(weight) if weight else 1.0
    except ValueError:
        value = math.nan
    if not name or not math.isfinite(value):
        raise UsageError(
            f"--reward-column {text}: give NAME or NAME=WEIGHT (a column of TRL's completions "
            "table and its reward_weights entry)"
        )
    return name, value


def _reward_bound(text: str) -> float:
    """One end of --reward-range: a finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(
            f"--reward-range: {text} is not a finite number; give LOW HIGH, e.g. "
            "--reward-range -1 1 (your reward function's range)"
        )
    return value


def _figure_path(text: str) -> Path:
    """The figure's path, and matplotlib, checked before the replay runs (a bad path or a
    missing extra costs no replay)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(
            f"--figure {text} needs matplotlib: pip install 'frontier-rft[plot]', or leave "
            "--figure out for the table alone"
        )
    path = Path(text)
    if path.suffix.lower() != ".png":
        raise UsageError(f"--figure {text}: the figure is a PNG; give a path ending in .png")
    if path.is_dir():
        raise UsageError(f"--figure {text} is a directory; give a file path ending in .png")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(
            f"--figure {text}: the directory {parent} does not exist; create it or write "
            "the figure elsewhere"
        )
    return path


def add_command(sub: Any) -> None:
    """Register `shadow replay`."""
    p = sub.add_parser(
        "shadow",
        help="what a skip or screening rule would have saved and lost on a logged run",
        description="Rules that pass over prompts before rollout, replayed on a run's own "
        "rewards (docs/shadow.md).",
    )
    shadow_sub = p.add_subparsers(dest="shadow_command", required=True, metavar="COMMAND")
    r = shadow_sub.add_parser(
        "replay",
        help="replay rules on a reward log (frontier train --reward-log, TRL's, verl's)",
        description="Read a run's rewards.jsonl (frontier train --reward-log), TRL's "
        "completion logs (log_completions=True) or verl's rollout dump "
        "(trainer.rollout_data_dir) and print, per "
        "rule and pass over the pool, the rollouts it would have saved, the share of the "
        "groups it left out that were zero-variance, and the informative groups and |advantage| "
        "it would have lost; where the log holds completions, also the share of the run's "
        "generated tokens it would have saved. The same counts as live shadows (frontier "
        "train --shadows).",
    )
    r.add_argument(
        "log",
        metavar="LOG",
        help="rewards.jsonl of frontier train; TRL's completions/ directory (or one of its "
        "parquet files, or a wandb table export); verl's rollout_data_dir (or one step's file); "
        "or a TRL run's frontier_metrics.jsonl, to show its live shadows' end-of-run summary",
    )
    r.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="the log's format (default: told from its file names or first line)",
    )
    r.add_argument(
        "--reward-column",
        action="append",
        type=_reward_column,
        default=None,
        metavar="NAME[=WEIGHT]",
        help="a TRL log's reward column and its reward_weights entry (default 1); repeat for "
        "each (default: the reward functions and weights the frontier-rft TRL adapter recorded "
        "in the output dir's frontier_rewards.json; else those the run's trainer_state.json "
        "names, each weight 1; else the table's one column besides step, prompt, completion "
        "and advantage)",
    )
    r.add_argument(
        "--reward-range",
        type=_reward_bound,
        nargs=2,
        default=None,
        metavar=("LOW", "HIGH"),
        help="the reward function's range, mapped onto [0, 1] (clipped beyond) as the TRL and "
        "verl adapters' reward_range maps it (default: rewards already in [0, 1])",
    )
    r.add_argument(
        "--rule",
        action="append",
        default=None,
        help="a rule: greso, skip, screenK (K >= 2), or a selector and a screen joined by + "
        "(greso+screenK); repeat for several. skip replays from a TRL or verl log, its "
        "features derived from the log's prompt text; a rewards.jsonl holds none: run it "
        "live there (frontier train --shadows skip) (default: none, for a "
        "frontier_metrics.jsonl's summary; a reward log needs one)",
    )
    r.add_argument(
        "--pool-size",
        type=positive_int,
        default=None,
        help="prompts in the training pool, at most 2^24 (replay.MAX_POOL) (default: the "
        "log's pool_size; for a TRL or verl log, the distinct prompts it holds)",
    )
    r.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the rules' own draws (default: the log's, as live shadows use; a TRL "
        "log's from the output dir's frontier_rewards.json, else 0; the replay prints it)",
    )
    r.add_argument(
        "--prompts",
        default=None,
        metavar="FILE",
        help="a rewards.jsonl's pool: its prompts by id as JSON lines (prompt id i on line i + 1, "
        "a string or a list of chat messages; .gz read as it is), from which skip's features "
        "are derived as an adapter's pool without features derives them (default: none; a TRL "
        "or verl log holds its own prompt text)",
    )
    r.add_argument(
        "--tokenizer",
        default=None,
        metavar="NAME",
        help="a TRL or verl log: count its completion texts' tokens with the run's tokenizer "
        "(a model directory or hub name; needs transformers) (default: count characters, "
        "labelled as such; a rewards.jsonl holds the trainer's own token counts)",
    )
    r.add_argument(
        "--figure",
        default=None,
        metavar="PNG",
        help="also draw, per rule, the rollouts saved against the signal lost per pass, as a PNG "
        "(default: no figure)",
    )
    r.set_defaults(func=_cmd_replay)
