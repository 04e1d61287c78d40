"""Prompts-only evidence: text features, derived categories and difficulty, refresh_features."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from frontier_rft import SELECTORS, Feedback, TaskPool, make_selector
from frontier_rft.features import TextFeatureConfig, text_features
from frontier_rft.features.derive import (
    EvidenceWarning,
    cluster_count,
    cluster_features,
    relabel_evidence,
    task_categories,
)
from frontier_rft.selectors.persistence import load_selector, save_selector
from helpers import assert_state_equal, drive

PROMPTS = [
    f"{verb} the {noun} of {a} and {b} {tail}"
    for verb, noun, tail in (
        ("Find", "sum", "quickly."),
        ("Compute", "product", "exactly."),
        ("Solve", "difference", "please."),
        ("Evaluate", "quotient", "now."),
    )
    for a in range(1, 6)
    for b in (7, 70, 700)
]


def test_text_features_are_deterministic_unit_rows() -> None:
    f = text_features(PROMPTS)
    assert f.dtype == np.float32 and f.shape[0] == len(PROMPTS) and 1 <= f.shape[1] <= 64
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(f, text_features(PROMPTS))


def test_fast_ascii_tokens_equal_the_token_pattern() -> None:
    import re

    from frontier_rft.features.text import TOKEN_PATTERN, _preprocess, _tokens

    rng = np.random.default_rng(0)
    alphabet = [chr(i) for i in range(128)] + list("éß×÷−≤٣ΣΩ")
    texts = ["".join(rng.choice(alphabet, size=rng.integers(0, 60))) for _ in range(3000)]
    texts += ["Compute 12+345*(6-7)/8 = ?", "a_b c-d\x1ce\tf", "ÉCOLE 3×4", ""]
    pattern = re.compile(TOKEN_PATTERN)
    for text in texts:
        assert _tokens(text) == pattern.findall(_preprocess(text)), repr(text)


def test_digits_encode_length_not_value() -> None:
    f = text_features(["add 12 and 34", "add 56 and 78", "add 1234 and 5678", "sort the list"])
    assert f[0] @ f[1] == pytest.approx(1.0, abs=1e-6)  # same digit shapes, same row
    assert f[0] @ f[2] < 0.999


def test_similar_prompts_are_closer_than_unrelated_ones() -> None:
    prompts = ["find the sum of two primes"] * 3 + ["sort a list of names alphabetically"] * 3
    prompts += ["find the sum of three primes", "sort a list of cities alphabetically"]
    f = text_features(prompts)
    assert f[6] @ f[0] > f[6] @ f[3]
    assert f[7] @ f[3] > f[7] @ f[0]


def test_empty_and_tiny_inputs_are_documented_behaviour() -> None:
    assert text_features([""]).tolist() == [[0.0]]  # nothing to read: a zero row
    f = text_features(["", "a b", "a b"])
    assert not f[0].any() and f[1] @ f[2] == pytest.approx(1.0)
    assert text_features(["only one prompt"]).shape == (1, 1)
    with pytest.raises(ValueError, match="at least one prompt"):
        text_features([])
    with pytest.raises(ValueError, match="prompt 1 is a int"):
        text_features(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not one string"):
        text_features("a single string")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dim must be a positive int"):
        TextFeatureConfig(dim=0)


@pytest.mark.parametrize("ngram_max", [1, 2])
def test_lone_surrogates_in_prompts_are_featurized(ngram_max: int) -> None:
    # json.loads('"\\ud83d"') gives a lone surrogate, which UTF-8 (the hasher) cannot encode.
    prompts = ["Solve \ud83d for x", "Solve \ud83e for y", "Add 2 and 3", "Add 4 and 5"]
    features = text_features(prompts, TextFeatureConfig(ngram_max=ngram_max))
    assert features.shape[0] == 4 and np.all(np.isfinite(features))
    pool = TaskPool(num_tasks=4, prompts=prompts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector("dots", pool, seed=0)
    assert sel.select(2).shape == (2,)


def test_fit_sample_bounds_fitting_but_transforms_every_prompt() -> None:
    f = text_features(PROMPTS * 4, TextFeatureConfig(fit_sample=10, chunk_size=7, dim=4))
    assert f.shape == (len(PROMPTS) * 4, 4)
    np.testing.assert_array_equal(f[: len(PROMPTS)], f[len(PROMPTS) : 2 * len(PROMPTS)])


def test_cluster_count_rule() -> None:
    assert [cluster_count(n) for n in (1, 40, 2000, 2560, 10**6)] == [2, 2, 14, 16, 16]


def test_derived_categories_name_their_source() -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with pytest.warns(EvidenceWarning, match="k-means clusters"):
        cats, source = task_categories(pool, "sec", num_clusters=4)
    assert source == "kmeans_text" and cats.shape == (len(PROMPTS),)
    assert 2 <= len(np.unique(cats)) <= 4
    given = TaskPool(num_tasks=3, categories=[0, 1, 1], prompts=["a", "b", "c"])
    assert task_categories(given, "sec")[1] == "given"


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = {(int(x), int(y)) for x, y in zip(a, b, strict=True)}
    return len(pairs) == len({x for x, _ in pairs}) == len({y for _, y in pairs})


def test_k_means_of_extreme_magnitudes_is_that_of_the_scaled_features() -> None:
    """Finite features near the float limits overflowed (1e300: inf/NaN distances, wrong
    clusters) or underflowed (1e-300: every distance 0, one cluster) inside scikit-learn."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    base = np.repeat(centres, 10, axis=0) + 0.1 * rng.standard_normal((30, 2))
    expected = cluster_features(base, 3, seed=0)
    assert len(np.unique(expected)) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or convergence warning either
        for scale in (1e300, 1e-300):
            assert _same_partition(cluster_features(base * scale, 3, seed=0), expected), scale


def test_k_means_k_rules_for_tiny_and_degenerate_pools() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn's ConvergenceWarning included
        assert sorted(cluster_features(np.eye(3), 5, seed=0)) == [0, 1, 2]  # k > tasks
        assert cluster_features(np.zeros((0, 4)), 3, seed=0).shape == (0,)
        # more tasks than the k-means sample, fewer distinct rows than k: no empty clusters
        many = np.repeat(np.eye(2), 10_001, axis=0)
        assert np.unique(cluster_features(many, 16, seed=0)).tolist() == [0, 1]
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="positive int"):
            cluster_features(np.eye(3), bad, seed=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        cluster_features(np.array([[0.0], [np.nan]]), 2, seed=0)
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with pytest.raises(ValueError, match="num_clusters must be a positive int"):
        task_categories(pool, "sec", num_clusters=0)


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_every_selector_runs_from_prompts_alone(name: str) -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector(name, pool, seed=0, **SELECTORS[name].default_collaborators())
    rates = np.linspace(0.05, 0.95, len(PROMPTS))
    drive(sel, steps=6, pass_rates=rates, batch=8)
    metrics = sel.metrics()
    assert all(np.isfinite(v) or np.isnan(v) for v in metrics.values())
    for what, source in sel.evidence.items():
        assert metrics[f"evidence/{what}/{source}"] == 1.0


def test_evidence_reports_what_each_selector_derived() -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        found = {n: make_selector(n, pool).evidence for n in ("pcl", "sec", "bots", "offline")}
    assert found["pcl"] == {"features": "text"}
    assert found["sec"] == {"categories": "kmeans_text"}
    assert found["bots"] == {"features": "text", "plugin": "regression"}
    assert found["offline"] == {"features": "text", "difficulty": "observed"}


def test_metis_still_needs_its_judge() -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with pytest.raises(ValueError, match="judge"):
        make_selector("metis", pool)


def test_observed_difficulty_orders_offline_easy_first() -> None:
    prompts = [f"level {k % 3} task {'x' * (k % 3)}" for k in range(30)]
    pool = TaskPool(num_tasks=30, prompts=prompts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector("offline", pool, seed=0)
    ids = sel.select(6)
    rates = np.where(ids % 3 == 0, 1.0, 0.0)  # level 0 is easy
    sel.update(Feedback(np.repeat(ids, 4), np.repeat(rates, 4), step=0))
    nxt = sel.select(6)
    # The first observed rates and their regression put unseen level-0 tasks first.
    assert np.mean(nxt % 3 == 0) > 0.5


def _observed_offline(n: int, **overrides: object):  # type: ignore[no-untyped-def]
    prompts = [f"level {k % 3} task {'x' * (k % 3)} {k}" for k in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return make_selector("offline", TaskPool(num_tasks=n, prompts=prompts), **overrides)


def _resort_steps(sel, steps: int, batch: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Steps whose select re-sorted the rest of the order (sorted_at moved)."""
    out, last = [], sel._estimated.sorted_at
    for t in range(steps):
        ids = sel.select(batch)
        if sel._estimated.sorted_at != last:
            out.append(t)
            last = sel._estimated.sorted_at
        sel.update(Feedback(np.repeat(ids, 2), np.repeat((ids % 3 == 0) * 1.0, 2), step=t))
    return out


def test_observed_offline_resort_schedule_hand_computed() -> None:
    # N = 4000, 1% = 40; 10 new tasks per step. A select re-sorts once the new first
    # observations reach min(40, 0.1 * sorted_at): every step up to sorted_at = 100
    # (steps 1..10; step 11 too: 10 >= 10), then every 2nd step (10 < 11..19 <= 20).
    sel = _observed_offline(4000, seed=0)
    steps = _resort_steps(sel, 20, batch=10)
    assert steps == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19]
    # Later the 1% cap: from sorted_at >= 400 on, exactly every 4th step (40 new tasks).
    more = _resort_steps(sel, 120, batch=10)
    gaps = np.diff(more)
    assert (gaps[-10:] == 4).all(), more
    # resort_fraction 0: after every step with new first observations
    assert _resort_steps(_observed_offline(600, resort_fraction=0.0), 20, batch=10) == list(
        range(1, 20)
    )


def test_observed_offline_small_pools_resort_every_step() -> None:
    # A batch of >= 1% of the pool (the simulator: 32 of 2,000) re-sorts at every step.
    assert _resort_steps(_observed_offline(600), 30, batch=10) == list(range(1, 30))


def test_observed_offline_resorts_o_1_over_fraction_times_per_epoch() -> None:
    sel = _observed_offline(4000, seed=0)
    steps = _resort_steps(sel, 400, batch=10)  # one epoch: every task observed once
    sel.flush()
    assert sel._estimated.observed == 4000
    # ~25 early re-sorts up to 400 observed, then one per 40: ~115; every step would be 399
    assert 90 < len(steps) < 130, len(steps)
    # The final estimate (every task observed) orders the next epoch, whatever the schedule.
    sel.select(10)
    assert sel._estimated.sorted_at == 4000 and not sel._estimated.changed


def test_refreshed_features_resort_at_the_next_select_and_fraction_is_validated() -> None:
    sel = _observed_offline(4000)
    _resort_steps(sel, 30, batch=10)
    sel.select(10)
    dim = sel._estimated.features.shape[1]
    sel.refresh_features(np.random.default_rng(0).standard_normal((4000, dim)))
    assert sel._estimated.due(40.0)
    sel.select(10)
    assert sel._estimated.sorted_at == sel._estimated.observed
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="resort_fraction"):
            _observed_offline(30, resort_fraction=bad)


def test_observed_offline_state_without_the_schedule_loads_as_resort_at_next_change() -> None:
    sel = _observed_offline(300)
    _resort_steps(sel, 5, batch=10)
    state = sel.state_dict()
    est = state["algo"]["estimated"]
    assert est["sorted_at"] == sel._estimated.sorted_at > 0
    legacy_est = {k: v for k, v in est.items() if k != "sorted_at"}
    back = _observed_offline(300)
    back.load_state_dict({**state, "algo": {**state["algo"], "estimated": legacy_est}})
    assert back._estimated.sorted_at == -1
    before = back.state_dict()
    bad_est = {**est, "sorted_at": 301}
    with pytest.raises(ValueError, match="sorted_at"):
        back.load_state_dict({**state, "algo": {**state["algo"], "estimated": bad_est}})
    assert_state_equal(before, back.state_dict())  # a rejected state changes nothing


@pytest.mark.parametrize("name", ["pcl", "frontier", "bots", "offline", "adcl"])
def test_refresh_features_is_kept_across_save_and_load(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector(name, pool, seed=1)
        drive(sel, steps=3, pass_rates=np.full(len(PROMPTS), 0.5), batch=6)
        dim = text_features(PROMPTS).shape[1]
        fresh = np.random.default_rng(0).standard_normal((len(PROMPTS), dim))
        assert sel.refresh_features(fresh) is True
        assert sel.metrics()["evidence/features/refreshed"] == 1.0
        save_selector(sel, tmp_path / "s.npz")
        back = load_selector(tmp_path / "s.npz")
    assert_state_equal(sel.state_dict(), back.state_dict())
    np.testing.assert_array_equal(sel.select(6), back.select(6))


def test_dynamic_sampling_reports_and_refreshes_its_inner_selectors_features(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from frontier_rft.sampling.dynamic_sampling import DynamicSampling
    from frontier_rft.sampling.sampler_file import load_sampler, save_sampler

    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = DynamicSampling(make_selector("pcl", pool, seed=1))
        twin = DynamicSampling(make_selector("pcl", pool, seed=1))
        fresh_inner = make_selector("pcl", pool, seed=1)
    assert sel.metrics()["evidence/features/text"] == 1.0  # what the inner derived
    drive(sel.inner, steps=3, pass_rates=np.full(len(PROMPTS), 0.5), batch=6)
    drive(twin.inner, steps=3, pass_rates=np.full(len(PROMPTS), 0.5), batch=6)
    before = sel.state_dict()
    fresh = np.random.default_rng(0).standard_normal(text_features(PROMPTS).shape)
    assert sel.inner.refresh_features(fresh) is True
    np.testing.assert_array_equal(sel.inner._features, fresh)
    assert sel.metrics()["evidence/features/refreshed"] == 1.0
    save_sampler(sel, tmp_path / "s.npz")
    back = load_sampler(tmp_path / "s.npz", fresh_inner)
    assert_state_equal(sel.state_dict(), back.state_dict())
    sel.load_state_dict(before)  # back to the text features it was built with
    assert_state_equal(twin.state_dict(), sel.state_dict())
    np.testing.assert_array_equal(twin.inner.select(6), sel.inner.select(6))


def test_refresh_features_validates_and_reports_unused() -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        uniform = make_selector("uniform", pool)
        pcl = make_selector("pcl", pool)
    assert uniform.refresh_features(np.ones((len(PROMPTS), 3))) is False
    before = pcl.state_dict()
    with pytest.raises(ValueError, match="keep the dimension"):
        pcl.refresh_features(np.ones((len(PROMPTS), 3)))
    with pytest.raises(ValueError, match="shape"):
        pcl.refresh_features(np.ones(len(PROMPTS)))
    with pytest.raises(ValueError, match="NaN"):
        pcl.refresh_features(np.full((len(PROMPTS), 2), np.nan))
    shape = text_features(PROMPTS).shape
    with pytest.raises(ValueError, match="real-valued numeric array, got dtype complex128"):
        pcl.refresh_features(np.ones(shape) * (1 + 5j))  # never silently drop a part
    with pytest.raises(ValueError, match="real-valued numeric array"):
        pcl.refresh_features(np.full(shape, "x"))
    huge = np.full(shape, 1e300)
    with pytest.raises(ValueError, match="above the supported"):
        pcl.refresh_features(huge)  # as TaskPool(features=...) refuses it
    assert_state_equal(before, pcl.state_dict())


def test_rejected_state_restores_the_features_the_selector_was_built_with() -> None:
    pool = TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        a, b = make_selector("pcl", pool), make_selector("pcl", pool)
    dim = text_features(PROMPTS).shape[1]
    a.refresh_features(np.ones((len(PROMPTS), dim)))
    state = a.state_dict()
    state["algo"]["gram"] = np.zeros((1, 1))  # corrupt after the features are applied
    before = b.state_dict()
    with pytest.raises(ValueError):
        b.load_state_dict(state)
    assert_state_equal(before, b.state_dict())
    assert b.evidence["features"] == "text"


DEGENERATE = {
    "identical": ["same prompt"] * 20,
    "empty": [""] * 20,
    "one": ["x"],
    "two": ["a b", "c d"],
    "whitespace": ["  "] * 5 + ["real text here"] * 5,
}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_degenerate_prompt_pools_run(case: str, name: str) -> None:
    """Identical, empty or very few prompts: a documented behaviour, never a crash."""
    prompts = DEGENERATE[case]
    collaborators = SELECTORS[name].default_collaborators()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sel = make_selector(
            name, TaskPool(num_tasks=len(prompts), prompts=prompts), **collaborators
        )
    for t in range(3):
        ids = sel.select(1)
        sel.update(Feedback(np.repeat(ids, 4), np.tile([1.0, 0.0, 1.0, 0.0], ids.size), step=t))
    assert sel.select(1).shape == (1,)


def test_text_features_of_a_fresh_process_equal_its_later_calls() -> None:
    """The first call in a process (sklearn and scipy's BLAS not yet loaded) gives the same
    features as later calls: the one-BLAS-thread limit must cover scipy's BLAS too."""
    script = (
        "import numpy as np\n"
        "from frontier_rft.simulation.learner import SimulatedLearner\n"
        "from frontier_rft.simulation.scenario import SCENARIOS\n"
        "from frontier_rft.features import text_features\n"
        "prompts = SimulatedLearner(SCENARIOS['hard'], seed=0).pool.prompts\n"
        "first, second = text_features(prompts), text_features(prompts)\n"
        "print(float(np.abs(first - second).max()))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}  # as on a 2-core machine
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.strip()) == 0.0


def _feature_pools() -> list[tuple[str, TaskPool]]:
    from helpers import world_pool

    return [
        ("world", world_pool()),  # given features (3 columns), difficulty and references
        ("prompts", TaskPool(num_tasks=len(PROMPTS), prompts=PROMPTS)),  # text features
    ]


@pytest.mark.parametrize(
    ("name", "overrides"),
    [(name, {}) for name in sorted(SELECTORS)]
    + [
        (name, {"plugin": plugin})
        for name in ("bots", "dots")
        for plugin in ("kernel", "regression")
    ],
)
def test_refresh_features_refuses_a_changed_dimension(name: str, overrides: dict[str, str]) -> None:
    from helpers import build

    reads = []
    for label, pool in _feature_pools():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            sel = build(name, pool, seed=1, **overrides)
        drive(sel, steps=2, pass_rates=np.full(pool.num_tasks, 0.5), batch=6)
        before = sel.state_dict()
        rng = np.random.default_rng(0)
        wider = rng.standard_normal((pool.num_tasks, 70))  # more columns than any pool here
        refused = None
        try:
            accepted = sel.refresh_features(wider)
        except ValueError as exc:
            refused = re.search(r"got 70 feature columns, the selector reads (\d+); keep", str(exc))
            assert refused, exc
        assert_state_equal(before, sel.state_dict())  # refused or unused: nothing changed
        assert refused or accepted is False, f"{name} {overrides} ({label} pool) took 70 columns"
        reads.append(refused is not None)
        if refused:  # it reads features: the kept dimension is accepted
            kept = rng.standard_normal((pool.num_tasks, int(refused[1])))
            assert sel.refresh_features(kept) is True
    if name in ("frontier", "pcl", "offline", "adcl") or overrides:
        # these read features on at least one pool: the refusal itself was checked
        assert any(reads), f"{name} {overrides} read no features on any pool"


def test_relabel_evidence_names_the_source_of_given_features_only() -> None:
    """Given features and k-means clusters of them take the source's name; other given
    metadata (difficulty here) and evidence derived from prompts keep their labels."""
    evidence = {
        "features": "given",
        "categories": "kmeans_given",
        "keys": "prompts",
        "difficulty": "given",
    }
    relabel_evidence(evidence, "policy")
    assert evidence == {
        "features": "policy",
        "categories": "kmeans_policy",
        "keys": "prompts",
        "difficulty": "given",
    }
    features = text_features(PROMPTS).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        sec = make_selector(
            "sec", TaskPool(len(PROMPTS), prompts=PROMPTS, features=features), seed=0
        )
    assert sec.evidence["categories"] == "kmeans_given"
    relabel_evidence(sec.evidence, "policy")
    assert sec.metrics()["evidence/categories/kmeans_policy"] == 1.0
