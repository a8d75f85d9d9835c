"""Canonical forms of calls: the key that replay matches on (`call_key`), the key
all calls of one tool share (`tool_key`: the stores count and index by it), and the
digest of an upstream's tool definitions (`snapshot_digest`, for tool pins).

Two calls that differ only in key order or in configured ignored argument
paths have the same key.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any


def drop_paths(arguments: dict[str, Any], ignored: Iterable[str]) -> dict[str, Any]:
    """A copy of `arguments` without the dotted paths in `ignored`; a `*` step
    stands for every element of a list (`items.*.id`)."""
    ignored = list(ignored)
    if not ignored:
        return arguments
    result = copy.deepcopy(arguments)
    for path in ignored:
        _drop(result, path.split("."))
    return result


def _drop(node: Any, steps: list[str]) -> None:
    step, rest = steps[0], steps[1:]
    if step == "*" and isinstance(node, list):
        children = node
    elif isinstance(node, dict) and step in node:
        if not rest:
            del node[step]
            return
        children = [node[step]]
    else:
        return
    if rest:
        for child in children:
            _drop(child, rest)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_key(channel: str, server: str, tool: str, arguments: dict[str, Any], ignored: Iterable[str] = ()) -> str:
    """A stable digest of (channel, server, tool, canonical arguments)."""
    body = canonical_json([channel, server, tool, drop_paths(arguments, ignored)])
    return hashlib.sha256(body.encode()).hexdigest()[:32]


@lru_cache(maxsize=4096)  # a few tools, asked on every record write
def tool_key(channel: str, server: str, tool: str) -> str:
    """A stable digest of (channel, server, tool): all calls of one tool."""
    return hashlib.sha256(canonical_json([channel, server, tool]).encode()).hexdigest()[:32]


def snapshot_digest(tools: list[dict[str, Any]]) -> tuple[str, str]:
    """(canonical JSON, short digest) of an upstream's tool definitions."""
    body = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
    return body, hashlib.sha256(body.encode()).hexdigest()[:16]
