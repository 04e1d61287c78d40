"""skip-audit (selectors/skip_audit.py): the Bayesian skip that audits the prompts it passes
over. Its bound and strength are hand-checked on planted counts; on planted flat and mixed
prompts it passes over the flat ones and keeps its estimated loss under the target; on a
planted blind regime (a prompt's past says nothing of its next group) it backs off towards
uniform and says so; it resumes exactly and refuses bad settings and states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frontier_rft import Feedback, TaskPool, make_selector
from frontier_rft.selectors.skip_audit import SkipAuditConfig, SkipAuditSelector, wilson_upper
from helpers import assert_state_equal

N = 240
B, G = 16, 8


def _pool() -> TaskPool:
    return TaskPool(num_tasks=N, features=np.random.default_rng(0).normal(size=(N, 4)))


def _stationary(rng: np.random.Generator) -> np.ndarray:
    """Pass rates fixed for the run: 40% never solved, 30% always, 30% at 0.5."""
    return rng.choice([0.0, 1.0, 0.5], size=N, p=[0.4, 0.3, 0.3])


def _run(sel: SkipAuditSelector, rates, steps: int, seed: int = 1, start: int = 0):  # type: ignore[no-untyped-def]
    """`steps` kept-mode steps (windows of B) of G rollouts; `rates(step)` gives the pass
    rates in force. Returns rollouts spent and the mixed groups among the passed-over ones."""
    rng = np.random.default_rng(seed + 1000 * start)
    spent, lost, mixed_all = 0, 0, 0
    for step in range(start, start + steps):
        p = rates(step)
        window = sel._walk  # the positions the window walks: read after, from the ids below
        del window
        ids = sel.select_window(B)
        rewards = (rng.random((ids.size, G)) < p[ids, None]).astype(float)
        spent += ids.size * G
        m = (rewards.min(1) != rewards.max(1)).sum()
        mixed_all += int(m)
        sel.update(Feedback(task_ids=np.repeat(ids, G), rewards=rewards.ravel(), step=step))
    return spent, lost, mixed_all


# ----------------------------------------------------------------------- the bound by hand
def test_wilson_upper_matches_the_hand_computed_bound() -> None:
    # p = 2/20 = 0.1, z = 1.6449 (95% one-sided), z^2 = 2.7055:
    # centre = 0.1 + 2.7055/40 = 0.16764; spread = 1.6449 sqrt(0.0045 + 2.7055/1600) = 0.12942;
    # (0.16764 + 0.12942) / (1 + 2.7055/20) = 0.29706 / 1.13528 = 0.26166
    assert wilson_upper(2, 20, 1.6449) == pytest.approx(0.26166, abs=2e-5)
    assert wilson_upper(0, 0, 1.6449) == 1.0
    assert wilson_upper(0, 100, 1.6449) == pytest.approx(2.7055 / 102.7055, rel=1e-4)


def test_strength_and_lost_share_match_the_hand_computed_values() -> None:
    sel = make_selector("skip-audit", _pool(), seed=0)
    assert isinstance(sel, SkipAuditSelector)
    sel._audit_stats.update(
        candidates=10.0, passed=6.0, kept_mixed=4.0, kept_rolled=20.0,
        cand_mixed=2.0, cand_rolled=20.0,
    )  # fmt: skip
    r, r_up = sel.passed_rate()
    assert r == pytest.approx(0.1)
    assert r_up == pytest.approx(0.26166, abs=1e-4)
    # s = T (K_m + W r_up) / ((1 - a) W r_up) = 0.05 (4 + 2.6166) / (0.875 x 2.6166) = 0.14450
    assert sel.next_strength() == pytest.approx(0.14450, abs=1e-4)
    # L = U r / (K_m + C_m + U r) = 0.6 / (4 + 2 + 0.6) = 0.090909;
    # L_up = 6 x 0.26166 / (6 + 1.56996) = 1.56996 / 7.56996 = 0.20739
    share, share_up = sel.lost_share()
    assert share == pytest.approx(0.6 / 6.6)
    assert share_up == pytest.approx(0.20739, abs=1e-4)
    # no candidates: nothing to pass over, full strength; a generous target: full strength
    sel._audit_stats.update(candidates=0.0)
    assert sel.next_strength() == 1.0


def test_staleness_is_the_least_grid_value_that_reaches_the_observed_mixed_share() -> None:
    sel = make_selector("skip-audit", _pool(), seed=0)
    # 32 rolled-out candidates, each judged on 8 failures of its own (prior Beta(0.5, 0.5)),
    # one pass old; half came back mixed. q_z = 1 - E[p^8] - E[(1-p)^8] under
    # Beta(0.5, 0.5 + 8 (1 - z)): find the least z on the grid with q_z >= 0.5.
    from frontier_rft.core.informative import informative_probability

    rows = np.tile([0.5, 0.5, 0.0, 8.0, 1.0, 0.0], (32, 1))
    rows[::2, 5] = 1.0
    sel._buffer[:32] = rows
    sel._filled = 32
    sel._group = 8
    want = next(
        z
        for z in np.linspace(0, 1, 21)
        if informative_probability(np.array([0.5]), np.array([0.5 + 8 * (1 - z)]), 8)[0] >= 0.5
    )
    assert sel._fit_staleness() == pytest.approx(want)
    assert 0.0 < want < 1.0
    rows[:, 5] = 0.0  # none mixed: the evidence stands
    sel._buffer[:32] = rows
    assert sel._fit_staleness() == 0.0


# ----------------------------------------------------------------------- planted regimes
def test_every_candidate_audited_passes_nothing_over_and_divides_by_nothing() -> None:
    """audit_share 1 (allowed: (0, 1]): every candidate is rolled out, so the bound is 0 at
    any strength and the strength is 1 (the formula's 1 - a would be a zero divisor); a run
    walks uniform's batches and passes nothing over."""
    sel = make_selector("skip-audit", _pool(), seed=0, audit_share=1.0)
    assert isinstance(sel, SkipAuditSelector)
    sel._audit_stats.update(
        candidates=10.0, passed=0.0, kept_mixed=4.0, kept_rolled=20.0,
        cand_mixed=2.0, cand_rolled=20.0,
    )  # fmt: skip
    assert sel.next_strength() == 1.0
    rates = _stationary(np.random.default_rng(3))
    fresh = make_selector("skip-audit", _pool(), seed=0, audit_share=1.0)
    assert isinstance(fresh, SkipAuditSelector)
    spent, _, _ = _run(fresh, lambda step: rates, steps=30)
    assert spent == 30 * B * G
    assert fresh._audit_totals["passed"] == 0
    assert fresh._audit_totals["candidates"] > 0


def test_on_planted_flat_and_mixed_prompts_it_passes_over_flat_ones_within_the_target() -> None:
    rates = _stationary(np.random.default_rng(3))
    sel = make_selector("skip-audit", _pool(), seed=0)
    assert isinstance(sel, SkipAuditSelector)
    spent, _, _ = _run(sel, lambda step: rates, steps=75)  # 5 passes of 15 steps
    walked = 75 * B * G
    assert spent < 0.9 * walked  # it saves
    m = sel.metrics()
    assert m["skip-audit/audit/passed_mixed_rate"] < 0.1  # what it passes over is flat
    lost, _, mixed = sel.run_lost()
    assert lost / (lost + mixed) <= sel.config.loss_target
    assert m["skip-audit/audit/strength"] > 0.3
    assert "target 5%" in sel.run_summary()
    # the audit rolled out a share of its candidates: every kind of decision was made
    t = sel._audit_totals
    assert t["audited"] > 0 and t["passed"] > 0
    assert t["candidates"] == t["audited"] + t["backed_off"] + t["passed"]


def test_on_a_planted_blind_regime_it_backs_off_towards_uniform_and_says_so() -> None:
    # Each pass every prompt's kind is drawn afresh: its past groups say nothing about its
    # next one, so what skip would pass over is mixed at the base rate.
    base = np.random.default_rng(5)
    passes = [_stationary(base) for _ in range(8)]
    blind = make_selector("skip-audit", _pool(), seed=0)
    plain = make_selector("skip", _pool(), seed=0)
    spent_blind, _, _ = _run(blind, lambda step: passes[step // 15], steps=90)
    spent_plain, _, _ = _run(plain, lambda step: passes[step // 15], steps=90)  # type: ignore[arg-type]
    m = blind.metrics()
    assert (
        m["skip-audit/audit/blindness"] > 0.6
    )  # its candidates are mixed nearly as often as the rest
    # backed off: its evidence aged away (staleness) or its passing-over thinned (strength)
    assert m["skip-audit/audit/staleness"] > 0.5 or m["skip-audit/audit/strength"] < 0.3
    assert spent_blind > spent_plain + 0.15 * 90 * B * G  # much nearer uniform's spend
    lost, _, mixed = blind.run_lost()
    assert lost / (lost + mixed) < 0.08
    assert "nearer uniform's walk because" in blind.run_summary()


# ----------------------------------------------------------------------- resume, refusals
def _drive_for_resume(sel, steps: int, start: int = 0):  # type: ignore[no-untyped-def]
    rates = _stationary(np.random.default_rng(3))
    rng = np.random.default_rng(11 + start)
    out = []
    for step in range(start, start + steps):
        ids = sel.select_window(B)
        rewards = (rng.random((ids.size, G)) < rates[ids, None]).astype(float)
        sel.update(Feedback(task_ids=np.repeat(ids, G), rewards=rewards.ravel(), step=step))
        out.append(ids)
    return out


@pytest.mark.parametrize("ageing", [True, False])
def test_it_resumes_exactly(ageing: bool) -> None:
    sel = make_selector("skip-audit", _pool(), seed=0, ageing=ageing)
    _drive_for_resume(sel, 40)
    state = sel.state_dict()
    twin = make_selector("skip-audit", _pool(), seed=4, ageing=ageing)
    _drive_for_resume(twin, 3)
    twin.load_state_dict(state)
    assert_state_equal(state, twin.state_dict())
    a, b = _drive_for_resume(sel, 20, start=40), _drive_for_resume(twin, 20, start=40)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    timing = "select/overhead_ms"
    assert {k: v for k, v in sel.metrics().items() if k != timing} == pytest.approx(
        {k: v for k, v in twin.metrics().items() if k != timing}, nan_ok=True
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("audit_share", 0.0, "audit_share must lie in (0, 1]"),
        ("loss_target", 1.0, "loss_target must lie in [0, 1)"),
        ("confidence", 0.2, "confidence must lie in [0.5, 1)"),
        ("audit_memory", 1.0, "audit_memory must lie in (0, 1)"),
    ],
)
def test_bad_settings_are_refused(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):  # fmt: skip
        SkipAuditConfig(**{field: value})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("strength", 1.5, "strength"),
        ("mark", np.full(N, 7, dtype=np.int8), "mark"),
        ("filled", -1, "filled"),
    ],
)
def test_a_bad_state_is_refused_with_nothing_changed(key: str, value: object, message: str) -> None:
    sel = make_selector("skip-audit", _pool(), seed=0)
    _drive_for_resume(sel, 20)
    before = sel.state_dict()
    bad = sel.state_dict()
    bad["algo"]["audit"][key] = value
    with pytest.raises(ValueError, match=message):
        sel.load_state_dict(bad)
    assert_state_equal(before, sel.state_dict())
    skip_state = make_selector("skip", _pool(), seed=0).state_dict()
    with pytest.raises(ValueError, match="audit"):
        sel.load_state_dict(skip_state)
    assert_state_equal(before, sel.state_dict())


def test_its_metrics_are_finite_once_candidates_were_rolled_out() -> None:
    sel = make_selector("skip-audit", _pool(), seed=0)
    _drive_for_resume(sel, 40)
    m = sel.metrics()
    for key in ("strength", "staleness", "passed_mixed_rate", "lost_share_upper", "blindness"):
        assert math.isfinite(m[f"skip-audit/audit/{key}"]), key


# ----------------------------------------------------------------------- the end-of-run line
def _planted(**stats: float) -> SkipAuditSelector:
    sel = make_selector("skip-audit", _pool(), seed=0)
    assert isinstance(sel, SkipAuditSelector)
    sel._audit_stats.update(stats)
    sel._audit_totals.update(walked=400, candidates=int(stats.get("candidates", 0)))
    sel._strength = sel.next_strength()
    return sel


def test_the_line_blames_too_few_audits_when_the_bound_is_loose_for_want_of_them() -> None:
    """Issue 83, item 3: two audited candidates, neither mixed, leave the Wilson bound near
    58%, so the strength is low for want of audits, not because candidates are mixed."""
    few = _planted(candidates=100, kept_mixed=10, kept_rolled=50, cand_rolled=2, cand_mixed=0)
    assert few.strength < 0.5
    assert "too few audits" in few.backed_off() and "mixed too often" not in few.backed_off()
    mixed = _planted(candidates=100, kept_mixed=10, kept_rolled=50, cand_rolled=200, cand_mixed=100)
    assert mixed.strength < 0.5
    assert "mixed too often" in mixed.backed_off() and "too few" not in mixed.backed_off()


def test_the_line_never_says_backed_off_twice_and_names_a_bound_above_target() -> None:
    few = _planted(candidates=100, kept_mixed=10, kept_rolled=50, cand_rolled=2, cand_mixed=0)
    few._audit_totals.update(backed_off=0, mixed_rolled=100)
    line = few.run_summary()
    assert line.count("backed off") <= 1 and "backed off 0" not in line, line
    assert "rolled out anyway 0" in line and "nearer uniform's walk because too few" in line
    few._lost = [2.0, 20.0]  # estimate 2.0%, run's upper bound 16.7%: above the 5% target
    line = few.run_summary()
    assert "upper bound 16.7%" in line and "is not a miss" in line
    assert "estimate is above" not in line
    few._lost = [10.0, 20.0]  # estimate 9.1%: above the target
    assert "target 5%: the estimate is above it" in few.run_summary()


def test_the_config_says_what_the_target_bounds_and_what_ageing_off_costs() -> None:
    from frontier_rft.core.config import field_docs

    docs = {k: " ".join(v.split()) for k, v in field_docs(SkipAuditConfig).items()}
    assert "average target, not a per-run guarantee" in docs["loss_target"]
    assert "not a 95% guarantee on the run" in docs["confidence"]
    assert "5-11 of 20 seeds" in docs["ageing"]
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "selectors" / "skip_audit.md").read_text()
    assert "**What the target bounds.**" in page and "`ageing: false`" in page


@pytest.mark.parametrize("key", ["candidates", "cand_rolled", "kept_mixed", "strength"])
def test_a_state_with_a_nan_count_is_refused_with_nothing_changed(key: str) -> None:
    """Issue 83, item 22: a NaN count made the strength NaN and pinned it to never skipping."""
    sel = make_selector("skip-audit", _pool(), seed=0)
    _drive_for_resume(sel, 20)
    before = sel.state_dict()
    bad = sel.state_dict()
    audit = bad["algo"]["audit"]
    (audit if key == "strength" else audit["stats"])[key] = float("nan")
    with pytest.raises(ValueError, match=f"{key} is NaN"):
        sel.load_state_dict(bad)
    assert_state_equal(before, sel.state_dict())
