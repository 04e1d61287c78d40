"""Fixtures every suite shares (tests, tests_verl, tests_skyrl, tests_tinker): pytest loads this
file for any test under the repository, whichever suite's environment runs it."""

from __future__ import annotations

import pytest

PLANTED_KEPT_LOSS = (
    "with rollouts: kept it ended 0.013 below uniform's held-out pass@1 over 3 epochs (planted)"
)
"""The loss the planted skip declares beyond 2 epochs (`skip_kept_to_two_epochs`)."""


@pytest.fixture
def skip_kept_to_two_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant a selector `rollouts: auto` keeps kept for: skip as the CPU testbed alone measured
    it (kept within noise up to 2 epochs, below beyond), before the fast regime and SmolLM2
    showed its loss. No registered selector that passes over prompts earns kept today, so the
    mechanism's tests (kept where nothing is in the way, full beyond the level or behind a
    setting, with a warning) run on this one."""
    from frontier_rft.selectors.skip import SkipSelector

    monkeypatch.setattr(SkipSelector, "kept_loses", PLANTED_KEPT_LOSS)
    monkeypatch.setattr(SkipSelector, "kept_level_epochs", 2.0)
