"""An HTTP call and its answer as the resource state reads them: the method, the path
(normalised: no trailing slash), the query and the JSON body of the request
(backends/http/messages.py made them the call's arguments), and the status and JSON
body of the answer (the observation's `structured` part). Anything that is not JSON
is `NOT_JSON`: the state learns nothing from it and answers nothing with it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from calls import Call, Observation

NOT_JSON: Final = object()  # a body that is absent, not JSON, binary or cut
ID_FIELDS = ("id", "_id", "uuid", "uid", "ID", "Id", "key")  # tried in this order when the API's own is not yet known
# Kept with the API (a create answer's defaults, a listing's other fields, a 404 body): beyond, not learnt.
MAX_SHAPE_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Mapping[str, Any]
    body: Any  # the JSON value sent (None: no body), or NOT_JSON

    @property
    def parent(self) -> str:
        return self.path.rsplit("/", 1)[0] or "/"

    @property
    def last(self) -> str:
        return self.path.rsplit("/", 1)[1]


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    value: Any  # the JSON value of the body, or NOT_JSON
    text: str  # the body as sent ("" when empty)
    content_type: str
    style: str  # how its JSON is written: compact, spaced or indented


def request_of(call: Call) -> Request | None:
    """The request of an HTTP call, None for another channel or a call missing its path."""
    arguments = call.arguments
    method, path = arguments.get("method", call.tool), arguments.get("path")
    if call.channel != "http" or not isinstance(method, str) or not isinstance(path, str) or not path.startswith("/"):
        return None
    body = arguments.get("body")
    if isinstance(body, str) and body:  # sent without a JSON content type, yet JSON
        body = _json(body)
    elif isinstance(body, dict) and ({"base64"} <= body.keys() or {"sha256", "size"} <= body.keys()):
        body = NOT_JSON  # binary, or cut at the record limit (backends/http/messages.request_body_value)
    query = arguments.get("query")
    return Request(method.upper(), path.rstrip("/") or "/", query if isinstance(query, dict) else {}, body)


def answer_of(observation: Observation) -> Answer | None:
    """The answer as the agent got it; None when it is not an HTTP answer, or not all of it was kept."""
    structured = observation.structured
    if not isinstance(structured, dict) or not isinstance(structured.get("status"), int) or structured.get("truncated"):
        return None
    content_type = next((str(v) for n, v in structured.get("headers") or [] if str(n).lower() == "content-type"), "")
    text = structured.get("body") if structured.get("body_encoding", "text") == "text" else None
    if not isinstance(text, str):
        return None
    value = _json(text) if text.strip() else NOT_JSON
    return Answer(structured["status"], value, text, content_type, style_of(text))


def id_of(resource: Any, id_field: str | None) -> tuple[str, str] | None:
    """(the id field, the id as a path segment) of a JSON object, None when it has none."""
    if not isinstance(resource, dict):
        return None
    for name in (id_field,) if id_field else ID_FIELDS:
        value = resource.get(name)
        if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value):
            return name, str(value)
    return None


def style_of(text: str) -> str:
    if "\n" in text.strip():
        return "indented"
    return "spaced" if '": ' in text or ", " in text else "compact"


def dumps(value: Any, style: str) -> str:
    """JSON written as the API writes it."""
    if style == "indented":
        return json.dumps(value, ensure_ascii=False, indent=2)
    if style == "compact":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False)


def small(value: Any) -> bool:
    """Whether a shape is small enough to keep with the API."""
    return len(json.dumps(value, ensure_ascii=False)) <= MAX_SHAPE_CHARS


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return NOT_JSON
