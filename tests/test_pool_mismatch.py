"""A selector state refused on another TaskPool says what differs (core.pool_diff).

The state carries `TaskPool.summary()` (size and a digest per metadata field); files
written before it did are explained from the pool saved in the file, and a file with
neither falls back to the two fingerprints.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontier_rft import CheckpointError, TaskPool, load_selector, make_selector, save_selector
from frontier_rft.core.pool_diff import pool_differences

N = 30
PROMPTS = [f"what is {i} + {i % 7}?" for i in range(N)]
LEVELS = np.arange(N) % 3


def saved_pool() -> TaskPool:
    return TaskPool(num_tasks=N, prompts=PROMPTS, categories=LEVELS, difficulty=LEVELS * 0.5)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "sel.npz"
    save_selector(make_selector("greso", saved_pool(), seed=0), path)
    return path


def refusal(path: Path, pool: TaskPool) -> str:
    with pytest.raises(CheckpointError, match="saved for a different TaskPool") as caught:
        load_selector(path, pool=pool)
    return str(caught.value)


def test_a_reshuffled_dataset_is_named_as_such(saved: Path) -> None:
    order = np.random.default_rng(0).permutation(N)
    pool = TaskPool(
        num_tasks=N,
        prompts=[PROMPTS[i] for i in order],
        categories=LEVELS[order],
        difficulty=LEVELS[order] * 0.5,
    )
    message = refusal(saved, pool)
    assert "TaskPool.prompts holds the same entries in another order" in message
    assert "TaskPool.categories differs" in message  # reordered too
    assert "load it with the pool it was saved with" in message


def test_other_prompts_a_size_and_missing_or_new_fields_are_each_named(saved: Path) -> None:
    pool = TaskPool(
        num_tasks=N - 5, prompts=PROMPTS[5:], features=np.ones((N - 5, 2)), difficulty=LEVELS[5:]
    )
    message = refusal(saved, pool)
    saved_digest = saved_pool().summary()["fields"]["prompts"]["digest"]
    assert f"{N} tasks saved, {N - 5} here" in message
    assert f"TaskPool.prompts differs (digest {saved_digest!r} saved" in message
    assert "TaskPool.categories was saved but is missing here" in message
    assert "TaskPool.features is given here but was not saved" in message
    assert f"TaskPool.difficulty has shape ({N},) saved, ({N - 5},) here" in message
    assert "keys" not in message and "reference_pass_rates" not in message  # in neither


def test_an_array_of_another_shape_names_both_shapes() -> None:
    base = TaskPool(num_tasks=4, features=np.zeros((4, 3)))
    other = TaskPool(num_tasks=4, features=np.zeros((4, 5)))
    assert pool_differences(base.summary(), other) == [
        "TaskPool.features has shape (4, 3) saved, (4, 5) here"
    ]
    assert pool_differences(base.summary(), base) == []


def test_load_state_dict_says_the_same(saved: Path) -> None:
    sel = make_selector("greso", saved_pool(), seed=0)
    other = make_selector("greso", TaskPool(num_tasks=N, prompts=PROMPTS), seed=0)
    with pytest.raises(ValueError, match=r"TaskPool\.categories was saved but is missing here"):
        other.load_state_dict(sel.state_dict())


def _rewrite_header(path: Path, change: Any) -> None:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(arrays["__header__"].tobytes().decode())
    change(header)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_a_file_from_before_summaries_is_explained_from_its_own_pool(saved: Path) -> None:
    _rewrite_header(saved, lambda h: h["state"].pop("pool_summary"))
    message = refusal(saved, TaskPool(num_tasks=N, prompts=PROMPTS))
    assert "TaskPool.categories was saved but is missing here" in message
    assert (
        make_selector("greso", saved_pool()).pool.fingerprint
        == load_selector(saved).pool.fingerprint
    )


def test_without_a_summary_or_a_pool_the_fingerprints_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bare.npz"
    save_selector(make_selector("greso", saved_pool(), seed=0), path, include_pool=False)
    _rewrite_header(path, lambda h: h["state"].pop("pool_summary"))
    message = refusal(path, TaskPool(num_tasks=N, prompts=PROMPTS))
    assert f"fingerprint {saved_pool().fingerprint!r} != " in message


@pytest.mark.parametrize(
    "summary",
    [
        None,
        "x",
        {"num_tasks": "30"},
        {"num_tasks": 30, "fields": []},
        {"num_tasks": 30, "fields": {"prompts": 3}},
        {"num_tasks": True, "fields": {}},
    ],
)
def test_a_tampered_summary_falls_back_to_the_fingerprints(tmp_path: Path, summary: Any) -> None:
    path = tmp_path / "bare.npz"  # no pool in the file: nothing else to explain it from
    save_selector(make_selector("greso", saved_pool(), seed=0), path, include_pool=False)
    _rewrite_header(path, lambda h: h["state"].update(pool_summary=summary))
    message = refusal(path, TaskPool(num_tasks=N, prompts=PROMPTS))
    assert "fingerprint" in message or "differs" in message


def test_the_summary_by_hand() -> None:
    pool = TaskPool(num_tasks=3, prompts=["a", "b", "c"], difficulty=[0.0, 1.0, 2.0])
    swapped = TaskPool(num_tasks=3, prompts=["c", "a", "b"], difficulty=[0.0, 1.0, 2.0])
    s, t = pool.summary(), swapped.summary()
    assert s["num_tasks"] == 3 and s["fields"]["features"] is None
    assert s["fields"]["difficulty"] == t["fields"]["difficulty"]
    assert s["fields"]["difficulty"]["shape"] == [3]
    values = np.array([0.0, 1.0, 2.0]).tobytes()
    assert s["fields"]["difficulty"]["digest"] == hashlib.sha256(values).hexdigest()[:16]
    assert s["fields"]["prompts"]["digest"] == hashlib.sha256(b"a\0b\0c\0").hexdigest()[:16]
    assert s["fields"]["prompts"]["digest"] != t["fields"]["prompts"]["digest"]
    assert s["fields"]["prompts"]["unordered"] == t["fields"]["prompts"]["unordered"]
    s["num_tasks"] = 99  # a copy: the pool's own summary is unchanged
    assert pool.summary()["num_tasks"] == 3


def test_a_service_restarted_on_another_pool_says_what_differs(tmp_path: Path) -> None:
    from frontier_rft.service import SelectorService, ServiceConfig

    cfg = ServiceConfig(checkpoint_dir=str(tmp_path / "svc"))
    service = SelectorService(make_selector("greso", saved_pool(), seed=0), cfg)
    service.save()
    service.close()
    reshuffled = TaskPool(num_tasks=N, prompts=PROMPTS[::-1])
    with pytest.raises(ValueError, match=r"a different TaskPool \(TaskPool\.categories was saved"):
        SelectorService(make_selector("greso", reshuffled, seed=0), cfg)
