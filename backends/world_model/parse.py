"""Reading a world model's answer: drop the thinking, take the prediction."""

from __future__ import annotations

import json
import re
from typing import Any

from jsonschema import Draft202012Validator

from backends.world_model.model_runner import WorldModelError

OPEN_TAG = "<predicted_observation>"
CLOSE_TAG = "</predicted_observation>"
MARKER = "**Environment Observation:**"
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class EmptyPrediction(WorldModelError):
    """The model's answer held no observation (its budget may have gone to thinking)."""


class InvalidPrediction(WorldModelError):
    """The model's answer is not what the domain expects (not JSON, not an HTTP
    response, not matching the tool's output schema); the simulator asks again once."""


def drop_thinking(text: str) -> str:
    text = _THINK_BLOCK.sub("", text)
    if "</think>" in text:  # an orphan close: the thinking started before the text did
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:  # an unclosed open: the budget ran out while thinking
        text = text.split("<think>", 1)[0]
    return text


def parse_prediction(text: str) -> str:
    """The predicted observation in a model's raw answer. Raises EmptyPrediction."""
    text = drop_thinking(text)
    if OPEN_TAG in text:
        text = text.rsplit(OPEN_TAG, 1)[1]
        text = text.split(CLOSE_TAG, 1)[0]
    else:
        text = text.replace(CLOSE_TAG, "")
    text = text.strip()
    if text.startswith(MARKER):
        text = text[len(MARKER) :].strip()
    if not text:
        raise EmptyPrediction("the world model's answer held no observation (its budget may have gone to thinking)")
    return text


def parse_json_prediction(text: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON object from a prediction, validated against `schema`. Raises InvalidPrediction."""
    value = _first_json_object(parse_prediction(text))
    if value is None:
        raise InvalidPrediction("the world model's answer is not a JSON object")
    if schema:
        error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise InvalidPrediction(
                f"the predicted result does not match the tool's output schema: {where}: {error.message}"
            )
    return value


def _first_json_object(text: str) -> dict[str, Any] | None:
    candidates = [m.group(1) for m in _JSON_FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    return None
