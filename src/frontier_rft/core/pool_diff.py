"""What differs between the TaskPool a selector state was saved for and the one it meets.

A state carries its pool's fingerprint (one hash) and `TaskPool.summary()` (the size and a
digest per metadata field). When the fingerprints differ, the refusal names what differs:
the size, each field present in one pool only, array shapes, and for prompts (and keys)
whether they are the same text in another order (a reshuffled dataset) or other text.
The saved summary comes from an untrusted file: anything malformed in it is ignored, and
the message falls back to the two fingerprints.
"""

from __future__ import annotations

from typing import Any

from frontier_rft.core.pool import TaskPool

__all__ = ["pool_differences", "pool_mismatch"]

_FIELDS = ("categories", "difficulty", "features", "reference_pass_rates", "prompts", "keys")
_HINT = "load it with the pool it was saved with (same tasks, same order, same metadata)"


def pool_mismatch(fingerprint: Any, summary: Any, pool: TaskPool) -> str | None:
    """None when `fingerprint` is `pool`'s; else the refusal, naming what differs."""
    if isinstance(fingerprint, str) and fingerprint == pool.fingerprint:
        return None
    differences = pool_differences(summary, pool)
    if not differences:  # no (usable) summary: a file written before summaries existed
        return (
            f"state was saved for a different TaskPool (fingerprint {fingerprint!r} != "
            f"{pool.fingerprint!r}); {_HINT}"
        )
    return f"state was saved for a different TaskPool: {'; '.join(differences)}; {_HINT}"


def pool_differences(saved: Any, pool: TaskPool) -> list[str]:
    """What differs between a saved `TaskPool.summary()` and `pool`, one phrase each;
    empty when the summary is malformed or shows no difference."""
    if not isinstance(saved, dict):
        return []
    here = pool.summary()
    out = []
    size = saved.get("num_tasks")
    if not isinstance(size, int) or isinstance(size, bool):
        return []
    if size != here["num_tasks"]:
        out.append(f"{size} tasks saved, {here['num_tasks']} here")
    fields = saved.get("fields")
    if not isinstance(fields, dict):
        return []
    for name in _FIELDS:
        if name not in fields:
            return []
        note = _field_difference(name, fields[name], here["fields"][name])
        if note:
            out.append(note)
    return out


def _field_difference(name: str, saved: Any, here: dict[str, Any] | None) -> str:
    where = f"TaskPool.{name}"
    if saved is None and here is None:
        return ""
    if saved is None:
        return f"{where} is given here but was not saved"
    if here is None:
        return f"{where} was saved but is missing here"
    if not isinstance(saved, dict):
        return f"{where} differs"
    if "shape" in here and saved.get("shape") != here["shape"]:
        shape = saved.get("shape")
        shown = tuple(shape) if isinstance(shape, list) else shape
        return f"{where} has shape {shown} saved, {tuple(here['shape'])} here"
    if saved.get("digest") == here["digest"]:
        return ""
    if "unordered" in here and saved.get("unordered") == here["unordered"]:
        return f"{where} holds the same entries in another order (a reshuffled dataset?)"
    return f"{where} differs (digest {saved.get('digest')!r} saved, {here['digest']!r} here)"
