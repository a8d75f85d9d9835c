"""Where in the config file a key is: every key path of the YAML document mapped to
its line, so that a problem found after parsing (a pydantic error, a bad rule) is
reported at `file:line`."""

from __future__ import annotations

from typing import Any

import yaml


def split_key(key: str) -> tuple[str, ...]:
    # "match.arguments.a.b" -> ("match", "arguments", "a.b"): argument paths stay whole.
    parts = key.split(".")
    if parts[:2] == ["match", "arguments"] and len(parts) > 2:
        return ("match", "arguments", ".".join(parts[2:]))
    return tuple(parts)


def line_index(node: yaml.Node | None, loc: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], int]:
    """Map every key path in the document to its 1-based line."""
    lines: dict[tuple[Any, ...], int] = {}
    if node is None:
        return lines
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*loc, key_node.value)
            lines.update(line_index(value_node, child))
            lines[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(line_index(item, (*loc, i)))
    return lines


def line_for(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1
