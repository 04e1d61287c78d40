"""The SkyRL currency line's defaults are the installed SkyRL's (check-config runs where SkyRL is
not installed, so they are written down; this holds them to SkyRL's own config classes)."""

from __future__ import annotations

from typing import Any

from skyrl.train.config import SkyRLTrainConfig

from frontier_rft.integrations.preflight import dotted_get
from frontier_rft.integrations.skyrl.currency import SKYRL_DEFAULTS


def test_the_written_defaults_are_the_installed_skyrls() -> None:
    import dataclasses

    def plain(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj):
            return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return obj

    defaults = {}
    for cls_field in dataclasses.fields(SkyRLTrainConfig):
        factory = cls_field.default_factory
        if factory is not dataclasses.MISSING:
            defaults[cls_field.name] = plain(factory())
    for key, value in SKYRL_DEFAULTS.items():
        assert dotted_get(defaults, key) == value, key
