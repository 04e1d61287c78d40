"""Shadows beside the reference trainer, and the per-prompt reward log they can be replayed
from (`frontier shadow replay`; docs/shadow.md). No torch here.

A shadow (`frontier_rft.shadow.rule`) is named by a rule, 'greso', 'screen4' or
'greso+screen4'; this module builds it on the run's pool with the run's seed, saves it in
a checkpoint and restores it. The reward log, `rewards.jsonl` in the run directory, holds one
line per training step:

    {"step": 0, "pool_size": 512, "seed": 0, "task_ids": [17, 3, ...],
     "rewards": [[1.0, 0.0, ...], [0.1, 0.1, ...], ...],
     "lengths": [[212, 1024, ...], [96, 101, ...], ...]}

(the step's prompts in the order drawn, each one's group of rewards in the order generated,
and, as the rewards, each completion's generated tokens; a log written before lengths were
logged has none, and replays with no token counts): what `replay` reads back, bounded,
refusing a log it cannot replay exactly in one line that names the problem and the fix.
`replay` also reads TRL's completion logs and verl's rollout dumps
(shadow/foreign_logs.py), whose completions' lengths are their texts' characters, or a
tokenizer's count of them, and whose prompts' text lets a rule that derives features from
it (`skip`) be replayed too (`evidence_note` says how its features differ from a live
run's); a rewards.jsonl names prompts by id only. `read_shadow_summary` reads the
end-of-run summary a TRL run's live shadows write to `frontier_metrics.jsonl`
(shadow/live.py).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.feedback import to_unit_range
from frontier_rft.core.jsonsafe import jsonl_records
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import MAX_SEED
from frontier_rft.features.derive import EvidenceWarning
from frontier_rft.features.text import prompt_text
from frontier_rft.selectors.registry import SELECTORS
from frontier_rft.shadow.foreign_logs import (
    FORMATS,
    LENGTH_UNIT,
    MAX_PROMPT_CHARS,
    Count,
    characters,
    detect_format,
    read_foreign_log,
)
from frontier_rft.shadow.live import build_shadow, shadow_config
from frontier_rft.shadow.log_reading import open_text, packed, regular_file
from frontier_rft.shadow.rule import (
    MAX_LENGTH,
    PASS_KEYS,
    SUMMARY_KEY,
    Shadow,
    passes_table,
)
from frontier_rft.shadow.run_rewards import REWARDS_FILE, read_run_seed
from frontier_rft.shadow.trl_table import output_dir, summed_columns

__all__ = [
    "MAX_LOG_BYTES",
    "MAX_POOL",
    "REWARD_LOG",
    "RewardStep",
    "evidence_note",
    "length_unit",
    "read_prompts",
    "read_reward_log",
    "read_shadow_summary",
    "replay",
    "replay_table",
    "reward_note",
    "reward_record",
    "run_seed",
    "seed_note",
    "tokens_note",
]

REWARD_LOG = "rewards.jsonl"
"""The reward log's name in a run directory (TrainConfig.reward_log)."""
MAX_LOG_BYTES = 1 << 30
"""Largest reward log replayed (a step of 512 prompts x 16 rollouts is ~40 kB)."""
MAX_LINE_CHARS = 1 << 24
"""Longest line of a reward log read."""
MAX_POOL = 1 << 24
"""Largest pool a replay builds its rules' selectors on (16.8M prompts): more than any
dataset a run passes over, and refused before any allocation. At 2^27 a replay took 2.1 GB
and ended in a MemoryError under a 2 GiB cap; at 2^24 a replay of greso and screen4 peaked
at about 300 MB (measured)."""
CAVEAT = (
    "First order: what each rule would have left out on this run's trajectory; a run under "
    "the rule would have trained other groups and taken another trajectory."
)
_HOW = "write it with `frontier train --reward-log` (docs/shadow.md)"


# ---------------------------------------------------------------------------- the reward log
def reward_record(
    step: int,
    pool_size: int,
    seed: int,
    task_ids: np.ndarray,
    rewards: np.ndarray,
    lengths: np.ndarray | None = None,
) -> str:
    """One reward-log line (with its newline): a step's prompts and their groups, `rewards`
    of shape (prompts, group size), and `lengths` (optional) each completion's generated
    tokens, of the same shape. Floats are written exactly (repr round-trips)."""
    record: dict[str, Any] = {
        "step": int(step),
        "pool_size": int(pool_size),
        "seed": int(seed),
        "task_ids": [int(t) for t in task_ids],
        "rewards": np.asarray(rewards, dtype=np.float64).tolist(),
    }
    if lengths is not None:
        sizes = np.asarray(lengths, dtype=np.int64)
        if sizes.shape != record_shape(record) or (sizes.size and sizes.min() < 0):
            raise ValueError(
                f"lengths must be one int >= 0 per reward, shape {record_shape(record)}; "
                f"got shape {sizes.shape}"
            )
        record["lengths"] = sizes.tolist()
    return json.dumps(record, separators=(",", ":")) + "\n"


def record_shape(record: dict[str, Any]) -> tuple[int, int]:
    """(prompts, group size) of a reward-log record's rewards."""
    rewards = record["rewards"]
    return len(rewards), len(rewards[0]) if rewards else 0


@dataclass(frozen=True)
class RewardStep:
    """One step of a reward log."""

    step: int
    pool_size: int | None
    seed: int | None
    task_ids: np.ndarray
    rewards: np.ndarray
    """(prompts, group size)"""
    lengths: np.ndarray | None = None
    """Each completion's length, as `rewards` (int64; None: the log holds none)."""
    batch: int | None = None
    """Prompts a batch draws where the trainer drops each epoch's remainder (TRL's and
    verl's logs: a pass is pool // batch steps); None: a pass is pool_size prompts."""
    prompts: tuple[str, ...] | None = None
    """The log's prompt texts by id (a TRL or verl log read for a rule that derives features
    from them), the same for every step; None: not kept."""


def read_reward_log(path: str | os.PathLike[str]) -> Iterator[RewardStep]:
    """The steps of a reward log, in order, each checked; a ValueError naming the file, the
    line, the problem and the fix for anything `replay` could not replay exactly."""
    file = Path(path)
    regular_file(file, _HOW)  # a FIFO would block; a pipe has no size to bound
    if (why := packed(file)) is not None:  # an archive is never read as lines
        raise ValueError(why)
    too_big = f"more than the {MAX_LOG_BYTES:,} bytes a replay reads; replay its first steps"
    try:
        size = file.stat().st_size
        if size > MAX_LOG_BYTES:
            raise ValueError(f"{path}: {size:,} bytes, {too_big} (head -n STEPS LOG > part.jsonl)")
        # the ledger's logs are gzipped: what one decompresses to is bounded as it is read,
        # blank lines included (a small .gz of blank lines must not run for hours)
        fh, _ = open_text(file, MAX_LOG_BYTES, "zcat LOG | head -n STEPS > part.jsonl")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror}); {_HOW}") from None
    with fh:
        first: RewardStep | None = None
        records = jsonl_records(fh, path, max_chars=MAX_LINE_CHARS, max_depth=3, fix=_HOW)
        for expected, (where, record) in enumerate(records):
            got = _step(record, where)
            if got.step != expected:
                what = "starts" if expected == 0 else f"jumps from step {expected - 1}"
                raise ValueError(
                    f"{where}: the log {what} to step {got.step}, not {expected}: steps are "
                    "missing (truncated, or merged from several runs?); replay a whole log "
                    "of one run from its first step"
                )
            if first is None:
                first = got
            elif (got.pool_size, got.seed) != (first.pool_size, first.seed):
                raise ValueError(
                    f"{where}: its pool_size or seed differs from line 1's (a log appended "
                    "to by another run?); replay a log of one run"
                )
            yield got
    if first is None:
        raise ValueError(f"{path}: holds no step; {_HOW}")


def _step(record: Any, where: str) -> RewardStep:
    """One line's record, checked."""
    if not isinstance(record, dict):
        raise ValueError(f"{where} is not a JSON object; {_HOW}")
    for key in ("step", "task_ids", "rewards"):
        if key not in record:
            what = "the prompt of each group" if key == "task_ids" else f"its {key}"
            raise ValueError(f"{where} has no {key!r}: a replay needs {what}; {_HOW}")
    step = record["step"]
    ids, rewards = record["task_ids"], record["rewards"]
    if not _int(step, 1 << 53):
        raise ValueError(f"{where}: step must be an int >= 0, got {str(step)[:40]}")
    if not isinstance(ids, list) or not ids or not all(_int(t, 1 << 53) for t in ids):
        raise ValueError(f"{where}: task_ids must be a non-empty list of prompt ids (ints >= 0)")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{where}: task_ids repeats a prompt; a step draws each prompt once")
    if (
        not isinstance(rewards, list)
        or len(rewards) != len(ids)
        or not all(isinstance(g, list) for g in rewards)
        or len({len(g) for g in rewards}) != 1
        or len(rewards[0]) < 2
        or not all(_real(r) for g in rewards for r in g)
    ):
        raise ValueError(
            f"{where}: rewards must be one list of finite numbers per task id, all of one "
            "group size >= 2"
        )
    lengths = record.get("lengths")
    if lengths is not None and not (
        isinstance(lengths, list)
        and len(lengths) == len(rewards)
        and all(isinstance(g, list) and len(g) == len(rewards[0]) for g in lengths)
        and all(_int(x, MAX_LENGTH) for g in lengths for x in g)
    ):
        raise ValueError(
            f"{where}: lengths must be one list of completion token counts (ints >= 0) per "
            "task id, as its rewards"
        )
    meta = {}
    for key, hi in (("pool_size", 1 << 40), ("seed", MAX_SEED - 1)):
        value = record.get(key)
        if value is not None and not (_int(value, hi) and (key == "seed" or value >= 1)):
            raise ValueError(f"{where}: {key} must be a positive int, got {str(value)[:40]}")
        meta[key] = value
    return RewardStep(
        step,
        meta["pool_size"],
        meta["seed"],
        np.array(ids, dtype=np.int64),
        np.array(rewards, dtype=np.float64),
        None if lengths is None else np.array(lengths, dtype=np.int64),
    )


def _int(value: object, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= hi


def _real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def replay(
    path: str | os.PathLike[str],
    rules: Sequence[str],
    *,
    pool_size: int | None = None,
    seed: int | None = None,
    on_step: Callable[[Sequence[Shadow]], None] | None = None,
    log_format: str | None = None,
    rewards: Sequence[tuple[str, float]] | None = None,
    reward_range: tuple[float, float] | None = None,
    count: Count | None = None,
    prompts: Sequence[str] | None = None,
) -> list[Shadow]:
    """Each rule's shadow fed the log's steps, as live shadows are fed (the same counts on the same
    run). `log_format` is one of FORMATS (default: detected); `rewards` names a TRL log's
    reward columns and weights. `pool_size` and `seed` default to the log's own (a TRL or
    verl log: its distinct prompts, and the seed the frontier-rft TRL adapter recorded in
    the run's output dir, else 0; `seed_note` says which); `on_step` is called with the
    shadows after each step (to trace their curves). `reward_range` (low, high) maps the
    logged rewards onto [0, 1] as the adapters' `reward_range` does (the rules' selectors
    read rewards in [0, 1]). Where the log holds completion lengths, the shadows also count
    generated tokens (`length_unit` says in what unit); `count` gives the lengths of a batch
    of TRL or verl completion texts, one per text (default: their characters; called a chunk
    of completions at a time). Steps are named as the log names them (TRL's and verl's from
    1). A rule whose selector reads features (`skip`) derives them from a TRL or verl log's
    prompt text, as an adapter's pool without features does (`evidence_note`); a
    rewards.jsonl holds no text, and such a rule is refused there unless `prompts` gives
    the pool's prompt texts by id (`read_prompts`: one per prompt of its pool_size)."""
    if log_format is not None and log_format not in FORMATS:
        raise ValueError(f"--format {log_format}: give one of {', '.join(FORMATS)}")
    if rewards and log_format not in (None, "trl"):
        raise ValueError("--reward-column names a TRL log's columns; drop it or pass --format trl")
    if not rules:
        raise ValueError("name a rule to replay: --rule greso, --rule screen4, ...")
    if reward_range is not None and not (
        len(reward_range) == 2
        and all(math.isfinite(v) for v in reward_range)
        and reward_range[0] < reward_range[1]
    ):
        raise ValueError(f"--reward-range must be LOW HIGH with LOW < HIGH, got {reward_range}")
    if pool_size is not None and not 1 <= pool_size <= MAX_POOL:
        raise ValueError(_pool_refusal(f"--pool-size {pool_size:,}"))
    configs = [shadow_config(rule) for rule in rules]
    fmt = _format_of(path, log_format)
    if prompts is not None and fmt != "frontier":
        raise ValueError(
            "--prompts gives a rewards.jsonl's pool (prompt ids only); a TRL or verl log holds "
            "its prompts' text: drop --prompts"
        )
    if rewards and fmt != "trl":
        raise ValueError(f"--reward-column names a TRL log's columns; {path} is a {fmt} log")
    if fmt == "metrics":
        raise ValueError(
            f"{path} is the TRL adapter's metrics log: it holds its live shadows' summary, not "
            f"rewards; show it with `frontier shadow replay {path}` (no --rule)"
        )
    texts = False  # whether a rule derives features from the prompts' text
    for config in configs:
        cls = SELECTORS.get(config.selector)
        need = None if cls is None else cls.requirement(cls.config_class())
        if need is None:
            continue
        if (fmt in ("trl", "verl") or prompts is not None) and "prompts" in need.fields:
            texts = True  # the log, or --prompts, holds each prompt's text: features from it
            continue
        held = "a rewards.jsonl (prompt ids only) does" if fmt == "frontier" else "the log does"
        given = _PROMPTS_ROUTE if fmt == "frontier" and "prompts" in need.fields else ""
        raise ValueError(
            f"rule {config.name!r}: {config.selector} reads prompt features or text, which "
            f"{held} not hold; {given}replay greso or screenK, or run it live: "
            f"{_LIVE[fmt].format(rule=config.name)}"
        )
    shadows: list[Shadow] = []
    for t, got in enumerate(_read_steps(path, fmt, rewards, count, texts)):
        if not shadows:
            size = pool_size or got.pool_size
            if size is None:
                raise ValueError(
                    f"{path}: names no pool_size; pass --pool-size N (the prompts in the "
                    "training pool)"
                )
            if size > MAX_POOL:
                raise ValueError(_pool_refusal(f"{path}: its pool_size {size:,}"))
            if prompts is not None and len(prompts) != size:
                raise ValueError(
                    f"--prompts gives {len(prompts):,} prompts; the log's pool holds {size:,} "
                    f"({'--pool-size' if pool_size else 'its pool_size'}): give the run's "
                    "pool, prompt id i on line i + 1"
                )
            texts_by_id = tuple(prompts) if prompts is not None else got.prompts
            pool = TaskPool(num_tasks=size, prompts=_pool_prompts(texts_by_id, size))
            start = got.seed if seed is None else seed
            # TRL and verl drop each epoch's remainder: a pass is pool // batch batches.
            whole = None if got.batch is None else max(size // got.batch, 1) * got.batch
            with warnings.catch_warnings():  # evidence_note says it, for a replay's reader
                warnings.simplefilter("ignore", EvidenceWarning)
                shadows = [
                    build_shadow(c, pool, start or 0, min(whole or size, size)) for c in configs
                ]
        if int(got.task_ids.max()) >= shadows[0].pool_size:
            raise ValueError(
                f"{path}: step {got.step} names prompt {int(got.task_ids.max())}, outside a "
                f"pool of {shadows[0].pool_size}; pass the run's --pool-size"
            )
        n = got.rewards.shape[1]
        r = got.rewards.reshape(-1)
        if reward_range is not None:
            r = to_unit_range(r, reward_range)
        elif (r.min() < 0 or r.max() > 1) and (
            reader := next((s for s in shadows if s.selector is not None), None)
        ):
            raise ValueError(
                f"{path}: step {got.step}: shadow {reader.name!r}: rewards must lie in [0, 1], "
                f"got [{r.min():g}, {r.max():g}]; pass --reward-range LOW HIGH (your reward "
                "function's range, mapped onto [0, 1] as the adapters' reward_range maps it)"
            )
        for shadow in shadows:
            try:
                lengths = None if got.lengths is None else got.lengths.reshape(-1)
                shadow.observe(t, got.task_ids, r, n, lengths)
            except ValueError as exc:
                raise ValueError(f"{path}: step {got.step}: {exc}") from None
        if on_step is not None:
            on_step(shadows)
    return shadows


_PROMPTS_ROUTE = (
    "give the pool's prompt texts with --prompts FILE (a JSON string or chat message list a "
    "line, prompt id i on line i + 1), "
)
"""How a rule that derives features from prompt text replays a rewards.jsonl."""
_LIVE = {
    "frontier": "frontier train --shadows {rule}",
    "trl": "`shadows: [{rule}]` with `rollouts: full` in the TRL YAML "
    "(FrontierConfig(shadows=['{rule}'], rollouts='full'))",
    "verl": "`shadows: [{rule}]` in verl's sampler fields (trainer.v1.sampler.sampler_kwargs "
    "or data.sampler.frontier), or SkyRL's frontier.shadows=[{rule}]",
    "metrics": "",
}
"""How to run a rule as a live shadow, by the trainer whose log was given."""


def _pool_prompts(texts: tuple[str, ...] | None, size: int) -> tuple[str, ...] | None:
    """The pool's prompts: the log's texts by id, and no text ('') for a prompt of a larger
    --pool-size that the log never shows (never drawn: it weighs only in the featurizer's
    fit); None where no rule reads text."""
    if texts is None:
        return None
    return texts[:size] + ("",) * (size - len(texts))


def read_prompts(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """A pool's prompt texts by id from a JSON-lines file (`--prompts`): line i + 1 holds
    prompt i, a string or a list of chat messages (read as `role: content` lines, as the
    adapters' pools hold them), gunzipped where it is a .gz; at most MAX_POOL prompts and
    MAX_PROMPT_CHARS characters of text. A ValueError naming the file, the line and the fix."""
    fix = "give the pool's prompts as JSON lines, prompt id i on line i + 1"
    regular_file(path, fix)
    if (why := packed(path)) is not None:
        raise ValueError(why)
    fh, _ = open_text(path, MAX_LOG_BYTES, fix)
    out: list[str] = []
    chars = 0
    with fh:
        for where, record in jsonl_records(fh, path, max_chars=MAX_LINE_CHARS, max_depth=8):
            if not isinstance(record, str | list):
                raise ValueError(f"{where} is not a prompt (a string or chat messages); {fix}")
            try:
                text = prompt_text(record)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}; {fix}") from None
            chars += len(text)
            if len(out) == MAX_POOL or chars > MAX_PROMPT_CHARS:
                raise ValueError(
                    f"{where}: more than {MAX_POOL:,} prompts or {MAX_PROMPT_CHARS:,} "
                    "characters, the most a replay keeps; replay rules that read no text "
                    "(greso, screenK)"
                )
            out.append(text)
    if not out:
        raise ValueError(f"{path}: holds no prompt; {fix}")
    return tuple(out)


def evidence_note(
    shadows: Sequence[Shadow],
    path: str | os.PathLike[str],
    log_format: str | None = None,
    prompts: str | os.PathLike[str] | None = None,
) -> str:
    """Which evidence the rules whose selectors read features used in a replay of the log at
    `path` (features derived from its prompt text, or from `prompts`, the file of a
    rewards.jsonl's pool), and how a live shadow's may differ; '' where no rule read
    features."""
    names = [
        s.name for s in shadows if s.selector is not None and "features" in s.selector.evidence
    ]
    if not names:
        return ""
    fmt = _format_of(path, log_format)
    where, live = _EVIDENCE.get(fmt, ("the log", ""))
    text = f"the log's prompts, {where}"
    differs = (
        " Even over the same text a live pool is the whole dataset in its order (the "
        "featurizer fitted over other prompts, other ids and draws): the live shadow may differ."
    )
    if fmt == "frontier":  # the pool itself, in its order: only the features differ
        text, differs = f"{prompts or 'the prompts given'}, the pool's prompts by id", ""
    return (
        f"features ({', '.join(names)}): derived from the text of {text}, as an adapter's pool "
        f"without features derives them. {live}{differs}"
    )


_EVIDENCE = {
    "frontier": (
        "",
        "A live `frontier train` shadow reads the run's own features instead (given: self, "
        "the default: the policy's self-embeddings), which its log does not hold; an adapter's "
        "default shadow derives them from the prompts' text, as here.",
    ),
    "trl": (
        "TRL's `prompt` column (a conversation's messages as `role: content` lines)",
        "A live TRL shadow derives them alike from the dataset's prompt column beside a "
        "selector that reads no features (uniform, the default); where the run's own selector "
        "reads features (self_embeddings: auto, e.g. selector: pcl), or self_embeddings: on or "
        "a features_column is set, its shadows read the policy's own embeddings (evidence "
        "features=policy) or that column instead.",
    ),
    "verl": (
        "verl's `input` (the prompt as the model read it, chat template applied, decoded "
        "without special tokens)",
        "A live verl shadow derives them from the dataset's prompt column (chat messages as "
        "`role: content` lines), or reads features_key's column or self_embeddings_model's "
        "embeddings where set.",
    ),
}
"""Per log format: where its prompt text comes from, and what a live shadow reads instead."""


def _pool_refusal(what: str) -> str:
    return (
        f"{what} is more than the {MAX_POOL:,} prompts a replay holds; pass the run's "
        "--pool-size (the prompts in its training pool)"
    )


def _format_of(path: str | os.PathLike[str], log_format: str | None) -> str:
    name = Path(path).name
    reward_log = name == REWARD_LOG or name.endswith(f".{REWARD_LOG}.gz")  # the ledger's copies
    return log_format or ("frontier" if reward_log else detect_format(path))


def length_unit(
    path: str | os.PathLike[str], log_format: str | None = None, tokenizer: str | None = None
) -> str:
    """What the token counts of a replay of the log at `path` count: the trainer's own
    generated tokens (a rewards.jsonl), or a TRL or verl completion text's characters (its
    tokens under `tokenizer`, the name of the tokenizer `replay`'s `count` applies)."""
    if _format_of(path, log_format) == "frontier":
        return "generated tokens (the trainer's own counts)"
    if tokenizer:
        return (
            f"{tokenizer}'s tokens of the completion text (re-encoded; special tokens not counted)"
        )
    return f"{LENGTH_UNIT} of the completion text (not tokens: the log holds no token counts)"


def reward_note(
    path: str | os.PathLike[str],
    log_format: str | None = None,
    rewards: Sequence[tuple[str, float]] | None = None,
) -> str | None:
    """What a replay of the TRL log at `path` summed each completion's reward from, and where
    the weights came from (`rewards`: --reward-column); None for other logs."""
    if _format_of(path, log_format) != "trl":
        return None
    named = summed_columns(path, rewards)
    terms = " + ".join(f"{w:g} x {n}" for n, w in named.columns)
    return f"reward: {terms}: {named.how}."


def _read_steps(
    path: str | os.PathLike[str],
    fmt: str,
    rewards: Sequence[tuple[str, float]] | None,
    count: Count | None = None,
    texts: bool = False,
) -> Iterator[RewardStep]:
    """The log's steps in frontier-rft's terms, whichever format it is; with `texts`, a TRL
    or verl log's prompt texts by id on each step."""
    if fmt == "frontier":
        if rewards:
            raise ValueError("--reward-column names a TRL log's columns; a rewards.jsonl has none")
        if count is not None:
            raise ValueError(
                "--tokenizer counts a TRL or verl log's completion texts; a rewards.jsonl holds "
                "the trainer's own token counts: drop --tokenizer"
            )
        yield from read_reward_log(Path(path) / REWARD_LOG if Path(path).is_dir() else path)
        return
    steps, prompts, held = read_foreign_log(
        path, fmt, rewards=rewards, count=count or characters, texts=texts
    )
    seed = run_seed(path, fmt)
    batch = max(ids.size for _, ids, _, _ in steps)  # a step with unscored groups has fewer
    for step, ids, r, lengths in steps:
        yield RewardStep(step, prompts, seed, ids, r, lengths, batch, held)


def run_seed(path: str | os.PathLike[str], fmt: str) -> int | None:
    """The seed of a TRL run's live shadows, as the frontier-rft TRL adapter records it in
    its output dir (REWARDS_FILE); None for other logs (a rewards.jsonl names its own)."""
    return read_run_seed(output_dir(path)) if fmt == "trl" else None


def seed_note(
    path: str | os.PathLike[str], log_format: str | None, seed: int | None, used: int
) -> str:
    """Which seed the rules' draws used, and where it came from."""
    if seed is not None:
        return f"Seed of the rules' draws: {used} (--seed)."
    fmt = _format_of(path, log_format)
    if fmt == "frontier":
        return f"Seed of the rules' draws: {used} (the log's, as its live shadows used)."
    if fmt == "trl" and run_seed(path, fmt) is not None:
        where = output_dir(path) / REWARDS_FILE
        return f"Seed of the rules' draws: {used} (the run's, from {where})."
    return (
        f"Seed of the rules' draws: {used} (the log records none; pass --seed with the run's "
        "seed to draw as its live shadows did)."
    )


def replay_table(shadows: Sequence[Shadow]) -> str:
    """Per rule and pass over the pool, and in total: rollouts saved, the share of the run's
    generated tokens saved ('-' where the log holds no lengths), groups left out, the share
    of those that were zero-variance, informative groups lost and their |advantage|."""
    table = passes_table([(shadow.name, shadow.passes()) for shadow in shadows])
    return "\n".join([table, *filter(None, (_saved_none(shadow) for shadow in shadows))])


def _saved_none(shadow: Shadow) -> str:
    """Why a rule that skipped prompts saved no rollouts, in one line ('' where it saved some
    or skipped none): every step it skipped in held one prompt, and a window that keeps none
    walks on to a prompt beyond the step, whose first round it spends."""
    total = shadow.passes()[-1]
    if not total["skipped"] or total["rollouts_saved"]:
        return ""
    return (
        f"{shadow.name}: skipped {total['skipped']:.0f}, saved 0: each step it skipped in held "
        "one prompt, and a rule that skips a step's only prompt walks on to the next one and "
        "rolls that out instead, so at 1 prompt a step skipping saves nothing (it saves at "
        "several prompts a step)"
    )


def tokens_note(total: Mapping[str, float], unit: str, missing: str | None = None) -> str:
    """What the table's token shares count: `unit` over which steps, or that the log holds
    no completion lengths (`missing`: why, where the default reason does not fit); `total`
    is a rule's last `passes()` row (its whole run)."""
    steps, known = int(total["steps"]), int(total["token_steps"])
    if known == 0:
        why = missing or (
            "it holds no completions or lengths; a rewards.jsonl written by frontier train "
            "before lengths were logged has none"
        )
        return f"tokens: not in this log ({why})"
    where = "every step" if known == steps else f"{known} of {steps} steps (the rest hold none)"
    return (
        f"tokens saved share: of what the run generated, counted in {unit}, over {where} "
        f"({int(total['tokens']):,} in all)."
    )


# ---------------------------------------------------------------------------- a live run's summary
def read_shadow_summary(
    path: str | os.PathLike[str],
) -> tuple[int, list[tuple[str, list[dict[str, float]]]]]:
    """The last end-of-run summary of live shadows in a metrics log (the TRL adapter's
    `frontier_metrics.jsonl`, shadow/live.py writes it): its step and, per rule,
    its `Shadow.passes()` rows. A ValueError naming the file and the fix."""
    file = Path(path) / "frontier_metrics.jsonl" if Path(path).is_dir() else Path(path)
    fix = "give the frontier_metrics.jsonl of a TRL run with shadows that ran to its end"
    regular_file(file, fix)
    found: tuple[str, Any, Any] | None = None
    with open(file, encoding="utf-8", errors="replace") as fh:
        for where, record in jsonl_records(fh, file, max_chars=MAX_LINE_CHARS, max_depth=8):
            if isinstance(record, dict) and SUMMARY_KEY in record:
                found = where, record.get("step"), record[SUMMARY_KEY]
    if found is None:
        raise ValueError(
            f"{file}: holds no end-of-run shadow summary (a run without shadows, cut short, or "
            "written before the summary existed); its last curriculum/shadow/ metrics are the "
            "run's figures so far"
        )
    where, step, summary = found
    bad = ValueError(f"{where}: {SUMMARY_KEY} is not a summary of shadows' passes; {fix}")
    if not isinstance(summary, dict) or not summary or not _int(step, 1 << 53):
        raise bad
    out = []
    for name, rows in summary.items():
        if not isinstance(rows, list) or not rows:
            raise bad
        parsed = []
        for row in rows:
            if not isinstance(row, dict) or set(row) != set(PASS_KEYS):
                raise bad
            values = {k: math.nan if v is None else v for k, v in row.items()}
            if not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()
            ):
                raise bad
            parsed.append({k: float(v) for k, v in values.items()})
        out.append((str(name)[:80], parsed))
    return step, out
