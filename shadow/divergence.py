"""How far a simulated observation is from the real one: 0 (same) to 1 (unrelated).

First cut, without a noise model: the status class (error or not) must match;
structured (JSON) observations are compared leaf by leaf; text by edit
similarity.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from router.types import Observation
from shadow.http_canonical import comparable_response, is_http_response


def divergence(real: Observation, simulated: Observation) -> float:
    if real.is_error != simulated.is_error:
        return 1.0  # success vs error is the one difference no content can make up for
    real_json = _as_json(real)
    sim_json = _as_json(simulated)
    if real_json is not None and sim_json is not None:
        return json_divergence(real_json, sim_json)
    return text_divergence(real.text, simulated.text)


def text_divergence(a: str, b: str) -> float:
    if a == b:
        return 0.0
    return round(1.0 - difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4)


def json_divergence(a: Any, b: Any) -> float:
    """Mean per-leaf disagreement over the union of leaf paths: a missing leaf or
    a type change counts 1, a different value of the same type counts 0.5."""
    left, right = dict(_leaves(a)), dict(_leaves(b))
    paths = left.keys() | right.keys()
    if not paths:
        return 0.0
    total = 0.0
    for path in paths:
        if path not in left or path not in right:
            total += 1.0
        elif left[path] != right[path]:
            total += 0.5 if type(left[path]) is type(right[path]) else 1.0
    return round(total / len(paths), 4)


def _as_json(observation: Observation) -> Any:
    if is_http_response(observation.structured):
        return comparable_response(observation.structured)  # type: ignore[arg-type]
    if observation.structured is not None:
        return observation.structured
    text = observation.text.strip()
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            return None
    return None


def _leaves(value: Any, path: str = "$"):
    if isinstance(value, dict):
        if not value:
            yield path, {}
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}")
    elif isinstance(value, list):
        if not value:
            yield path, []
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}[{index}]")
    else:
        yield path, value
