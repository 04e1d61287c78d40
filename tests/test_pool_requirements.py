"""One rule for every registered selector, on a pool that lacks metadata (docs/contract.md).

A selector's configuration declares what it cannot run without (`requirement(config)`, a
`core.facts.Requires`): any one of some TaskPool fields, the prompt text among them where
it can derive the rest. A pool with none of them is refused at construction, before any
warning or work, with the one message `Requires.refusal` writes; a pool with any one of
them builds and runs; the settings the refusal names as alternatives build on the bare
pool. A configuration that requires nothing builds on a bare pool without a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from frontier_rft import SELECTORS, TaskPool, make_selector
from frontier_rft.cli.selectors import describe
from frontier_rft.core.facts import Requires
from frontier_rft.core.selector import Selector
from frontier_rft.features.derive import EvidenceWarning
from helpers import build, drive, world_pass_rates, world_pool

N = 90
WORLD = world_pool(N)
RATES = world_pass_rates(WORLD)
BARE = TaskPool(num_tasks=N)


def only(field: str) -> TaskPool:
    """The world pool with one metadata field and nothing else."""
    return TaskPool(num_tasks=N, **{field: getattr(WORLD, field)})


def default_requirement(name: str) -> Requires | None:
    cls = SELECTORS[name]
    return cls.requirement(cls.config_class())


def refused_without_a_warning(name: str, pool: TaskPool, **overrides: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvidenceWarning)  # refused, never warned and run
        with pytest.raises(ValueError) as caught:
            build(name, pool, **overrides)
    return str(caught.value)


def test_a_bare_pool_is_refused_exactly_when_the_default_config_requires_something(
    selector_name: str,
) -> None:
    need = default_requirement(selector_name)
    if need is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", EvidenceWarning)
            sel = build(selector_name, BARE)
        drive(sel, steps=3, pass_rates=RATES)
        return
    message = refused_without_a_warning(selector_name, BARE)
    assert message == need.refusal(selector_name)  # the one message, from the one place
    for field in need.fields:
        assert f"TaskPool.{field}" in message
    assert "pass TaskPool(num_tasks=..." in message


def test_any_one_required_field_is_enough(selector_name: str) -> None:
    need = default_requirement(selector_name)
    for field in need.fields if need is not None else ():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)  # derived from it: announced
            sel = build(selector_name, only(field))
        drive(sel, steps=3, pass_rates=RATES)


def test_the_settings_a_refusal_names_build_on_the_bare_pool(selector_name: str) -> None:
    need = default_requirement(selector_name)
    for key, value, _ in need.instead if need is not None else ():
        message = refused_without_a_warning(selector_name, BARE)
        assert f"{key}={value!r}" in message
        sel = build(selector_name, BARE, **{key: value})
        drive(sel, steps=3, pass_rates=RATES)


def test_every_selector_is_listed_with_what_it_requires(selector_name: str) -> None:
    need = default_requirement(selector_name)
    line = next(ln for ln in describe(selector_name, full=False).splitlines() if "requires:" in ln)
    if need is None:
        assert "nothing but rewards" in line
    else:
        assert all(f in line for f in need.fields) and "refused" in line


# ------------------------------------------------------------ configs that change the rule


@pytest.mark.parametrize(
    ("name", "overrides", "fields"),
    [
        ("bots", {"plugin": "interpolation"}, ("reference_pass_rates",)),
        ("bots", {"plugin": "kernel"}, ("features", "prompts")),
        ("bots", {"plugin": "regression"}, None),  # its anchors alone, asked for
        ("bots", {"plugin": "none"}, None),
        ("bots", {"rho": 0.0}, None),  # implicit evidence weighs nothing
        ("bots", {"candidates": 16}, None),  # candidate mode defers no plug-in but this one
        ("skip", {"plugin": "regression"}, ("features", "prompts")),
        ("skip", {"plugin": "none"}, None),
    ],
)
def test_a_setting_that_changes_what_is_read_changes_the_requirement(
    name: str, overrides: dict[str, Any], fields: tuple[str, ...] | None
) -> None:
    cls: type[Selector] = SELECTORS[name]
    need = cls.requirement(cls.config_class(**overrides))
    assert (need.fields if need is not None else None) == fields
    if need is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)  # candidate mode says so
            drive(make_selector(name, BARE, **overrides), steps=3, pass_rates=RATES)
    else:
        assert refused_without_a_warning(name, BARE, **overrides) == need.refusal(name)


def test_bots_and_pcl_are_refused_alike_on_a_pool_of_ids() -> None:
    """The issue's own case: bots was accepted with a warning while pcl refused."""
    small = TaskPool(num_tasks=3)
    for name in ("bots", "dots", "skip", "pcl", "frontier", "sec"):
        with pytest.raises(ValueError, match=rf"selector '{name}' needs .*TaskPool\.prompts"):
            make_selector(name, small)


def test_the_refusal_message_by_hand() -> None:
    need = Requires(
        ("categories", "prompts"), "arms", (("plugin", "none", "explicit evidence only"),)
    )
    assert need.refusal("x") == (
        "selector 'x' needs TaskPool.categories or TaskPool.prompts (arms): pass "
        "TaskPool(num_tasks=..., prompts=[...]) to derive it, or categories=...; or set "
        "plugin='none' (explicit evidence only)"
    )
    assert Requires(("prompts",), "judge").refusal("m") == (
        "selector 'm' needs TaskPool.prompts (judge): pass TaskPool(num_tasks=..., prompts=[...])"
    )
    assert (
        Requires(("difficulty",), "order")
        .refusal("o")
        .endswith("pass TaskPool(num_tasks=..., difficulty=...)")
    )


def test_every_row_of_the_contracts_table_is_its_selectors_requirement() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "contract.md").read_text()
    table = text[text.index("| selector (default config) |") :].split("\n\n")[0]
    listed: dict[str, tuple[str, ...]] = {}
    for row in table.splitlines()[2:]:
        names, fields, _ = (cell.strip() for cell in row.strip("|").split("|"))
        wanted = () if fields.startswith("nothing") else tuple(f.strip() for f in fields.split(","))
        for name in names.split(","):
            listed[name.strip()] = wanted
    # Every row is the class's own requirement. A selector without a row is no error
    # (`frontier selectors` prints every one); a parser that reads next to nothing is.
    assert set(listed) <= set(SELECTORS) and len(listed) > len(SELECTORS) // 2
    for name, fields in listed.items():
        need = default_requirement(name)
        assert (need.fields if need is not None else ()) == fields, name
