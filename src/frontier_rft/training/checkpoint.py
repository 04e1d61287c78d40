"""Atomic training checkpoints: model, optimizer, selector, RNG states and step counter.

A checkpoint is a directory `checkpoints/step_NNNNNN/` holding

    model/           save_pretrained model + tokenizer (an ordinary HF directory)
    optimizer.pt     AdamW state
    selector.npz     save_selector (the selector's full state, RNG included)
    step_sampler.npz the step sampler's kind, config and own state (DAPO's z and counters,
                     the allocation's posteriors, Pilot-Commit's pilot buffer; none for plain
                     GRPO): save_sampler without the selector, which is in selector.npz only.
                     Pilot-Commit's buffered pilots' completions are in trainer.json. Written
                     before it: dynamic_sampling.npz, allocation.npz or pilot_commit.npz
    shadow<i>.npz    with shadows (TrainConfig.shadows): the i-th one's counts and its own
                     selector (docs/shadow.md)
    rng.pt           torch RNG states, CPU and (training on a GPU) CUDA: rollout and judge
                     sampling; the selector keeps its own
    trainer.json     step, config (and Pilot-Commit's buffered pilots' completions)

It is written under a temporary name, every file fsynced, then renamed into place; the
`latest` pointer file is replaced atomically after the rename. A crash leaves the previous
checkpoint and pointer intact (plus a stale temporary directory, removed by the next save).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import torch

from frontier_rft.core.jsonsafe import load_json_file, loads_bounded
from frontier_rft.core.persistence import atomic_write_bytes, set_new_file_mode
from frontier_rft.core.selector import Selector
from frontier_rft.lm.device import model_device
from frontier_rft.sampling.sampler_file import SAMPLER_FILE, save_sampler
from frontier_rft.sampling.step import Sampler
from frontier_rft.selectors.persistence import load_selector, save_selector
from frontier_rft.shadow.rule import Shadow, save_shadow

__all__ = [
    "SHADOW_FILE",
    "damaged",
    "latest_checkpoint",
    "load_checkpoint",
    "logged_until",
    "save_checkpoint",
]

SHADOW_FILE = "shadow{}.npz"
"""The i-th shadow's state in a checkpoint (formatted with i; TRL's: `frontier_` + this)."""
_PREFIX = "step_"
_RESUME_FIX = "resume from another checkpoint (point checkpoints/latest at it) or a new --out"
_TMP = ".tmp-"
_SMALL_FILE = 1 << 20  # bytes: the RNG file, and slack for the optimizer file's own fields


def _fsync_tree(root: Path) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())


def save_checkpoint(
    ckpt_root: str | os.PathLike[str],
    step: int,
    model: Any,
    tokenizer: Any,
    optimizer: torch.optim.Optimizer,
    selector: Selector,
    trainer_state: dict[str, Any],
    keep: int = 2,
    sampler: Sampler | None = None,
    shadows: Sequence[Shadow] = (),
) -> Path:
    """Write checkpoint `step` atomically, point `latest` at it, keep the newest `keep`.
    With `sampler`, its state goes to step_sampler.npz (the selector's is in selector.npz
    only); each of `shadows` to shadow<i>.npz."""
    root = Path(ckpt_root)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(f"{_TMP}*"):
        shutil.rmtree(stale, ignore_errors=True)
    name = f"{_PREFIX}{step:06d}"
    tmp = root / f"{_TMP}{name}-{os.getpid()}"
    tmp.mkdir()
    model.save_pretrained(tmp / "model")
    tokenizer.save_pretrained(tmp / "model")
    set_new_file_mode((tmp / "model").glob("*.safetensors"))  # safetensors writes them 0600
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    save_selector(selector, tmp / "selector.npz")
    if sampler is not None:
        save_sampler(sampler, tmp / SAMPLER_FILE, with_inner=False)
    for i, shadow in enumerate(shadows):
        save_shadow(shadow, tmp / SHADOW_FILE.format(i))
    torch.save(_rng_states(model), tmp / "rng.pt")
    (tmp / "trainer.json").write_text(json.dumps({"step": step, **trainer_state}, indent=1))
    _fsync_tree(tmp)
    final = root / name
    if final.exists():  # re-saving the same step (a resumed run that re-reached it)
        shutil.rmtree(final)
    os.replace(tmp, final)
    atomic_write_bytes(root / "latest", lambda fh: fh.write(name.encode("utf-8")))
    for old in sorted(root.glob(f"{_PREFIX}*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _rng_states(model: Any) -> dict[str, Any]:
    states: dict[str, Any] = {"torch": torch.get_rng_state()}
    device = model_device(model)
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


def latest_checkpoint(ckpt_root: str | os.PathLike[str]) -> Path | None:
    """The checkpoint `latest` points at, or None when there is none."""
    pointer = Path(ckpt_root) / "latest"
    if not pointer.exists():
        return None
    with open(pointer, "rb") as fh:
        name = fh.read(64).decode("utf-8", errors="replace").strip()
    # Only a sibling step directory: the pointer is a file on disk, not a path to follow.
    if not re.fullmatch(rf"{_PREFIX}\d{{6,}}", name):
        raise ValueError(
            f"{pointer} does not name a checkpoint ({name[:20]!r}); write the name of one of "
            f"the {_PREFIX}NNNNNN directories beside it into it, or start a new --out"
        )
    path = Path(ckpt_root) / name
    if not (path / "trainer.json").exists():
        raise ValueError(f"{pointer} points at {path.name}, which is missing or incomplete")
    return path


def load_checkpoint(
    path: str | os.PathLike[str], optimizer: torch.optim.Optimizer, **collaborators: Any
) -> tuple[Selector, dict[str, Any]]:
    """Restore optimizer and torch RNG in place; return the selector and the trainer state.

    The model is loaded by the caller from `path/model` (before building the optimizer).
    """
    ckpt = Path(path)
    state = _trainer_state(ckpt / "trainer.json")
    selector = load_selector(ckpt / "selector.npz", **collaborators)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    # Adam-family state: two moments per parameter (float32 or the parameter's dtype), and
    # room for a third.
    limit = sum(p.numel() * max(12, 3 * p.element_size()) for p in params) + _SMALL_FILE
    _check_size(ckpt / "optimizer.pt", limit)
    _check_size(ckpt / "rng.pt", _SMALL_FILE)
    with damaged(ckpt / "optimizer.pt"):
        state_dict = torch.load(ckpt / "optimizer.pt", map_location="cpu", weights_only=True)
        optimizer.load_state_dict(state_dict)  # moves the state onto the parameters' device
    with damaged(ckpt / "rng.pt"):
        rng = torch.load(ckpt / "rng.pt", map_location="cpu", weights_only=True)
        torch.set_rng_state(rng["torch"])
        device = optimizer.param_groups[0]["params"][0].device  # where the run resumes
        if "cuda" in rng and device.type == "cuda":  # else: resumed on a CPU, not bitwise
            torch.cuda.set_rng_state(rng["cuda"], device=device)
    return selector, state


def _check_size(path: Path, limit: int) -> None:
    """Refuse a file far larger than its state can be before torch reads it into memory."""
    with damaged(path):
        size = path.stat().st_size
    if size > limit:
        raise ValueError(
            f"{path}: {size:,} bytes, more than this run's state can take ({limit:,}); "
            f"{_RESUME_FIX}"
        )


@contextmanager
def damaged(path: Path) -> Iterator[None]:
    """Turn any failure to read a checkpoint file into one ValueError that names it."""
    try:
        yield
    except Exception as exc:  # torch.load and safetensors raise many unrelated types
        first = str(exc).strip().splitlines()[0][:80] if str(exc).strip() else ""
        raise ValueError(
            f"{path}: damaged checkpoint file ({type(exc).__name__}: {first}); {_RESUME_FIX}"
        ) from exc


def _trainer_state(path: Path) -> dict[str, Any]:
    try:  # the reader's own error names the file and the problem
        state = load_json_file(path, "a trainer.json", max_chars=1 << 26, max_depth=8)
    except ValueError as exc:
        raise ValueError(f"{exc}; {_RESUME_FIX}") from None
    with damaged(path):
        if not isinstance(state, dict):
            raise TypeError("a JSON object expected")
        step = state.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise TypeError(f"'step' must be an int >= 0, got {step!r}")
    return state


def logged_until(
    path: Path, step: int, *, max_chars: int, max_depth: int
) -> tuple[bytes, bool] | None:
    """The lines of a run's JSON-lines log (metrics.jsonl, rewards.jsonl) whose "step" is at
    most `step`, as the file's new body, and whether its last line was torn by a crash
    mid-write (no newline, not a record: dropped, its step is redone); None without the
    file. Lines after `step` are a crashed run's tail, about to be redone. Read line by line
    with bounds (`max_chars` a line, `max_depth` of nesting): any other line that is not a
    record is a ValueError naming the file and line, never a RecursionError."""
    if not path.exists():
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return _lines_until(fh, path, step, max_chars, max_depth)
    except OSError as exc:
        raise ValueError(f"{path}: unreadable ({exc.strerror or exc}); {_RESUME_FIX}") from None


def _lines_until(
    fh: IO[str], path: Path, step: int, max_chars: int, max_depth: int
) -> tuple[bytes, bool]:
    kept: list[str] = []
    number = 0
    while line := fh.readline(max_chars + 1):
        number += 1
        try:
            if len(line) > max_chars:
                raise ValueError(f"longer than {max_chars:,} characters")
            record = loads_bounded(line, max_chars=max_chars, max_depth=max_depth)
            logged = record.get("step") if isinstance(record, dict) else None
            if not isinstance(logged, int) or isinstance(logged, bool):
                raise ValueError(f"step {logged!r} is not an int")
        except ValueError as exc:
            if not line.endswith("\n") and not fh.readline(1):  # the last line, torn
                return "".join(kept).encode("utf-8"), True
            raise ValueError(
                f"{path}: line {number} is not a {path.stem} record ({exc}); the file is "
                "corrupt: repair or remove that line to resume"
            ) from None
        if logged <= step:
            kept.append(line if line.endswith("\n") else line + "\n")
    return "".join(kept).encode("utf-8"), False
