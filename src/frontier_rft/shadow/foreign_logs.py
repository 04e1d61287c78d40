"""Per-prompt rewards from TRL's and verl's own logs, as steps `frontier shadow replay` can
feed its shadows (docs/shadow.md). No torch here; pyarrow only for TRL's parquet files.

- **TRL** (`GRPOConfig(log_completions=True)`): `completions/completions_<step>.parquet`, a
  wandb table export or CSV, one row per completion with its prompt, completion and one
  column per reward function; which columns are rewards, with what weights, and the rows:
  shadow/trl_table.py.
- **verl** (`trainer.rollout_data_dir=DIR`): each step writes `DIR/<step>.jsonl`, one line
  per sample with `input` (the decoded prompt), `output`, `score` (its reward), `step`; a
  step file gzipped (`<step>.jsonl.gz`, as log rotation leaves the older ones) is read alike.

Their files are read bounded, gunzipped where gzip, archives and gzipped parquet refused
(shadow/log_reading.py). This module tells a log's format (`detect_format`) and reads either
into steps (`read_foreign_log`).

Both logs hold each completion's text (TRL's `completion`, verl's `output`), not its token
count: a completion's length is read as its text's size in `count`'s unit (characters by
default, `LENGTH_UNIT`; a tokenizer's count where the caller passes one), counted a chunk of
completions at a time (`CHUNK_ROWS`, `CHUNK_CHARS`) so that a tokenizer encodes them in one
batch call. A step where some completion has no text gives no lengths.

Neither log names prompts by id: a step's rows are grouped by prompt text, and the texts
get ids 0, 1, ... in order of first appearance (step by step, row by row), the default
pool size being the number of distinct prompts seen. Both number their steps from 1 (the
trainer's global step) and drop each epoch's remainder (TRL's `RepeatSampler`, verl's
`drop_last=True` dataloader). Only the columns a replay needs are read, a step's rows are
kept as arrays and digests (`MAX_ROWS` says how much), and the bound is on completions read,
not on bytes on disk. A rule whose selector derives features from the prompts' text
(`skip`) has each distinct prompt's text kept too (`texts=True`; `MAX_PROMPT_CHARS` bounds
it), as an adapter's pool holds it (`prompt_text`: a conversation's messages as `role:
content` lines). Every problem is one ValueError line naming the file, the problem and the
fix.
"""

from __future__ import annotations

import hashlib
import math
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.features.text import prompt_text
from frontier_rft.shadow.log_reading import (
    GZIP_MAGIC,
    HOW,
    MAX_LINE_CHARS,
    MAX_ROWS,
    STEP_FILE,
    Read,
    completion_texts,
    inner_suffix,
    json_lines,
    listing,
    logged_number,
    logged_step,
    open_text,
    step_files,
    text_digest,
    unpacked,
)
from frontier_rft.shadow.trl_table import reward_columns, trl_rows

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_ROWS",
    "FORMATS",
    "LENGTH_UNIT",
    "MAX_PROMPT_CHARS",
    "MAX_ROWS",
    "Count",
    "characters",
    "completions_total",
    "detect_format",
    "read_foreign_log",
]

FORMATS = ("frontier", "trl", "verl", "metrics")
"""The logs `frontier shadow replay --format` reads: reward logs, and the TRL adapter's
`frontier_metrics.jsonl` (its live shadows' end-of-run summary)."""
MAX_PROMPT_CHARS = 1 << 27
"""Most characters of prompt text kept (all distinct prompts together) for a rule that
derives features from it: 134M, about 134 MB of ASCII text (a 20k-prompt dataset of
2,000-character prompts is 40M); a log of more is refused in one line."""
LENGTH_UNIT = "characters"
"""What a completion's length counts when no tokenizer is given: its text's characters
(Unicode code points; a conversation's, its messages' contents)."""
CHUNK_ROWS = 4096
"""Most completions whose texts `count` is given in one call: a fast tokenizer encodes them
as one batch on its thread pool, where one call per completion used one core (issue 72: a
1.1 GB TRL log took about 17 CPU-minutes). The encoding's CPU time is much the same either
way (measured); the wall time falls with the cores free."""
CHUNK_CHARS = 1 << 21
"""Most characters of completion text given to one call to `count` (a chunk is counted when
it reaches CHUNK_ROWS completions or this many characters, whichever comes first): a
tokenizer's batch call holds the chunk's token ids as Python lists, about 50 MB at the peak
for 2.4M characters (measured; 380 MB for 18M)."""
_FIRST = {
    "trl": "copy the first steps' completions_<step>.parquet files to a directory of their own",
    "verl": "copy the first steps' <step>.jsonl files to a directory of their own",
}
Step = tuple[int, np.ndarray, np.ndarray, np.ndarray | None]
"""One step: its number in the log (the trainer's, from 1), its prompt ids, their groups of
rewards (prompts, group size), and the groups' completion lengths alike (None where some
completion has no text)."""
Row = tuple[int, Any, float, bytes, int]
"""One completion: its step, its prompt (the log's cell: text or a conversation), its
reward, its text's digest (TRL's, to tell a generation logged again from a new one; empty
where the log has no completion), and its text's length (-1: no text)."""
Count = Callable[[list[str]], Sequence[int]]
"""The lengths of a batch of completion texts, one per text, in some unit (`characters`; a
tokenizer's batch call: tokens)."""


def characters(texts: list[str]) -> list[int]:
    """Each text's length in characters (Unicode code points): the default `Count`."""
    return [len(text) for text in texts]


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of the log at `path`, from its file names or its first line; a ValueError
    saying to pass --format when neither tells."""
    p = Path(path)
    if p.is_dir():
        names = {f.name for f in listing(p)}
        if any(STEP_FILE["trl"].fullmatch(n) for n in names) or (p / "completions").is_dir():
            return "trl"
        if any(STEP_FILE["verl"].fullmatch(n) for n in names):
            return "verl"
        if "rewards.jsonl" in names:
            return "frontier"
        if "frontier_metrics.jsonl" in names:
            return "metrics"
    elif not p.exists():
        raise ValueError(f"{path} does not exist; give a reward log or a directory of one")
    else:
        unpacked(p, "give a reward log or a directory of one")
        if inner_suffix(p) in (".parquet", ".csv", ".table.json"):
            return "trl"  # TRL's files, or a wandb table export
        try:
            fh, _ = open_text(p)
            with fh:
                line = fh.readline(MAX_LINE_CHARS + 1)
        except OSError:
            line = ""  # unreadable: no format to tell; the refusal says so
        try:
            record = loads_bounded(line, max_chars=MAX_LINE_CHARS, max_depth=64)
        except ValueError:
            record = None
        if isinstance(record, dict):
            if "task_ids" in record:
                return "frontier"
            if "input" in record and "score" in record:
                return "verl"
            if "prompt" in record or {"columns", "data"} <= record.keys():
                return "trl"
            if p.name == "frontier_metrics.jsonl" or {"step", "time"} <= record.keys():
                return "metrics"
    raise ValueError(
        f"{path}: cannot tell which log this is; pass --format frontier, trl, verl or metrics"
    )


def read_foreign_log(
    path: str | os.PathLike[str],
    fmt: str,
    *,
    rewards: Sequence[tuple[str, float]] | None = None,
    count: Count = characters,
    texts: bool = False,
) -> tuple[list[Step], int, tuple[str, ...] | None]:
    """The steps of a TRL or verl log, in order, the number of distinct prompts seen, and
    with `texts` each one's text by id (`prompt_text` of its cell; None without `texts`).
    `rewards` names TRL's reward columns and their weights (default: those `reward_columns`
    finds, the run's recorded weights or each weighted 1; else the one column that is not
    step, prompt, completion, advantage or an image, weighted 1); `count` gives the lengths
    of a batch of completion texts (default: their characters), called once per chunk of
    completions."""
    if fmt not in ("trl", "verl"):
        raise ValueError(f"--format {fmt}: read_foreign_log reads trl or verl")
    files = step_files(Path(path), fmt)
    columns = reward_columns(path, rewards) if fmt == "trl" else None
    steps = _Steps(str(path), fmt, texts)
    read = (_verl_rows(f) if fmt == "verl" else trl_rows(f, columns) for f in files)
    for row in _counted((row for rows in read for row in rows), count):
        steps.add(*row)
    return steps.done()


def completions_total(path: str | os.PathLike[str], fmt: str) -> int | None:
    """The completions a TRL or verl log holds, where cheap to know before reading it: TRL's
    parquet files' row counts (their metadata), or one per non-blank line of plain JSON-lines
    files (verl's; a TRL table as JSON lines); None otherwise (a .gz, CSV or wandb export)."""
    try:
        files = step_files(Path(path), fmt)
    except ValueError:
        return None  # the replay says why
    total = 0
    for file in files:
        name = file.name.lower()
        if name.endswith(".parquet"):
            try:
                import pyarrow.parquet as pq

                total += int(pq.ParquetFile(file).metadata.num_rows)
            except (ImportError, OSError, ValueError):  # the read says why
                return None
        elif name.endswith(".jsonl") and not name.endswith(".table.json"):
            try:
                with open(file, "rb") as fh:
                    if fh.read(2) == GZIP_MAGIC:
                        return None
                    fh.seek(0)
                    total += sum(1 for line in fh if line.strip())
            except OSError:
                return None
        else:
            return None
    return total


def _verl_rows(file: Path) -> Iterator[Read]:
    for where, record in json_lines(file):
        if not isinstance(record, dict):
            raise ValueError(f"{where} is not a JSON object; {HOW['verl']}")
        for key in ("step", "input", "score"):
            if key not in record:
                raise ValueError(f"{where} has no {key!r}; {HOW['verl']}")
        score = logged_number(record["score"])
        if score is None or not math.isfinite(score):
            raise ValueError(f"{where}: score must be a finite number, got {record['score']!r:.40}")
        texts = completion_texts(record.get("output"))
        yield logged_step(record["step"], where, "verl"), record["input"], score, b"", texts


def _counted(rows: Iterable[Read], count: Count) -> Iterator[Row]:
    """`rows` in order, each with its texts' length in place of its texts, counted by one
    call to `count` per chunk of CHUNK_ROWS completions or CHUNK_CHARS characters of text
    (memory: one chunk's texts)."""
    chunk: list[Read] = []
    held = 0
    for row in rows:
        chunk.append(row)
        held += sum(len(t) for t in row[4] or ())
        if len(chunk) >= CHUNK_ROWS or held >= CHUNK_CHARS:
            yield from _count_chunk(chunk, count)
            chunk, held = [], 0
    yield from _count_chunk(chunk, count)


def _count_chunk(chunk: list[Read], count: Count) -> Iterator[Row]:
    """A chunk's rows with their lengths: `count` of all their texts at once, each row's
    texts summed (-1: a row with no text)."""
    texts = [t for row in chunk for t in row[4] or ()]
    sizes = count(texts) if texts else []
    if len(sizes) != len(texts):
        raise ValueError(
            f"count gave {len(sizes)} lengths for {len(texts)} completion texts; it must give "
            "one length per text"
        )
    at = 0
    for step, prompt, reward, text, parts in chunk:
        if parts is None:
            yield step, prompt, reward, text, -1
            continue
        size = 0
        for n in sizes[at : at + len(parts)]:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"a completion's length must be an int >= 0, got {str(n)[:40]}")
            size += n
        at += len(parts)
        yield step, prompt, reward, text, size


class _Group:
    """One prompt's completions in a step: rewards and lengths, compact."""

    __slots__ = ("rewards", "sizes")

    def __init__(self) -> None:
        self.rewards = array("d")
        self.sizes = array("q")


class _Steps:
    """Rows grouped by step and prompt as they are read (memory: a digest and two arrays per
    prompt and step, a reward and a length a completion; with `keep_prompts`, each distinct
    prompt's text, at most MAX_PROMPT_CHARS in all), then checked and numbered by first
    appearance."""

    def __init__(self, path: str, fmt: str, keep_prompts: bool = False):
        self.path, self.fmt = path, fmt
        self.rows = 0
        self.groups: dict[int, dict[bytes, _Group]] = {}
        self.texts: dict[int, Any] = {}  # a step's completions' digest, in order
        self.untexted: set[int] = set()  # steps with a row that has no completion
        self.prompts: dict[bytes, str] | None = {} if keep_prompts else None
        self.prompt_chars = 0

    def add(self, step: int, prompt: Any, reward: float, text: bytes, size: int) -> None:
        if self.rows == MAX_ROWS:
            raise ValueError(
                f"{self.path}: more than {MAX_ROWS:,} completions, the most a replay reads; "
                f"replay its first steps ({_FIRST[self.fmt]})"
            )
        self.rows += 1
        key = text_digest(prompt)
        if self.prompts is not None and key not in self.prompts:
            self.prompts[key] = self._prompt_text(step, prompt)
        group = self.groups.setdefault(step, {}).get(key)
        if group is None:
            group = self.groups[step][key] = _Group()
        group.rewards.append(reward)
        group.sizes.append(size)
        if text:
            self.texts.setdefault(step, hashlib.blake2b(digest_size=16)).update(text)
        else:
            self.untexted.add(step)

    def _prompt_text(self, step: int, prompt: Any) -> str:
        """A new prompt's text, counted against MAX_PROMPT_CHARS."""
        try:
            text = prompt_text(prompt)
        except ValueError as exc:
            raise ValueError(f"{self.path}: step {step}: {exc}; {HOW[self.fmt]}") from None
        self.prompt_chars += len(text)
        if self.prompt_chars > MAX_PROMPT_CHARS:
            raise ValueError(
                f"{self.path}: its prompts hold more than {MAX_PROMPT_CHARS:,} characters of "
                "text, the most a replay keeps to derive a rule's features from; replay its "
                f"first steps ({_FIRST[self.fmt]}), or rules that read no text (greso, screenK)"
            )
        return text

    def done(self) -> tuple[list[Step], int, tuple[str, ...] | None]:
        """The steps in order, checked, prompts numbered by first appearance, the number of
        distinct prompts, and (kept) their texts by id."""
        path, fmt = self.path, self.fmt
        if not self.rows:
            raise ValueError(f"{path}: holds no completion; {HOW[fmt]}")
        ids: dict[bytes, int] = {}
        out: list[Step] = []
        previous: tuple[list[tuple[bytes, list[float | None]]], bytes] | None = None
        order = sorted(self.groups)
        for before, step in zip([None, *order], order, strict=False):
            groups = self.groups[step]
            where = f"{path}: step {step}"
            if before is not None and step != before + 1:
                raise ValueError(
                    f"{where} follows step {before}: steps are missing (truncated, or logged "
                    f"every few steps?); {HOW[fmt]}"
                )
            sizes = sorted({len(g.rewards) for g in groups.values()})
            if sizes[0] < 2:
                fix = "log_unique_prompts=False, " if fmt == "trl" else ""
                raise ValueError(
                    f"{where} has a prompt with one completion: a replay needs whole groups "
                    f"(>= 2 completions per prompt); {fix}{HOW[fmt]}"
                )
            if len(sizes) > 1:
                raise ValueError(
                    f"{where} has groups of {' and '.join(map(str, sizes[:2]))} completions: "
                    "a replay needs one group size per step (a prompt twice in a batch, or "
                    "groups filtered?); replay a log where every prompt has its whole group"
                )
            seen = [
                (k, [None if math.isnan(r) else r for r in g.rewards]) for k, g in groups.items()
            ]
            text = self.texts[step].digest() if step in self.texts else b""
            if fmt == "trl" and step not in self.untexted and (seen, text) == previous:
                continue  # the same generation logged again (num_iterations > 1)
            previous = (seen, text)
            # A group with an unscored completion is not whole: left out, as TRL's live
            # shadows leave it out (shadow/live.py); a step with none whole feeds
            # nothing.
            whole = {k: g for k, g in groups.items() if not any(math.isnan(r) for r in g.rewards)}
            for key in whole:
                ids.setdefault(key, len(ids))
            if whole:
                lengths = np.array([g.sizes for g in whole.values()], dtype=np.int64)
                out.append(
                    (
                        step,
                        np.array([ids[k] for k in whole], dtype=np.int64),
                        np.array([g.rewards for g in whole.values()], dtype=np.float64),
                        lengths if lengths.min() >= 0 else None,
                    )
                )
        if not out:
            raise ValueError(
                f"{path}: no prompt has a whole group of scored completions; {HOW[fmt]}"
            )
        texts = None if self.prompts is None else tuple(self.prompts[k] for k in ids)
        return out, len(ids), texts
