"""YAML from files users hand us (config files), parsed with a size bound and no aliases.

PyYAML's safe loader builds no objects, but an alias (`*name`) repeats a whole subtree:
nine levels of nine aliases are 387 million nodes from a few hundred bytes. Config files
never need them, so an alias is an error.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_YAML_CHARS", "MAX_YAML_DEPTH", "load_yaml"]

MAX_YAML_CHARS = 1 << 20
"""Largest config text accepted (a config file is a few hundred bytes)."""


MAX_YAML_DEPTH = 32
"""Deepest nesting accepted (PyYAML composes and constructs recursively)."""
_PLAIN = (str, int, float, bool, type(None))


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that refuses aliases instead of expanding them, and deep nesting."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not supported", event.start_mark
            )
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_plain(value: Any, where: str) -> None:
    """Only what JSON has: a date, bytes (!!binary) or set (!!set) is an error naming its key."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            stack += [(v, f"{at}.{k}" if at else str(k)) for k, v in item.items()]
            bad_keys = [k for k in item if not isinstance(k, _PLAIN)]
            if bad_keys:
                raise yaml.YAMLError(f"{at or 'top level'}: key {bad_keys[0]!r} is not plain")
        elif isinstance(item, list):
            stack += [(v, f"{at}[{i}]") for i, v in enumerate(item)]
        elif not isinstance(item, _PLAIN):
            raise yaml.YAMLError(
                f"{at or 'the document'}: a {type(item).__name__} value is not supported "
                "(use a number, string, bool, list or mapping; quote dates)"
            )


def load_yaml(text: str) -> Any:
    """The YAML document in `text`; yaml.YAMLError when it is invalid, too long, too deep,
    uses an alias or holds a value JSON could not (the error's `problem` or message says
    which, `problem_mark` where)."""
    if len(text) > MAX_YAML_CHARS:
        raise yaml.YAMLError(f"longer than {MAX_YAML_CHARS} characters")
    data = yaml.load(text, Loader=_NoAliasLoader)
    _check_plain(data, "")
    return data
