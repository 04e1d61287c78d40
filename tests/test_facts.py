"""Every registered selector declares its facts on its class, and the registry finds it.

A new selector is its module in `frontier_rft.selectors` and its test: the registry, the CLI,
the figures, the overhead benchmark, the simulator and the contract tests read its class.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frontier_rft.selectors as selectors_package
from frontier_rft import SELECTORS, Selector
from frontier_rft.core.config import config_from_dict
from frontier_rft.core.facts import COST_KINDS, Cost, Needs
from frontier_rft.selectors import registry
from frontier_rft.selectors.registry import _check_facts

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
    """Concrete Selector subclasses with their own name, module by module of the package."""
    found: dict[str, type[Selector]] = {}
    for info in pkgutil.iter_modules(selectors_package.__path__):
        module = importlib.import_module(f"{selectors_package.__name__}.{info.name}")
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


def test_registry_holds_exactly_the_selectors_its_package_defines() -> None:
    assert _defined_selectors() == SELECTORS
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


NEW_SELECTOR = '''
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.selectors.uniform import UniformSelector


class ThrowawaySelector(UniformSelector):
    """A new selector: nothing but this module."""

    name = "throwaway"
    needs = Needs("nothing", "nothing to derive", "nothing")
    cost = Cost("sublinear", "O(B)")
    color = "#123456"
'''


def _discover_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> Any:
    """The registry's discovery with one more module, `throwaway`, in the selectors package."""
    (tmp_path / "throwaway.py").write_text(source, encoding="utf-8")
    monkeypatch.setattr(selectors_package, "__path__", [*selectors_package.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "frontier_rft.selectors.throwaway", raising=False)
    try:
        return registry._discover()
    finally:
        sys.modules.pop("frontier_rft.selectors.throwaway", None)


def test_a_new_module_is_registered_and_discovered_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _discover_with(tmp_path, monkeypatch, NEW_SELECTOR)
    assert list(found) == [*SELECTORS, "throwaway"][:1] + sorted(
        [*list(SELECTORS)[1:], "throwaway"]
    )
    assert found["throwaway"].__name__ == "ThrowawaySelector"
    assert "throwaway" not in SELECTORS  # the real registry is untouched


def test_a_new_module_without_its_colour_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = """
from frontier_rft.core.facts import Cost, Needs
from frontier_rft.core.selector import Selector


class ThrowawaySelector(Selector):
    name = "throwaway"
    needs = Needs("nothing", "nothing to derive", "nothing")
    cost = Cost("sublinear", "O(B)")

    def _select(self, n): ...
    def _observe(self, batch): ...
    def _state_dict(self): ...
    def _load_state_dict(self, state): ...
"""
    with pytest.raises(TypeError, match=r"ThrowawaySelector \('throwaway'\) declares no color"):
        _discover_with(tmp_path, monkeypatch, source)
