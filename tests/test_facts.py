"""Every registered selector declares its facts on its class, and the registry holds it.

A new selector is its module in `frontier_rft.selectors`, its line in that package's list
and its test: the registry, the CLI, the figures, the overhead benchmark, the simulator and
the contract tests read its class (tests/test_new_selector.py runs one through them all).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import numpy as np
import pytest

import frontier_rft.selectors as selectors_package
from frontier_rft import SELECTORS, Selector, TaskPool, make_selector
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.facts import COST_KINDS, Cost, Needs
from frontier_rft.selectors import register
from frontier_rft.selectors.registry import _check_facts
from helpers import registered

HEX = re.compile(r"#[0-9a-fA-F]{6}")
EVIDENCE_KEY = re.compile(r"evidence/[a-z_]+/[a-z_]+")


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_every_selector_declares_valid_facts(name: str) -> None:
    cls = SELECTORS[name]
    assert cls.name == name
    assert isinstance(cls.needs, Needs)
    assert cls.needs.uses and cls.needs.from_prompts and cls.needs.richer
    assert isinstance(cls.needs.evidence, tuple)
    for key in cls.needs.evidence:
        assert EVIDENCE_KEY.fullmatch(key), f"{name}: malformed evidence key {key!r}"
    assert len(set(cls.needs.evidence)) == len(cls.needs.evidence), name
    assert isinstance(cls.cost, Cost) and cls.cost.kind in COST_KINDS, cls.cost
    assert cls.cost.big_o.startswith("O("), cls.cost
    assert HEX.fullmatch(cls.color), f"{name}: color {cls.color!r} is not '#rrggbb'"
    assert cls.linestyle in ("-", "--", "-.", ":"), cls.linestyle
    for config in cls.test_configs:  # each is a valid config of this selector
        assert isinstance(config, dict) and config, f"{name}: empty test config"
        config_from_dict(cls.config_class, config, what=name)
    collaborators = cls.default_collaborators()
    assert set(collaborators) <= set(cls.collaborators), name


def test_colours_are_distinct() -> None:
    colours = [cls.color.lower() for cls in SELECTORS.values()]
    assert len(set(colours)) == len(colours), colours


def test_default_collaborators_use_the_rollouts_they_are_given() -> None:
    calls: list[tuple[list[int], int]] = []

    def rollout(ids: np.ndarray, n: int) -> np.ndarray:
        calls.append((ids.tolist(), n))
        return np.repeat(np.where(ids % 2 == 0, 1.0, 0.0), n)

    estimator = SELECTORS["adcl"].default_collaborators(rollout)["estimator"]
    assert estimator(np.array([2, 3])).tolist() == [1.0, 0.0] and calls == [([2, 3], 4)]
    assert SELECTORS["adcl"].default_collaborators() == {}  # no rollouts, no estimator


def _defined_selectors() -> dict[str, type[Selector]]:
    """Concrete Selector subclasses with their own name, in every module of the package."""
    found: dict[str, type[Selector]] = {}
    prefix = f"{selectors_package.__name__}."
    for info in pkgutil.walk_packages(selectors_package.__path__, prefix=prefix):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Selector)
                and obj.__module__ == module.__name__
                and "name" in obj.__dict__
                and not inspect.isabstract(obj)
            ):
                found[obj.name] = obj
    return found


def test_the_package_lists_every_selector_it_defines() -> None:
    """A selector module whose class is missing from `selectors.ALL` fails here, by name."""
    listed = {cls.name: cls for cls in selectors_package.ALL}
    assert _defined_selectors() == listed == SELECTORS
    for cls in SELECTORS.values():
        assert cls.__module__.startswith(f"{selectors_package.__name__}."), cls


def test_registry_order_is_the_baseline_then_by_name() -> None:
    names = list(SELECTORS)
    assert names[0] == "uniform" and names[1:] == sorted(names[1:])


def test_a_selector_missing_a_fact_is_named_at_registration() -> None:
    class Colourless(SELECTORS["uniform"]):  # type: ignore[misc,valid-type]
        name = "colourless"

    bare = type("NoFacts", (Selector,), {"name": "nofacts"})
    with pytest.raises(TypeError, match=r"NoFacts \('nofacts'\) declares no needs, cost, color"):
        _check_facts(bare)
    _check_facts(Colourless)  # inherited facts are facts
    Colourless.color = "blue"
    with pytest.raises(TypeError, match="Colourless: color must be '#rrggbb'"):
        _check_facts(Colourless)


class ThrowawaySelector(SELECTORS["uniform"]):  # type: ignore[misc,valid-type]
    """A new selector: nothing but this class."""

    name = "throwaway"
    needs = Needs("nothing", "nothing to derive", "nothing")
    cost = Cost("sublinear", "O(B)")
    color = "#123456"


def test_a_registered_selector_is_listed_after_the_packages_own() -> None:
    with registered(ThrowawaySelector):
        assert list(SELECTORS) == [cls.name for cls in selectors_package.ALL] + ["throwaway"]
        assert make_selector("throwaway", TaskPool(num_tasks=4)).select(2).shape == (2,)
    assert "throwaway" not in SELECTORS


def test_registration_refuses_a_taken_name_a_missing_fact_or_an_abstract_class() -> None:
    twin = type("Twin", (ThrowawaySelector,), {"name": "uniform"})
    with pytest.raises(
        TypeError, match="'uniform' is registered twice: by UniformSelector and Twin"
    ):
        register(twin)
    with pytest.raises(TypeError, match=r"'dapo' is retired: .*DynamicSampling"):
        register(type("Dapo", (ThrowawaySelector,), {"name": "dapo"}))
    colourless = type("Colourless", (Selector,), {"name": "colourless"})
    with pytest.raises(TypeError, match="concrete Selector subclass"):
        register(colourless)  # abstract: no _select, _observe, ...
    with pytest.raises(TypeError, match="declares no name of its own"):
        register(type("Nameless", (ThrowawaySelector,), {}))
    hooks = ("_select", "_observe", "_state_dict", "_load_state_dict")
    bare = type(
        "Bare", (Selector,), {"name": "bare"} | {h: getattr(ThrowawaySelector, h) for h in hooks}
    )
    with pytest.raises(TypeError, match=r"Bare \('bare'\) declares no needs, cost, color"):
        register(bare)
    assert list(SELECTORS) == [cls.name for cls in selectors_package.ALL]  # nothing half-added
