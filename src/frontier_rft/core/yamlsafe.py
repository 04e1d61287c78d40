"""YAML from users (config files and command-line KEY=VALUE overrides), parsed with a size
bound, a depth bound, no aliases and no integer longer than a config could need.

PyYAML's safe loader builds no objects, but an alias (`*name`) repeats a whole subtree:
nine levels of nine aliases are 387 million nodes from a few hundred bytes. Config files
never need them, so an alias is an error. The bounds are checked on libyaml's event
stream (C, iterative) before anything is composed, so a hostile text costs one linear
pass; the checked text is then loaded with libyaml (a 1 MiB file in well under a second;
PyYAML's pure-Python loader, the fallback without libyaml, takes seconds).
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "MAX_INT_CHARS",
    "MAX_YAML_CHARS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_VALUES",
    "RefusedYAML",
    "load_yaml",
]

MAX_YAML_CHARS = 1 << 20
"""Largest config text accepted (a config file is a few hundred bytes)."""
MAX_YAML_DEPTH = 32
"""Deepest nesting of mappings and lists accepted (configs are a level or two deep)."""
MAX_YAML_VALUES = 100_000
"""Most scalars (keys and values) accepted: PyYAML builds each in Python (~5 us), so a
1 MiB file of 500,000 one-digit list items took 4 CPU s; configs hold a few hundred."""
MAX_INT_CHARS = 100
"""Longest integer literal accepted: every count in a config fits in 20 digits, and
Python refuses to read one of over 4,300 digits with a message naming neither file nor key."""
_PLAIN = (str, int, float, bool, type(None))
_INT_TAG = "tag:yaml.org,2002:int"
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed


class RefusedYAML(yaml.MarkedYAMLError):  # type: ignore[misc]
    """Valid YAML that breaks a bound (alias, depth, length, a huge integer, a value JSON
    could not hold): an error even where invalid YAML would be read as a plain string."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(None, None, problem, mark)


class _BoundedLoader(_BASE):  # type: ignore[misc]
    """The safe loader, refusing integer literals longer than MAX_INT_CHARS (by key)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        for key_node, value_node in node.value:
            if _long_int(value_node):
                raise RefusedYAML(_long_int_problem(value_node, key_node), value_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        if _long_int(node):  # a list item (a mapping's value was named above)
            raise RefusedYAML(_long_int_problem(node, None), node.start_mark)
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor(_INT_TAG, _BoundedLoader.construct_yaml_int)


def _long_int(node: Any) -> bool:
    return (
        isinstance(node, yaml.ScalarNode)
        and node.tag == _INT_TAG
        and len(node.value) > MAX_INT_CHARS
    )


def _long_int_problem(node: Any, key_node: Any) -> str:
    key = f"key {key_node.value!r}: " if isinstance(key_node, yaml.ScalarNode) else ""
    return (
        f"{key}an integer of {len(node.value)} characters (at most {MAX_INT_CHARS}); no "
        "setting needs one so long: give the intended value, or quote it if it is a string"
    )


def _check_events(text: str) -> None:
    """RefusedYAML for an alias, nesting deeper than MAX_YAML_DEPTH or more than
    MAX_YAML_VALUES scalars, found on the event stream (iterative in libyaml) before PyYAML
    composes anything (recursively) or builds it (one Python call per node).

    libyaml has bounds of its own that it may check first, while scanning ahead (PyYAML
    6.0.4's refuses nesting deeper than 1000 with a ScannerError before the first event
    past depth 32 arrives). So that every reader gets the same answer whatever libyaml
    does, a text libyaml refuses is read again with PyYAML's pure-Python parser, which has
    no such bound: a bound of ours it breaks is the answer, else libyaml's own error."""
    try:
        _check_event_stream(text, _BASE)
    except RefusedYAML:
        raise
    except yaml.YAMLError as exc:
        if _BASE is yaml.SafeLoader:
            raise
        try:  # stops at our first bound: 0.3 s for 50,000 nested brackets
            _check_event_stream(text, yaml.SafeLoader)
        except RefusedYAML:
            raise
        except yaml.YAMLError:
            pass
        raise exc from None


def _check_event_stream(text: str, loader: Any) -> None:
    """_check_events on the events of one parser (libyaml's or the pure-Python one)."""
    depth = scalars = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.ScalarEvent):
            scalars += 1
            if scalars > MAX_YAML_VALUES:
                raise RefusedYAML(
                    f"more than {MAX_YAML_VALUES:,} keys and values; a config holds a few "
                    "hundred (pass data in a data file)",
                    event.start_mark,
                )
        elif isinstance(event, yaml.AliasEvent):
            raise RefusedYAML("aliases (*name) are not supported", event.start_mark)
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise RefusedYAML(f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_plain(value: Any, where: str) -> None:
    """Only what JSON has: a date, bytes (!!binary) or set (!!set) is an error naming its key."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            stack += [(v, f"{at}.{k}" if at else str(k)) for k, v in item.items()]
            bad_keys = [k for k in item if not isinstance(k, _PLAIN)]
            if bad_keys:
                raise RefusedYAML(f"{at or 'top level'}: key {bad_keys[0]!r} is not plain")
        elif isinstance(item, list):
            stack += [(v, f"{at}[{i}]") for i, v in enumerate(item)]
        elif not isinstance(item, _PLAIN):
            raise RefusedYAML(
                f"{at or 'the document'}: a {type(item).__name__} value is not supported "
                "(use a number, string, bool, list or mapping; quote dates)"
            )


def load_yaml(text: str) -> Any:
    """The YAML document in `text`. yaml.YAMLError when it is invalid; its subclass
    RefusedYAML when it is too long, too deep, uses an alias, holds an integer longer than
    MAX_INT_CHARS or a value JSON could not (the error's `problem` says which,
    `problem_mark` where)."""
    if len(text) > MAX_YAML_CHARS:
        raise RefusedYAML(f"longer than {MAX_YAML_CHARS} characters")
    _check_events(text)
    try:
        data = yaml.load(text, Loader=_BoundedLoader)
    except ValueError as exc:  # e.g. a float or timestamp Python cannot represent
        raise RefusedYAML(" ".join(str(exc).split())) from None
    _check_plain(data, "")
    return data
