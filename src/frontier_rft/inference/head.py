"""The ZIP-RC-Lite head on a Hugging Face causal LM: reserved rows, untied clone, readouts.

`attach_head(model, tokenizer, ...)` appends R x L rows after every id the tokenizer can
emit (a real checkpoint with spare rows may instead pass `start_id` inside its own vocab),
then unties the output head from the input embeddings by cloning it into its own Linear.
Training the head while it is still tied would write into the input embeddings and
silently change generation (the paper's "critical bug", appendix B.5).
`slice_parameter(model, spec)` freezes everything and hands out a copy of the reserved rows
to train; `write_slice` puts it back. No other row is ever in an optimizer, so the policy's
logits over the real vocabulary stay bit-for-bit those of the original model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from frontier_rft.core.jsonsafe import dumps_strict, load_json_file
from frontier_rft.core.persistence import set_new_file_mode
from frontier_rft.inference.spec import BINARY_REWARDS, PAPER_LENGTH_EDGES, ZipRCSpec

__all__ = [
    "SPEC_FILE",
    "SuppressReservedLogits",
    "attach_head",
    "load_head_model",
    "mask_reserved",
    "readout",
    "save_head_model",
    "slice_logits",
    "slice_parameter",
    "write_slice",
]

SPEC_FILE = "ziprc.json"
"""The spec's file inside a head model directory."""


def _untie_and_clone(model: Any) -> None:
    """Give the model its own output Linear, initialised from the (tied) input embeddings."""
    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings()
    head = torch.nn.Linear(emb.shape[1], emb.shape[0], bias=False, dtype=emb.dtype)
    with torch.no_grad():
        head.weight.copy_(out.weight if out is not None else emb)
    model.set_output_embeddings(head)
    model.config.tie_word_embeddings = False
    if hasattr(model.config, "get_text_config"):  # multimodal configs keep a nested text config
        model.config.get_text_config().tie_word_embeddings = False
    if head.weight.data_ptr() == emb.data_ptr():
        raise RuntimeError("output head still shares storage with the input embeddings")


def attach_head(
    model: Any,
    tokenizer: Any,
    reward_values: Sequence[float] = BINARY_REWARDS,
    length_edges: Sequence[int] = PAPER_LENGTH_EDGES,
    start_id: int | None = None,
) -> ZipRCSpec:
    """Reserve the slice (adding rows when needed), untie and clone the head; returns the spec.

    `start_id=None` puts the slice right after the larger of the tokenizer's length and the
    model's vocabulary (the tiny model has no spare rows, so they are added). An explicit
    `start_id` must leave the whole slice beyond every id the tokenizer can produce.
    """
    vocab = int(model.get_input_embeddings().weight.shape[0])
    emitted = len(tokenizer)
    first = max(vocab, emitted) if start_id is None else int(start_id)
    spec = ZipRCSpec(first, tuple(reward_values), tuple(length_edges))
    if spec.start_id < emitted:
        raise ValueError(
            f"start_id {spec.start_id} overlaps the tokenizer's ids (0..{emitted - 1}); the "
            f"slice must start at >= {emitted} so the tokenizer never emits a reserved id"
        )
    _untie_and_clone(model)
    if spec.end_id > vocab:
        # mean_resizing=False: new rows start from the standard init, old rows are untouched.
        model.resize_token_embeddings(spec.end_id, mean_resizing=False)
        with torch.no_grad():
            model.get_output_embeddings().weight[vocab:].zero_()  # uniform joint until trained
    return spec


def slice_parameter(model: Any, spec: ZipRCSpec) -> torch.nn.Parameter:
    """Freeze the whole model; return a trainable copy of the head's reserved rows (R*L, H).

    Training this copy (logits = hidden @ W.T, as the paper's manual F.linear over the
    last hidden state) and writing it back with `write_slice` cannot touch any other row:
    not through gradients, not through an optimizer's weight decay.
    """
    out = model.get_output_embeddings()
    if out is None or out.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr():
        raise RuntimeError("the output head is tied to the input embeddings: call attach_head")
    model.requires_grad_(False)
    return torch.nn.Parameter(out.weight[spec.start_id : spec.end_id].detach().clone().float())


def write_slice(model: Any, spec: ZipRCSpec, weight: torch.Tensor) -> None:
    """Copy trained slice rows into the model's output head (no other row changes)."""
    head = model.get_output_embeddings().weight
    if tuple(weight.shape) != (spec.size, head.shape[1]):
        raise ValueError(f"slice weight must be ({spec.size}, {head.shape[1]}), got {weight.shape}")
    with torch.no_grad():
        head[spec.start_id : spec.end_id] = weight.detach().to(head.dtype)


def slice_logits(logits: torch.Tensor, spec: ZipRCSpec) -> torch.Tensor:
    """(..., V) logits -> (..., R*L) logits of the reserved slice."""
    if logits.shape[-1] < spec.end_id:
        raise ValueError(
            f"logits have {logits.shape[-1]} entries but the slice ends at {spec.end_id}: "
            "is this the head model (attach_head / load_head_model)?"
        )
    return logits[..., spec.start_id : spec.end_id]


def readout(logits: torch.Tensor, spec: ZipRCSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """(value, expected remaining length), each (...), from (..., V) logits."""
    joint = torch.softmax(slice_logits(logits, spec).float(), dim=-1)
    joint = joint.reshape(*joint.shape[:-1], spec.num_rewards, spec.num_lengths)
    rewards = torch.tensor(spec.reward_values, dtype=joint.dtype)
    mids = torch.tensor(spec.midpoints, dtype=joint.dtype)
    return joint.sum(-1) @ rewards, joint.sum(-2) @ mids


def mask_reserved(logits: torch.Tensor, spec: ZipRCSpec) -> torch.Tensor:
    """Copy of `logits` with the reserved slice at -inf (so it can never be sampled)."""
    out = logits.clone()
    out[..., spec.start_id : spec.end_id] = float("-inf")
    return out


class SuppressReservedLogits:
    """A transformers LogitsProcessor that keeps `generate` from sampling reserved ids."""

    def __init__(self, spec: ZipRCSpec):
        self.spec = spec

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return mask_reserved(scores, self.spec)


def save_head_model(
    model: Any, tokenizer: Any, spec: ZipRCSpec, out_dir: str | os.PathLike[str], **info: Any
) -> None:
    """save_pretrained model + tokenizer, and ziprc.json (spec + provenance)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    set_new_file_mode(out.glob("*.safetensors"))  # safetensors writes them 0600
    payload = {"spec": spec.to_dict(), **info}
    tmp = out / (SPEC_FILE + ".tmp")
    tmp.write_text(dumps_strict(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, out / SPEC_FILE)


def load_head_model(path: str | os.PathLike[str]) -> tuple[Any, Any, ZipRCSpec]:
    """(model, tokenizer, spec) from a directory written by save_head_model."""
    from frontier_rft.lm.model_io import load_lm

    spec_path = Path(path) / SPEC_FILE
    if not spec_path.is_file():
        raise FileNotFoundError(
            f"{spec_path} not found: {path} is not a ZIP-RC head model; train one with "
            "`frontier ziprc train --model POLICY_DIR --out HEAD_DIR`"
        )
    payload = load_json_file(spec_path, "a ZIP-RC head description", max_chars=1 << 20)
    if not isinstance(payload, dict) or "spec" not in payload:
        raise ValueError(f"{spec_path}: no 'spec' object; save the head with frontier ziprc train")
    try:
        spec = ZipRCSpec.from_dict(payload["spec"])
    except ValueError as exc:
        raise ValueError(f"{spec_path}: {exc}") from None
    try:
        model, tokenizer = load_lm(path)
    except Exception as exc:  # transformers/safetensors raise many unrelated types
        raise ValueError(
            f"{path}: the head's model or tokenizer does not load ({type(exc).__name__}: "
            f"{str(exc)[:80]}); train the head again with frontier ziprc train"
        ) from exc
    if model.get_output_embeddings().weight.data_ptr() == (
        model.get_input_embeddings().weight.data_ptr()
    ):
        raise ValueError(f"{path}: the loaded head is tied to the input embeddings")
    rows = int(model.get_output_embeddings().weight.shape[0])
    # As attach_head requires: the slice lies beyond every id the tokenizer emits.
    if spec.start_id < len(tokenizer) or spec.end_id > rows:
        raise ValueError(
            f"{spec_path}: the reserved slice {spec.start_id}..{spec.end_id - 1} must lie in "
            f"{len(tokenizer)}..{rows - 1} (beyond the tokenizer's ids, within the head's rows)"
        )
    return model, tokenizer, spec
