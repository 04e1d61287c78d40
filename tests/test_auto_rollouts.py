"""`rollouts: auto`, as every adapter decides it (integrations/auto_rollouts.py): kept only for
a selector that passes over prompts within uniform's step and that no measurement says loses
held-out score with kept, and only where no trainer setting is in the way."""

from __future__ import annotations

import pytest

from frontier_rft.integrations.auto_rollouts import keeps_full, resolve_auto
from frontier_rft.selectors import SELECTORS


def test_skip_is_kept_where_nothing_is_in_the_way() -> None:
    assert resolve_auto(SELECTORS["skip"], []) == (
        "kept",
        "each step generates only the prompts 'skip' keeps",
        False,
    )


def test_a_setting_in_the_way_keeps_full_batches_with_a_warning() -> None:
    mode, why, warn = resolve_auto(SELECTORS["skip"], ["shadows follow uniform's whole batches"])
    assert (mode, warn) == ("full", True) and why == "shadows follow uniform's whole batches"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("uniform", "selector 'uniform' passes over no prompt"),
        ("bots", "selector 'bots' does not walk the data"),
        ("greso", "selector 'greso': with rollouts: kept it ended 0.04 below uniform"),
    ],
)
def test_a_selector_kept_would_not_help_keeps_full_batches_without_a_warning(
    name: str, said: str
) -> None:
    """greso passes over prompts, but with kept it ended below uniform (measured): auto keeps
    its batches full and says why, whatever the settings; a user may still ask for kept."""
    mode, why, warn = resolve_auto(SELECTORS[name], ["a blocker too"])
    assert (mode, warn) == ("full", False) and why.startswith(said), why
    assert keeps_full(SELECTORS[name]) == why


def test_only_selectors_that_skip_within_a_step_declare_a_measured_loss() -> None:
    """kept_loses is evidence about kept, which only a selector that walks the data and
    passes over prompts can run."""
    for cls in SELECTORS.values():
        if cls.kept_loses is not None:
            assert cls.walks_windows() and cls.passes_over, cls.name


def test_frontier_selectors_says_what_rollouts_auto_does_with_each() -> None:
    from frontier_rft.cli.selectors import describe

    assert "rollouts auto: kept: each step generates only the prompts it keeps" in describe(
        "skip", full=False
    )
    greso = describe("greso", full=False)
    assert "rollouts auto: full (uniform's bill): with rollouts: kept it ended 0.04" in greso
    assert "rollouts auto: full (uniform's bill): passes over no prompt" in describe(
        "uniform", full=False
    )
