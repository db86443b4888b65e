"""YAML as fwdoctor reads it (the KB, stack files): safe, and strict about duplicate keys.

PyYAML's safe loaders keep the last of two equal keys without a word, so a stack file with
`torch: "2.9.1"` twice, or a KB row with two `cuda:` values, silently means something other
than what its author sees. Here a repeated key is a yaml.constructor.ConstructorError (a
YAMLError) that names the key and both lines; callers report it like any other YAML error.
"""

from __future__ import annotations

from typing import Any

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~20x faster; both are safe


class StrictLoader(_BASE):  # type: ignore[misc, valid-type]
    """A safe loader that refuses a mapping holding the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first at line {first.start_mark.line + 1})", key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
