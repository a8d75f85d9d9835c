"""One value put in place of another throughout an observation: how a recording made
for another value of an echoed argument is replayed (policies/learned/echoes.py
decides when; backends/replay.py serves it)."""

from __future__ import annotations

import json
from dataclasses import replace

from calls import Observation


def json_escaped(value: str) -> str:
    """`value` as it appears inside a JSON string."""
    return json.dumps(value, ensure_ascii=False)[1:-1]


def substituted(observation: Observation, recorded: str, value: str) -> Observation:
    """`observation` with every occurrence of `recorded` replaced by `value`."""
    text = json.dumps([observation.content, observation.structured], ensure_ascii=False)
    content, structured = json.loads(text.replace(json_escaped(recorded), json_escaped(value)))
    return replace(observation, content=content, structured=structured)  # the rest (provenance, source…) as it was
