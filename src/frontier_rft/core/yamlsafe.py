"""YAML from files users hand us (config files), parsed with a size bound and no aliases.

PyYAML's safe loader builds no objects, but an alias (`*name`) repeats a whole subtree:
nine levels of nine aliases are 387 million nodes from a few hundred bytes. Config files
never need them, so an alias is an error.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_YAML_CHARS", "load_yaml"]

MAX_YAML_CHARS = 1 << 20
"""Largest config text accepted (a config file is a few hundred bytes)."""


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that refuses aliases instead of expanding them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not supported", event.start_mark
            )
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    """The YAML document in `text`; yaml.YAMLError when it is invalid, too long or uses an
    alias (the error's `problem` says which, `problem_mark` where)."""
    if len(text) > MAX_YAML_CHARS:
        raise yaml.YAMLError(f"longer than {MAX_YAML_CHARS} characters")
    return yaml.load(text, Loader=_NoAliasLoader)
