"""The defaults the docs state are the code's: read from the config classes, never a literal."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from frontier_rft.integrations.trl.config import FrontierConfig
from frontier_rft.integrations.verl.config import VerlSamplerConfig

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _shown(value: object) -> str:
    """A default as the docs' tables write it: strings in double quotes, None, True, 16."""
    return json.dumps(value) if isinstance(value, str) else str(value)


def _same(cell: str, value: object) -> bool:
    """Whether a table's default cell states `value` (numbers compared as numbers: 1e-5)."""
    if isinstance(value, float):
        return float(cell) == value
    return cell == _shown(value)


def _table_defaults(page: str, heading: str) -> dict[str, str]:
    """field -> default cell of the `| field | default | meaning |` table under `heading`."""
    section = page.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", section, flags=re.M)
    return dict(rows)


def test_the_trl_frontierconfig_table_states_the_codes_defaults() -> None:
    documented = _table_defaults(
        (DOCS / "integrations" / "trl.md").read_text(), "## `FrontierConfig`"
    )
    fields = {
        f.name: f.default for f in dataclasses.fields(FrontierConfig) if not f.name.startswith("_")
    }
    assert documented["selector"] == _shown(FrontierConfig().selector)
    for name, default in documented.items():
        assert name in fields, f"trl.md documents a FrontierConfig field {name!r} it lacks"
        if fields[name] is not dataclasses.MISSING:
            assert _same(default, fields[name]), (name, default, fields[name])


def test_the_pages_name_the_adapters_default_selector() -> None:
    """Every 'the default `X`' / "adapters' default is `X`" names the code's default."""
    default = FrontierConfig().selector
    assert VerlSamplerConfig(batch_size=1).selector == default  # verl and SkyRL share it
    said = re.compile(r"default(?:'s| is|,)? `(\w+)`")
    for page in (DOCS / "integrations" / "trl.md", DOCS / "results" / "coverage.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())  # sentences across lines
        named = said.findall(text)
        assert named and set(named) == {default}, (page.name, named)
