"""Per-prompt rewards from TRL's and verl's own logs, as steps `frontier shadow replay` can
feed its shadows (docs/shadow.md). No torch here; pyarrow only for TRL's parquet files.

- **TRL** (`GRPOConfig(log_completions=True)`): at each logging step `GRPOTrainer.log`
  writes `<output_dir>/completions/completions_<step:05d>.parquet`, one row per completion
  of the last generation batch, with the columns `step`, `prompt`, `completion`, one column
  per reward function, any `log_extra` column and `advantage`; with `report_to="wandb"` the
  same table is logged as `completions` (exported as a `*.table.json` of `columns` and
  `data`, or as CSV). A row's reward is the sum of its reward columns, `nansum` over the
  functions as TRL computes it (each weighted by `reward_weights`, 1 unless given). The table
  does not say which columns are reward functions' and which are `log_extra`'s, nor their
  weights: the frontier-rft TRL adapter's record in the output dir does (shadow/run_rewards.py),
  else TRL's `trainer_state.json` names them (`reward_names`, each weighted 1), else the
  caller names them (`reward_columns` says which).
- **verl** (`trainer.rollout_data_dir=DIR`): each step writes `DIR/<step>.jsonl`, one line
  per sample with `input` (the decoded prompt), `output`, `score` (its reward), `step`; a
  step file gzipped (`<step>.jsonl.gz`, as log rotation leaves the older ones) is read alike.

gzip is read for single JSON-lines and CSV files (a stream read line by line, bounded by what
it decompresses to); an archive (tar, zip) or a gzipped parquet file is refused in one line
that says so and how to unpack it, never read as text.

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

import csv
import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from frontier_rft.core.config import did_you_mean
from frontier_rft.core.jsonsafe import jsonl_records, loads_bounded
from frontier_rft.features.text import prompt_text
from frontier_rft.shadow.run_rewards import REWARDS_FILE, read_run_rewards

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_ROWS",
    "FORMATS",
    "LENGTH_UNIT",
    "MAX_GZIP_BYTES",
    "MAX_PROMPT_CHARS",
    "MAX_ROWS",
    "Count",
    "RewardColumns",
    "characters",
    "completions_total",
    "detect_format",
    "open_text",
    "output_dir",
    "packed",
    "read_foreign_log",
    "regular_file",
    "reward_columns",
    "reward_names",
    "summed_columns",
]

FORMATS = ("frontier", "trl", "verl", "metrics")
"""The logs `frontier shadow replay --format` reads: reward logs, and the TRL adapter's
`frontier_metrics.jsonl` (its live shadows' end-of-run summary)."""
MAX_ROWS = 1 << 23
"""Most completions read from one TRL or verl log: 8.4M (a 20k-prompt, 8-rollout, 2-epoch
run is 320k). Kept as arrays and digests, about 80 bytes a completion at the peak (groups
of 8, measured), so under 1 GiB."""
MAX_PROMPT_CHARS = 1 << 27
"""Most characters of prompt text kept (all distinct prompts together) for a rule that
derives features from it: 134M, about 134 MB of ASCII text (a 20k-prompt dataset of
2,000-character prompts is 40M); a log of more is refused in one line."""
MAX_GZIP_BYTES = 1 << 34
"""Most bytes a TRL or verl log's file is read to (decompressed, blank lines included): 16
GiB, beyond any log of MAX_ROWS completions a replay reads; a small .gz that expands without
end is refused at it, not read for hours."""
MAX_LINE_CHARS = 1 << 24
"""Longest line (or wandb table file) read."""
MAX_STATE_CHARS = 1 << 26
"""Largest trainer_state.json read for its reward functions' names."""
_NOT_REWARDS = frozenset({"step", "prompt", "completion", "advantage", "image", "images"})
"""TRL's completion-table columns that are not reward functions."""
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
_STEP_FILE = {
    "trl": re.compile(r"completions_(\d+)\.parquet((?:\.[^.]+)*)", re.IGNORECASE),
    "verl": re.compile(r"(\d+)\.jsonl((?:\.[^.]+)*)", re.IGNORECASE),
}
"""A step's file in a TRL completions/ or a verl rollout dir, and what follows its suffix
(`.gz`: verl's is read gunzipped; anything else is refused in one line)."""
_READ_GZIP = "gzip is read for single JSON-lines and CSV files"
_ARCHIVE_NAMES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
# TRL 1.16, trl/trainer/grpo_trainer.py: `_generate_and_score_completions` logs, per reward
# function name (`self.reward_func_names`), the metrics `rewards/<name>/mean` and `/std`
# (`eval_` prefixed in evaluation), which `Trainer.log` keeps in `trainer_state.json`'s
# `log_history`; `GRPOTrainer.log` writes the completions table as `step`, `prompt`,
# `completion`, `**self._logs["rewards"]` (one column per name), `**self._logs["extra"]`
# (`log_extra`'s columns, e.g. a gold answer or a length) and `advantage`.
_REWARD_METRIC = re.compile(r"(?:eval_)?rewards/(.+)/(?:mean|std)")
_HOW = {
    "trl": "log it with GRPOConfig(log_completions=True, logging_steps=1) (docs/shadow.md)",
    "verl": "dump it with trainer.rollout_data_dir=DIR (docs/shadow.md)",
}
_FIRST = {
    "trl": "copy the first steps' completions_<step>.parquet files to a directory of their own",
    "verl": "copy the first steps' <step>.jsonl files to a directory of their own",
}
_STEP_NAMES = {"trl": "completions_<step>.parquet", "verl": "<step>.jsonl or <step>.jsonl.gz"}
"""The step files a directory of each format is read from, for messages."""

Step = tuple[int, np.ndarray, np.ndarray, np.ndarray | None]
"""One step: its number in the log (the trainer's, from 1), its prompt ids, their groups of
rewards (prompts, group size), and the groups' completion lengths alike (None where some
completion has no text)."""
Row = tuple[int, Any, float, bytes, int]
"""One completion: its step, its prompt (the log's cell: text or a conversation), its
reward, its text's digest (TRL's, to tell a generation logged again from a new one; empty
where the log has no completion), and its text's length (-1: no text)."""
Read = tuple[int, Any, float, bytes, list[str] | None]
"""One completion as read, before its length is counted: a Row with its texts (one, or a
conversation's message contents; None: no text) in place of the length."""
Count = Callable[[list[str]], Sequence[int]]
"""The lengths of a batch of completion texts, one per text, in some unit (`characters`; a
tokenizer's batch call: tokens)."""


def characters(texts: list[str]) -> list[int]:
    """Each text's length in characters (Unicode code points): the default `Count`."""
    return [len(text) for text in texts]


def regular_file(path: str | os.PathLike[str], fix: str) -> None:
    """A ValueError unless `path` is a regular file: a FIFO would block the read and a pipe
    or device has no size to bound it by."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror}); {fix}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} is not a regular file (a pipe, FIFO or device); copy the log to a file "
            "and replay that"
        )


_GZIP_MAGIC = b"\x1f\x8b"
"""A gzip stream's first two bytes (the ledger keeps reward logs as .jsonl.gz)."""


class _Counted(io.RawIOBase):
    """A binary stream that counts the bytes read from it (decompressed ones for a .gz) and
    refuses, in one ValueError line, to read past `max_bytes` or a gzip stream cut off or
    damaged (zlib's EOFError or BadGzipFile would otherwise surface as a traceback)."""

    def __init__(self, raw: Any, path: object, max_bytes: int | None, fix: str) -> None:
        super().__init__()
        self.raw, self.path, self.max_bytes, self.fix = raw, path, max_bytes, fix
        self.read_so_far = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            n = self.raw.readinto(buffer)
        except EOFError:
            raise ValueError(
                f"{self.path}: not a whole gzip file: cut off before its end (truncated, e.g. "
                "copied while it was written); gunzip -t it, or replay the plain log"
            ) from None
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise ValueError(
                f"{self.path}: not a whole gzip file ({str(exc)[:80]}); gunzip -t it, or "
                "replay the plain log"
            ) from None
        self.read_so_far += n or 0
        if self.max_bytes is not None and self.read_so_far > self.max_bytes:
            raise ValueError(
                f"{self.path}: decompresses to more than the {self.max_bytes:,} bytes a replay "
                f"reads (blank lines count){'; ' + self.fix if self.fix else ''}"
            )
        return n or 0

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_text(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    fix: str = "",
    newline: str | None = None,
) -> tuple[IO[str], Callable[[], int]]:
    """A text stream of the log at `path`, gunzipped where it is gzip-compressed, and a
    function giving the bytes read from it so far (decompressed ones for a .gz). With
    `max_bytes`, reading past that many (decompressed) bytes, blank lines included, is a
    ValueError ending in `fix`, so a small .gz cannot expand without end; a gzip stream cut
    off or damaged is a ValueError naming it, not zlib's traceback."""
    with open(path, "rb") as head:
        gzipped = head.read(2) == _GZIP_MAGIC
    raw: Any = gzip.open(path, "rb") if gzipped else open(path, "rb")  # noqa: SIM115
    counted = _Counted(raw, path, max_bytes, fix)
    text = io.TextIOWrapper(
        io.BufferedReader(counted), encoding="utf-8", errors="replace", newline=newline
    )
    return text, lambda: counted.read_so_far


def packed(path: str | os.PathLike[str]) -> str | None:
    """Why the file at `path` is not read as a log (an archive, a gzipped parquet file: in
    one line, with how to unpack it), from its name or its first (decompressed) bytes; None
    for a file read as it is or gunzipped."""
    name, gzipped = Path(path).name.lower(), False
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
            if gzipped := head[:2] == _GZIP_MAGIC:
                fh.seek(0)
                with gzip.open(fh) as inner:
                    head = inner.read(512)
    except (OSError, EOFError, zlib.error):
        head = b""  # unreadable or cut off: the read says why
    if head[257:262] == b"ustar" or name.endswith(_ARCHIVE_NAMES[:-1]):
        return (
            f"{path}: a tar archive; {_READ_GZIP}, not archives of them: unpack it "
            f"(tar xzf {path}) and replay the directory it holds (TRL's completions/, verl's "
            "rollout_data_dir)"
        )
    if head[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        return (
            f"{path}: a zip archive; {_READ_GZIP}, not archives of them: unzip it and replay "
            "the directory it holds (TRL's completions/, verl's rollout_data_dir)"
        )
    if (gzipped and head[:4] == b"PAR1") or name.endswith(".parquet.gz"):
        return (
            f"{path}: a gzipped parquet file; {_READ_GZIP} (a parquet file is read by its "
            f"columns, which a gzip stream cannot seek to): gunzip it and replay the .parquet"
        )
    return None


def _unpacked(path: Path, fix: str) -> None:
    """A ValueError unless `path` is a regular file read as it is or gunzipped (`packed`)."""
    regular_file(path, fix)
    if (why := packed(path)) is not None:
        raise ValueError(why)


def _inner_suffix(path: Path) -> str:
    """The file's suffix under a .gz (`table.csv.gz`: .csv), lower case."""
    name = path.name.lower().removesuffix(".gz")
    return ".table.json" if name.endswith(".table.json") else Path(name).suffix


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of the log at `path`, from its file names or its first line; a ValueError
    saying to pass --format when neither tells."""
    p = Path(path)
    if p.is_dir():
        names = {f.name for f in _listing(p)}
        if any(_STEP_FILE["trl"].fullmatch(n) for n in names) or (p / "completions").is_dir():
            return "trl"
        if any(_STEP_FILE["verl"].fullmatch(n) for n in names):
            return "verl"
        if "rewards.jsonl" in names:
            return "frontier"
        if "frontier_metrics.jsonl" in names:
            return "metrics"
    elif not p.exists():
        raise ValueError(f"{path} does not exist; give a reward log or a directory of one")
    else:
        _unpacked(p, "give a reward log or a directory of one")
        if _inner_suffix(p) in (".parquet", ".csv", ".table.json"):
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


def output_dir(path: str | os.PathLike[str]) -> Path:
    """The TRL output dir of the log at `path` (the dir, its completions/, or a file in it)."""
    p = Path(path)
    base = p if p.is_dir() else p.parent
    return base.parent if base.name == "completions" else base


class RewardColumns(NamedTuple):
    """A TRL log's reward columns, how they are weighted, and who named them."""

    columns: list[tuple[str, float]]
    """(column, weight) per reward function, in TRL's order."""
    source: str
    """Who named them, for messages: --reward-column, or the file read."""
    how: str
    """Where the weights came from, for the replay's note."""

    def names(self) -> list[str]:
        return [name for name, _ in self.columns]


def reward_columns(
    path: str | os.PathLike[str], rewards: Sequence[tuple[str, float]] | None = None
) -> RewardColumns | None:
    """The reward columns and weights a replay sums a TRL log's reward from: `rewards` where
    given (--reward-column), else the run's reward functions and reward_weights as the
    frontier-rft TRL adapter recorded them in its output dir (`REWARDS_FILE`), else the
    reward functions TRL's trainer_state.json names (`reward_names`), each weighted 1 (TRL
    keeps reward_weights only in training_args.bin, never read); None where none names them
    (the table's one reward column is then read, weighted 1)."""
    if rewards:
        return RewardColumns(
            [(n, float(w)) for n, w in rewards], "--reward-column", "as --reward-column names them"
        )
    out = output_dir(path)
    if (recorded := read_run_rewards(out)) is not None:
        where = out / REWARDS_FILE
        how = f"the run's reward_weights, as the frontier-rft TRL adapter recorded them ({where})"
        return RewardColumns(recorded, str(where), how)
    if (found := reward_names(path)) is not None:
        how = (
            f"the reward functions {found[1]} names, each weighted 1 (TRL keeps reward_weights "
            "only in training_args.bin, never read: give a weighted run's with --reward-column "
            "NAME=WEIGHT)"
        )
        return RewardColumns([(n, 1.0) for n in found[0]], str(found[1]), how)
    return None


def reward_names(path: str | os.PathLike[str]) -> tuple[list[str], Path] | None:
    """The reward functions of the TRL run whose log is at `path`, as TRL's own files name
    them (`rewards/<name>/mean` in `trainer_state.json`'s log_history: the output dir's, else
    its latest checkpoint's), and that file; None where no such file is found."""
    out = output_dir(path)
    states = [out / "trainer_state.json"]
    try:
        checkpoints = [
            (int(m.group(1)), d) for d in out.iterdir() if (m := _CHECKPOINT.fullmatch(d.name))
        ]
    except OSError:
        checkpoints = []
    states += [d / "trainer_state.json" for _, d in sorted(checkpoints, reverse=True)]
    fix = "name the reward columns with --reward-column NAME (repeat)"
    for state in states:
        if not state.exists():
            continue
        regular_file(state, fix)
        if state.stat().st_size > MAX_STATE_CHARS:
            raise ValueError(f"{state}: larger than {MAX_STATE_CHARS:,} bytes; {fix}")
        try:
            record = loads_bounded(
                state.read_text(encoding="utf-8", errors="replace"),
                max_chars=MAX_STATE_CHARS,
                max_depth=16,
            )
        except ValueError as exc:
            raise ValueError(f"{state}: not TRL's trainer state ({str(exc)[:60]}); {fix}") from None
        history = record.get("log_history") if isinstance(record, dict) else None
        names: list[str] = []
        for entry in history if isinstance(history, list) else []:
            for key in entry if isinstance(entry, dict) else ():
                m = _REWARD_METRIC.fullmatch(key) if isinstance(key, str) else None
                if m and m.group(1) not in names:
                    names.append(m.group(1))
        if names:
            return names, state
    return None


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
    files = _files(Path(path), fmt)
    columns = reward_columns(path, rewards) if fmt == "trl" else None
    steps = _Steps(str(path), fmt, texts)
    read = (_verl_rows(f) if fmt == "verl" else _trl_rows(f, columns) for f in files)
    for row in _counted((row for rows in read for row in rows), count):
        steps.add(*row)
    return steps.done()


# ---------------------------------------------------------------------------- files
def completions_total(path: str | os.PathLike[str], fmt: str) -> int | None:
    """The completions a TRL or verl log holds, where cheap to know before reading it: TRL's
    parquet files' row counts (their metadata), or one per non-blank line of plain JSON-lines
    files (verl's; a TRL table as JSON lines); None otherwise (a .gz, CSV or wandb export)."""
    try:
        files = _files(Path(path), fmt)
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
                    if fh.read(2) == _GZIP_MAGIC:
                        return None
                    fh.seek(0)
                    total += sum(1 for line in fh if line.strip())
            except OSError:
                return None
        else:
            return None
    return total


def _listing(directory: Path) -> list[Path]:
    try:
        return sorted(f for f in directory.iterdir() if f.is_file())
    except OSError as exc:
        raise ValueError(f"{directory}: cannot list it ({exc.strerror})") from None


def _files(path: Path, fmt: str) -> list[Path]:
    """The log's files in step order (a directory) or the one file; a step file compressed
    otherwise than as read (`_STEP_FILE`), or a step in two files, is refused in one line."""
    if not path.exists():
        raise ValueError(f"{path} does not exist; {_HOW[fmt]}")
    if not path.is_dir():
        _unpacked(path, _HOW[fmt])
        return [path]
    if fmt == "trl" and (path / "completions").is_dir():
        path = path / "completions"  # the trainer's output_dir
    numbered: dict[int, Path] = {}
    for f in _listing(path):
        m = _STEP_FILE[fmt].fullmatch(f.name)
        if m is None:
            continue
        step, tail = int(m.group(1)), m.group(2).lower()
        if tail == ".gz" and fmt == "trl":
            raise ValueError(
                f"{f}: a gzipped parquet file; {_READ_GZIP} (a parquet file is read by its "
                f"columns, which a gzip stream cannot seek to): gunzip them (gunzip "
                f"{path}/*.parquet.gz) and replay the directory"
            )
        if tail not in ("", ".gz"):
            raise ValueError(
                f"{f}: a {fmt} log's directory is read as {_STEP_NAMES[fmt]} files ({_READ_GZIP}): "
                f"decompress it to {m.group(0)[: m.start(2)]} beside the others"
            )
        if step in numbered:
            raise ValueError(
                f"{path}: step {step} is in both {numbered[step].name} and {f.name}; keep one "
                "of them (the same step logged twice?)"
            )
        numbered[step] = f
    if not numbered:
        raise ValueError(f"{path}: holds no {_STEP_NAMES[fmt]} file; {_HOW[fmt]}")
    return [numbered[step] for step in sorted(numbered)]


def _lines(file: Path, fix: str = "") -> Iterator[tuple[str, Any]]:
    """Each non-blank line of a JSONL file (gunzipped where it is a .gz, at most
    MAX_GZIP_BYTES of it) with where it is, parsed, bounded."""
    fh, _ = _open(file)
    with fh:
        yield from jsonl_records(fh, file, max_chars=MAX_LINE_CHARS, max_depth=64, fix=fix)


def _open(file: Path, newline: str | None = None) -> tuple[IO[str], Callable[[], int]]:
    """open_text with the bound on what a .gz log may decompress to."""
    first = "zcat LOG | head -n LINES > part.jsonl, and replay that"
    return open_text(file, MAX_GZIP_BYTES, first, newline)


def _digest(prompt: object) -> bytes:
    """A prompt's key: its text, or a conversation's canonical JSON, hashed (bounded memory)."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()


def _number(value: object) -> float | None:
    """A logged number (CSV gives text); None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _texts(text: object) -> list[str] | None:
    """A completion's texts: its text, or a conversation's message contents (its length is
    theirs summed); None when it holds no text `count` can read."""
    if isinstance(text, str):
        return [text]
    if isinstance(text, list) and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) for m in text
    ):
        return [m["content"] for m in text]
    return None


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


def _step_of(value: object, where: str, fmt: str) -> int:
    step = _number(value)
    if step is None or not step.is_integer() or not 0 <= step <= 1 << 53:
        raise ValueError(f"{where}: step must be an int >= 0, got {str(value)[:40]}; {_HOW[fmt]}")
    return int(step)


# ---------------------------------------------------------------------------- verl
def _verl_rows(file: Path) -> Iterator[Read]:
    for where, record in _lines(file):
        if not isinstance(record, dict):
            raise ValueError(f"{where} is not a JSON object; {_HOW['verl']}")
        for key in ("step", "input", "score"):
            if key not in record:
                raise ValueError(f"{where} has no {key!r}; {_HOW['verl']}")
        score = _number(record["score"])
        if score is None or not math.isfinite(score):
            raise ValueError(f"{where}: score must be a finite number, got {record['score']!r:.40}")
        texts = _texts(record.get("output"))
        yield _step_of(record["step"], where, "verl"), record["input"], score, b"", texts


# ---------------------------------------------------------------------------- TRL
def _guess(names: Sequence[str], where: str) -> RewardColumns:
    """The reward column of a table that names none: the one column besides TRL's own, or a
    refusal listing the candidates (a `log_extra` column is never summed in)."""
    candidates = [k for k in names if k not in _NOT_REWARDS]
    if not candidates:
        raise ValueError(f"{where}: no reward column; {_HOW['trl']}")
    if len(candidates) > 1:
        listed = ", ".join(candidates[:8]) + (", ..." if len(candidates) > 8 else "")
        raise ValueError(
            f"{where}: columns {listed} may each be a reward function's or a log_extra "
            "column, and no trainer_state.json beside the log names the reward functions; "
            "name them with --reward-column NAME (repeat; NAME=WEIGHT for reward_weights)"
        )
    how = (
        "the table's one column besides step, prompt, completion and advantage, weighted 1 "
        "(no frontier_rewards.json or trainer_state.json beside the log names the reward "
        "functions)"
    )
    return RewardColumns([(candidates[0], 1.0)], "the table's one reward column", how)


def _no_column(name: str, names: Sequence[str], columns: RewardColumns, where: str) -> str:
    """The refusal of a reward column the table lacks, with the closest of its columns."""
    close = did_you_mean(name, [n for n in names if n not in _NOT_REWARDS])
    return (
        f"{where} has no reward column {name!r}{close} (named by {columns.source}); name the "
        "log's with --reward-column"
    )


def summed_columns(
    path: str | os.PathLike[str], rewards: Sequence[tuple[str, float]] | None = None
) -> RewardColumns:
    """The reward columns a replay of the TRL log at `path` sums: those `reward_columns`
    finds, else the table's one reward column, read from its first row (a ValueError where
    the log has none, or several that nothing names)."""
    if (named := reward_columns(path, rewards)) is not None:
        return named
    first = _files(Path(path), "trl")[0]
    for where, record in _trl_records(first, None):
        if not isinstance(record, dict):
            break
        return _guess(list(record), where)
    raise ValueError(f"{first}: holds no row of TRL's completions table; {_HOW['trl']}")


def _trl_records(file: Path, columns: RewardColumns | None) -> Iterator[tuple[str, Any]]:
    """The rows of a TRL table file, by its kind: parquet, CSV (gzipped or not), or JSON."""
    suffix = _inner_suffix(file)
    if suffix == ".parquet":
        return _parquet_records(file, columns)
    return _csv_records(file) if suffix == ".csv" else _json_records(file)


def _trl_rows(file: Path, columns: RewardColumns | None) -> Iterator[Read]:
    for where, record in _trl_records(file, columns):
        if not isinstance(record, dict):
            raise ValueError(f"{where} is not a row of TRL's completions table; {_HOW['trl']}")
        for key in ("step", "prompt"):
            if key not in record:
                raise ValueError(
                    f"{where} has no {key!r} column: not TRL's completions table; "
                    f"{_HOW['trl']}, or pass --format"
                )
        if columns is None:
            columns = _guess(list(record), where)
        total, scored = 0.0, False
        for name, weight in columns.columns:
            if name not in record:
                raise ValueError(_no_column(name, list(record), columns, where))
            cell = record[name]  # None (NaN in the table, "" in CSV): not scored
            value = math.nan if cell is None or cell == "" else _number(cell)
            if value is None:
                raise ValueError(
                    f"{where}: column {name!r} holds {str(record[name])[:30]!r}, not a reward; "
                    "name the reward columns with --reward-column"
                )
            if not math.isnan(value):  # nansum over the functions, as TRL sums them
                total, scored = total + weight * value, True
        if not math.isfinite(total):
            raise ValueError(f"{where}: its reward sums to {total}; replay finite rewards")
        if not scored:  # TRL leaves it out of its group's baseline; so do its live shadows
            total = math.nan
        text = _digest(record["completion"]) if "completion" in record else b""
        texts = _texts(record.get("completion"))
        step = _step_of(record["step"], where, "trl")
        yield step, record["prompt"], total, text, texts


def _parquet_records(file: Path, columns: RewardColumns | None) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"{file}: reading parquet needs pyarrow (pip install pyarrow), as TRL's own "
            "writing of it does"
        ) from None
    number = 0
    try:
        handle = pq.ParquetFile(file)
        if handle.metadata.num_rows > MAX_ROWS:
            raise ValueError(
                f"{file}: more than {MAX_ROWS:,} rows; replay a log of fewer completions"
            )
        names = handle.schema_arrow.names
        if columns is None:
            columns = _guess(names, str(file))
        for name in columns.names():
            if name not in names:  # its own line, with the table's columns to choose from
                raise ValueError(_no_column(name, names, columns, str(file)))
        # Only what a replay reads: no log_extra, advantage or image column.
        wanted = [c for c in ("step", "prompt", "completion", *columns.names()) if c in names]
        # A batch at a time: completions' text is held only while its rows are read.
        for batch in handle.iter_batches(batch_size=1024, columns=wanted):
            for row in batch.to_pylist():
                number += 1
                yield f"{file}: row {number}", row
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(
            f"{file}: not a readable parquet file ({str(exc)[:80]}); a file cut off mid-write "
            "is one to delete"
        ) from None


def _bounded_lines(fh: Any, file: Path) -> Iterator[str]:
    """The lines of a text file, each read with at most MAX_LINE_CHARS in memory; a longer
    one is a ValueError (a 1 GiB one-line file is refused, not read whole)."""
    number = 0
    while line := fh.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(
                f"{file}: line {number} is longer than {MAX_LINE_CHARS:,} characters; "
                "not a completions table"
            )
        yield line


def _csv_records(file: Path) -> Iterator[tuple[str, Any]]:
    fh, _ = _open(file, newline="")
    with fh:
        reader = csv.DictReader(_bounded_lines(fh, file))
        try:
            for i, row in enumerate(reader):
                if None in row or None in row.values():
                    raise ValueError(f"{file}: row {i + 1} has more or fewer cells than columns")
                yield f"{file}: row {i + 1}", row
        except csv.Error as exc:
            raise ValueError(f"{file}: not CSV ({exc})") from None


def _json_records(file: Path) -> Iterator[tuple[str, Any]]:
    """A wandb table export ({"columns": [...], "data": [[...], ...]}), or JSON lines of
    rows (pandas' `to_json(orient="records", lines=True)`)."""
    # A wandb export holds a step's table on one line: a longer one is read from TRL's files.
    fix = "replay the run's completions/ directory (TRL's parquet files), or the table as CSV"
    for where, record in _lines(file, fix):
        if isinstance(record, dict) and {"columns", "data"} <= record.keys():
            names, data = record["columns"], record["data"]
            if not isinstance(names, list) or not isinstance(data, list):
                raise ValueError(f"{where}: a wandb table's columns and data must be lists")
            for i, cells in enumerate(data):
                if not isinstance(cells, list) or len(cells) != len(names):
                    raise ValueError(
                        f"{where}: row {i + 1} of the table has not one cell per column"
                    )
                yield f"{where}, row {i + 1}", dict(zip(names, cells, strict=True))
        else:
            yield where, record


# ---------------------------------------------------------------------------- grouping
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
        key = _digest(prompt)
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
            raise ValueError(f"{self.path}: step {step}: {exc}; {_HOW[self.fmt]}") from None
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
            raise ValueError(f"{path}: holds no completion; {_HOW[fmt]}")
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
                    f"every few steps?); {_HOW[fmt]}"
                )
            sizes = sorted({len(g.rewards) for g in groups.values()})
            if sizes[0] < 2:
                fix = "log_unique_prompts=False, " if fmt == "trl" else ""
                raise ValueError(
                    f"{where} has a prompt with one completion: a replay needs whole groups "
                    f"(>= 2 completions per prompt); {fix}{_HOW[fmt]}"
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
                f"{path}: no prompt has a whole group of scored completions; {_HOW[fmt]}"
            )
        texts = None if self.prompts is None else tuple(self.prompts[k] for k in ids)
        return out, len(ids), texts
