"""Verifier-scored rollouts for ZIP-RC-Lite head training and calibration.

A `RolloutSet` holds K sampled completions for each of N prompts (token ids with the EOS
kept, texts, verifier rewards) and is stored as JSON lines: a header line (format, samples,
provenance) then one line per task. `collect_rollouts` samples them through the trainer's
HF-generate path, prompt batch by prompt batch, each batch under its own seed; given a
`path` it rewrites the file atomically after every batch and resumes from it, so an
interrupted collection finishes with exactly the rollouts of an uninterrupted one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from frontier_rft.core.jsonsafe import dumps_strict, jsonl_records
from frontier_rft.inference.spec import ZipRCSpec
from frontier_rft.progress import progress_bar
from frontier_rft.tasks.base import TaskItem, Verifier

if TYPE_CHECKING:
    from frontier_rft.lm.decoding import Sampling

__all__ = ["FORMAT", "SUCCESS_THRESHOLD", "RolloutSet", "collect_rollouts"]

FORMAT = "frontier-rft/ziprc-rollouts"
"""The header's `format` value (a file without it is not a rollout set)."""
VERSION = 1
SUCCESS_THRESHOLD = 1.0
"""A completion succeeds when its reward reaches this (Countdown's 0.1 format reward fails)."""


@dataclass
class RolloutSet:
    """K scored completions for each of N prompts (prompt-major, like the trainer's groups)."""

    task_ids: list[int]
    """Task id of each prompt (TaskItem.task_id)."""
    levels: list[int]
    """Level of each prompt."""
    prompt_ids: list[list[int]]
    """Chat-templated prompt token ids, ending with the assistant marker."""
    completion_ids: list[list[list[int]]]
    """[task][sample] completion token ids, cut after (and keeping) the first EOS."""
    texts: list[list[str]]
    """[task][sample] decoded completions (special tokens skipped), as the verifier saw them."""
    rewards: np.ndarray
    """(N, K) verifier rewards."""
    references: list[dict[str, Any]] = field(default_factory=list)
    """Each task's verifier reference (Countdown: numbers, target); empty when unknown."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Provenance: policy, split, levels, samples, seed, temperature, top_p, max_new_tokens."""

    def __post_init__(self) -> None:
        self.rewards = np.asarray(self.rewards, dtype=np.float64)
        if not self.references:
            self.references = [{} for _ in self.task_ids]
        n = len(self.task_ids)
        lengths = {
            "levels": len(self.levels),
            "prompt_ids": len(self.prompt_ids),
            "completion_ids": len(self.completion_ids),
            "texts": len(self.texts),
            "references": len(self.references),
        }
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"RolloutSet has {n} task ids but {bad}: every field needs one entry")
        if self.rewards.ndim != 2 or self.rewards.shape[0] != n:
            raise ValueError(f"rewards must be (tasks={n}, samples), got {self.rewards.shape}")
        k = self.rewards.shape[1]
        for i in range(n):
            if len(self.completion_ids[i]) != k or len(self.texts[i]) != k:
                raise ValueError(
                    f"task {i} has {len(self.completion_ids[i])} completions and "
                    f"{len(self.texts[i])} texts, but rewards have {k} samples per task"
                )

    # ------------------------------------------------------------------ views
    @property
    def num_tasks(self) -> int:
        """N prompts."""
        return len(self.task_ids)

    @property
    def samples(self) -> int:
        """K completions per prompt."""
        return int(self.rewards.shape[1])

    @property
    def successes(self) -> np.ndarray:
        """(N, K) bool: reward >= SUCCESS_THRESHOLD."""
        return self.rewards >= SUCCESS_THRESHOLD - 1e-9

    @property
    def lengths(self) -> np.ndarray:
        """(N, K) completion lengths in tokens (EOS included)."""
        return np.array([[len(c) for c in row] for row in self.completion_ids], dtype=np.int64)

    def flat(self) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
        """(prompt ids, completion ids, rewards) of all N*K sequences, prompt-major."""
        prompts = [
            p for p, row in zip(self.prompt_ids, self.completion_ids, strict=True) for _ in row
        ]
        comps = [c for row in self.completion_ids for c in row]
        return prompts, comps, self.rewards.reshape(-1)

    def check_tokens(self, spec: ZipRCSpec | None = None, vocab: int | None = None) -> None:
        """Raise if a completion is empty or holds an id in spec's reserved slice / >= vocab."""
        for i, row in enumerate(self.completion_ids):
            for j, comp in enumerate(row):
                if not comp:
                    raise ValueError(f"task {i} sample {j}: empty completion (nothing to label)")
                if spec is not None and any(spec.start_id <= t < spec.end_id for t in comp):
                    raise ValueError(
                        f"task {i} sample {j} contains a reserved ZIP-RC id "
                        f"({spec.start_id}..{spec.end_id - 1}): generate with "
                        "SuppressReservedLogits(spec)"
                    )
                if vocab is not None and max(comp) >= vocab:
                    raise ValueError(
                        f"task {i} sample {j} has token id {max(comp)} >= vocabulary {vocab}: "
                        "rollouts come from a different tokenizer/model"
                    )

    def select(self, tasks: Sequence[int] | slice) -> RolloutSet:
        """The rollouts of some prompts (by position)."""
        idx = list(range(self.num_tasks))[tasks] if isinstance(tasks, slice) else list(tasks)
        return RolloutSet(
            [self.task_ids[i] for i in idx],
            [self.levels[i] for i in idx],
            [self.prompt_ids[i] for i in idx],
            [self.completion_ids[i] for i in idx],
            [self.texts[i] for i in idx],
            self.rewards[idx],
            [self.references[i] for i in idx],
            dict(self.meta),
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write JSON lines (header, then one line per task) atomically (tmp + os.replace)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        header = {"format": FORMAT, "version": VERSION, "samples": self.samples, "meta": self.meta}
        tmp = out.with_name(out.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(dumps_strict(header, sort_keys=True) + "\n")
            for i in range(self.num_tasks):
                row = {
                    "task_id": self.task_ids[i],
                    "level": self.levels[i],
                    "prompt_ids": self.prompt_ids[i],
                    "completion_ids": self.completion_ids[i],
                    "texts": self.texts[i],
                    "rewards": self.rewards[i].tolist(),
                    "reference": self.references[i],
                }
                fh.write(dumps_strict(row) + "\n")
        os.replace(tmp, out)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RolloutSet:
        """Inverse of save; a file that is not one (a header or row of the wrong shape, JSON
        nested too deep, a line too long) is one ValueError naming the file and the line."""
        with open(path, encoding="utf-8") as fh:
            records = jsonl_records(fh, path, max_chars=_MAX_LINE_CHARS, max_depth=_MAX_DEPTH)
            first = next(records, None)
            header = first[1] if first is not None else None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise ValueError(f"{path} is not a ZIP-RC rollout file (no '{FORMAT}' header line)")
            if header.get("version") != VERSION:
                raise ValueError(
                    f"{path}: rollout format version {header.get('version')} != {VERSION}"
                )
            k = header.get("samples")
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(
                    f"{path}: the header's 'samples' must be a positive integer, got {k!r}"
                )
            meta = header.get("meta", {})
            if not isinstance(meta, dict):
                raise ValueError(f"{path}: the header's 'meta' must be an object")
            rows = [_row(where, record, k) for where, record in records]
        return cls(
            [r["task_id"] for r in rows],
            [r["level"] for r in rows],
            [r["prompt_ids"] for r in rows],
            [r["completion_ids"] for r in rows],
            [r["texts"] for r in rows],
            np.array([r["rewards"] for r in rows], dtype=np.float64).reshape(len(rows), k),
            [r["reference"] for r in rows],
            meta,
        )


_MAX_LINE_CHARS = 1 << 26
"""Longest line RolloutSet.load reads (one prompt's K completions as ids and text)."""
_MAX_DEPTH = 16
"""Deepest JSON nesting RolloutSet.load parses (a row nests 3 deep besides its reference)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _row(where: str, record: Any, k: int) -> dict[str, Any]:
    """One rollout row checked for shape, or a ValueError saying where and what is wrong."""
    if not isinstance(record, dict):
        raise ValueError(
            f"{where}: a rollout row must be a JSON object, got {type(record).__name__}"
        )
    missing = [key for key in _ROW_KEYS if key not in record]
    if missing:
        raise ValueError(f"{where}: rollout row lacks {', '.join(missing)}")
    if not (_is_int(record["task_id"]) and _is_int(record["level"])):
        raise ValueError(f"{where}: task_id and level must be integers")
    prompt, completions = record["prompt_ids"], record["completion_ids"]
    texts, rewards = record["texts"], record["rewards"]
    if not (isinstance(prompt, list) and all(_is_int(t) for t in prompt)):
        raise ValueError(f"{where}: prompt_ids must be a list of token ids")
    if not (
        isinstance(completions, list)
        and len(completions) == k
        and all(isinstance(c, list) and all(_is_int(t) for t in c) for c in completions)
    ):
        raise ValueError(f"{where}: completion_ids must be {k} lists of token ids")
    if not (isinstance(texts, list) and len(texts) == k and all(isinstance(t, str) for t in texts)):
        raise ValueError(f"{where}: texts must be {k} strings")
    if not (
        isinstance(rewards, list)
        and len(rewards) == k
        and all(isinstance(r, int | float) and not isinstance(r, bool) for r in rewards)
    ):
        raise ValueError(f"{where}: rewards must be {k} numbers")
    reference = record.get("reference", {})
    if not isinstance(reference, dict):
        raise ValueError(f"{where}: reference must be an object")
    return {**record, "reference": reference}


_ROW_KEYS = ("task_id", "level", "prompt_ids", "completion_ids", "texts", "rewards")


def _empty(samples: int, meta: dict[str, Any]) -> RolloutSet:
    return RolloutSet([], [], [], [], [], np.zeros((0, samples)), [], meta)


def _extend(done: RolloutSet, more: RolloutSet) -> RolloutSet:
    return RolloutSet(
        done.task_ids + more.task_ids,
        done.levels + more.levels,
        done.prompt_ids + more.prompt_ids,
        done.completion_ids + more.completion_ids,
        done.texts + more.texts,
        np.concatenate([done.rewards, more.rewards]),
        done.references + more.references,
        done.meta,
    )


def _resume(path: Path, meta: dict[str, Any], items: Sequence[TaskItem]) -> RolloutSet | None:
    """The partial set in `path` when it was collected with the same settings and prompts."""
    if not path.is_file():
        return None
    done = RolloutSet.load(path)
    if done.meta != meta:
        raise ValueError(
            f"{path} holds rollouts collected with other settings ({done.meta}, not {meta}): "
            "delete it or pass another path"
        )
    if done.task_ids != [it.task_id for it in items[: done.num_tasks]]:
        raise ValueError(
            f"{path} holds other tasks than this split: delete it or pass another path"
        )
    return done


def collect_rollouts(
    model: Any,
    tokenizer: Any,
    items: Sequence[TaskItem],
    verifier: Verifier,
    sampling: Sampling,
    *,
    seed: int = 0,
    suppress: ZipRCSpec | None = None,
    prompts_per_batch: int = 16,
    path: str | os.PathLike[str] | None = None,
    meta: dict[str, Any] | None = None,
    progress: bool = True,
) -> RolloutSet:
    """Sample each item per `sampling`, score the completions; prompt-major RolloutSet.

    Batch b of `prompts_per_batch` prompts is sampled under torch seed `seed * 1_000_003 + b`,
    so the set does not depend on where a resumed collection restarted. `suppress=spec`
    masks the reserved ZIP-RC ids (needed when `model` carries a head; the policy's own
    distribution over real tokens is unchanged). With `path`, the set is saved after every
    batch and a matching partial file is resumed.
    """
    import torch

    from frontier_rft.inference.head import SuppressReservedLogits
    from frontier_rft.lm.rollout import sample_texts

    if prompts_per_batch < 1:
        raise ValueError(f"prompts_per_batch must be >= 1, got {prompts_per_batch}")
    if not items:
        raise ValueError("no prompts to roll out: pass at least one TaskItem")
    info = {
        "samples": sampling.samples,
        "max_new_tokens": sampling.max_new_tokens,
        "temperature": float(sampling.temperature),
        "top_p": float(sampling.top_p),
        "seed": seed,
        "prompts_per_batch": prompts_per_batch,
        "suppressed": suppress.to_dict() if suppress is not None else None,
        **(meta or {}),
    }
    out = Path(path) if path is not None else None
    done = (_resume(out, info, items) if out is not None else None) or _empty(
        sampling.samples, info
    )
    processors = [SuppressReservedLogits(suppress)] if suppress is not None else []
    batches = range(0, len(items), prompts_per_batch)
    with progress_bar(
        len(items), "rollouts", unit="prompt", enabled=progress, initial=done.num_tasks
    ) as bar:
        for b, lo in enumerate(batches):
            if lo < done.num_tasks:
                continue
            chunk = items[lo : lo + prompts_per_batch]
            torch.manual_seed(seed * 1_000_003 + b)
            prompt_ids, comps, texts = sample_texts(
                model, tokenizer, [it.prompt for it in chunk], sampling, processors
            )
            rewards = [
                [verifier.score(it, t) for t in row] for it, row in zip(chunk, texts, strict=True)
            ]
            batch = RolloutSet(
                [it.task_id for it in chunk],
                [it.level for it in chunk],
                prompt_ids,
                comps,
                texts,
                np.array(rewards, dtype=np.float64),
                [_jsonable(it.reference) for it in chunk],
                info,
            )
            done = _extend(done, batch)
            if out is not None:
                done.save(out)
            bar.update(len(chunk))
    return done


def _jsonable(reference: dict[str, Any]) -> dict[str, Any]:
    """The reference as it will read back from JSON (tuples become lists)."""
    out: dict[str, Any] = json.loads(json.dumps(reference, default=str))
    return out
