"""Observations in canonical form per channel, for comparison.

A form has an outcome (facts compared first: success vs error, the HTTP status,
the content type, the exit code) and sections (compared as JSON trees, each
with a weight in the score):

- mcp: `result` (structured content, else the text parsed as JSON, else the text)
  and `blocks` (non-text content: type, MIME type, digest);
- http: `body` (JSON as its value, else text) and `headers` (lower-cased names,
  hop-by-hop headers left out);
- shell: `screen` (the output), `cwd`;
- browser: `url` (scheme and host, path, query parameters), `title`, `snapshot`
  (element refs renumbered in order of appearance: the numbering is the
  browser's, not the page's).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from calls import Observation

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "content-encoding", "content-length"}
)
_REF = re.compile(r"\[ref=(?:f\d+)?e\d+\]")
_TRIM_NOTE = re.compile(r"\n- note: snapshot trimmed: .*\Z")
_SHELL_STATUS = re.compile(r"\[(?:timed out; output so far above, )?exit code (\w+), cwd (.*)\]\s*\Z")

SECTION_WEIGHTS: dict[str, dict[str, float]] = {
    "mcp": {"result": 1.0, "blocks": 1.0},
    "http": {"body": 0.85, "headers": 0.15},
    "shell": {"screen": 0.7, "cwd": 0.3},
    "browser": {"url": 0.3, "title": 0.1, "snapshot": 0.6},
}
# Outcome facts compared after the status ones; together one section of this weight.
OUTCOME_WEIGHT = 0.5


@dataclass(slots=True)
class Fact:
    value: Any
    kind: str  # what a difference in it is: "status" or "structure"


@dataclass(slots=True)
class Form:
    outcome: dict[str, Fact]
    sections: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def channel_of(observation: Observation) -> str:
    """The channel an observation's shape says it is from (for callers without a call)."""
    structured = observation.structured
    if isinstance(structured, dict):
        if "status" in structured and "body_encoding" in structured:
            return "http"
        if "exit_code" in structured and "output" in structured:
            return "shell"
        if "snapshot" in structured and "url" in structured:
            return "browser"
    return "mcp"


def canonical(observation: Observation, channel: str) -> Form:
    if channel == "http":
        if isinstance(observation.structured, dict) and "status" in observation.structured:
            return _http(observation)
        return _unstructured(observation, "status_class", "body")  # simroute's own error, a model failure
    if channel == "shell":
        return _shell(observation)
    if channel == "browser":
        if isinstance(observation.structured, dict):
            return _browser(observation)
        return _unstructured(observation, "error", "snapshot")
    return _mcp(observation)


def _unstructured(observation: Observation, outcome: str, section: str) -> Form:
    """An observation without its channel's structure: its error flag is the
    outcome (an error against any real answer is a status difference), its text
    the one section."""
    value: Any = observation.is_error if outcome == "error" else ("error" if observation.is_error else "unknown")
    return Form(
        {outcome: Fact(value, "status")},
        {section: parse_json_text(observation.text)},
        [f"one side has no {section} structure"],
    )


def _mcp(observation: Observation) -> Form:
    result: Any = observation.structured
    if result is None:
        result = parse_json_text(observation.text)
    blocks = [_block(block) for block in observation.content if block.get("type") != "text"]
    sections = {"result": result, **({"blocks": blocks} if blocks else {})}
    return Form({"error": Fact(observation.is_error, "status")}, sections)


def _block(block: dict[str, Any]) -> dict[str, Any]:
    data = block.get("data") or block.get("blob") or block.get("resource") or ""
    payload = json.dumps(data, sort_keys=True, default=str) if not isinstance(data, str) else data
    return {
        "type": block.get("type"),
        "mime_type": block.get("mimeType") or block.get("mime_type"),
        "sha256": hashlib.sha256(payload.encode()).hexdigest()[:16],
    }


def parse_json_text(text: str) -> Any:
    """JSON text as its value, other text as it is."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


def _http(observation: Observation) -> Form:
    structured = observation.structured or {}
    status = int(structured.get("status") or 0)
    headers: dict[str, str] = {}
    for name, value in structured.get("headers") or []:
        name = str(name).lower()
        if name not in _HOP_BY_HOP and not name.startswith("x-simroute-"):
            headers[name] = f"{headers[name]}, {value}" if name in headers else str(value)
    content_type = headers.pop("content-type", "").split(";")[0].strip().lower()
    body: Any = structured.get("body")
    encoding = structured.get("body_encoding")
    if encoding == "text" and isinstance(body, str):
        body = parse_json_text(body)
    elif encoding in ("base64", "none"):
        digest = structured.get("body_sha256") or hashlib.sha256(str(body).encode()).hexdigest()
        body = {"binary_sha256": digest[:16], "size": structured.get("body_size")}
    outcome = {
        "status_class": Fact(status // 100, "status"),
        "status": Fact(status, "structure"),
        "content_type": Fact(content_type, "structure"),
    }
    return Form(outcome, {"body": body, "headers": headers})


def _shell(observation: Observation) -> Form:
    data = observation.structured if isinstance(observation.structured, dict) else None
    if data is None:  # no structured part: read the status line the text ends with
        match = _SHELL_STATUS.search(observation.text)
        exit_code = int(match[1]) if match and match[1].isdigit() else None
        cwd = match[2] if match and match[2] != "unknown" else None
        data = {
            "output": observation.text[: match.start()] if match else observation.text,
            "exit_code": exit_code,
            "cwd": cwd,
        }
    exit_code = data.get("exit_code")
    outcome: dict[str, Fact] = {
        "error": Fact(observation.is_error, "status"),
        "timed_out": Fact(bool(data.get("timed_out")), "status"),
    }
    notes = []
    if exit_code is None:
        notes.append("exit code unknown on one side: not compared")
        outcome["exit_code"] = Fact(None, "structure")
    else:
        outcome["succeeded"] = Fact(exit_code == 0, "status")
        outcome["exit_code"] = Fact(exit_code, "structure")
    return Form(outcome, {"screen": str(data.get("output") or "").rstrip("\n"), "cwd": data.get("cwd")}, notes)


def _browser(observation: Observation) -> Form:
    data = observation.structured or {}
    snapshot = data.get("snapshot")
    if isinstance(snapshot, str):
        snapshot = renumber_refs(_TRIM_NOTE.sub("", snapshot))
    sections = {"url": url_parts(data.get("url")), "title": data.get("title"), "snapshot": snapshot}
    return Form({"error": Fact(bool(data.get("error")) or observation.is_error, "status")}, sections)


def renumber_refs(snapshot: str) -> str:
    """Element refs numbered in order of appearance (`[ref=e1]`, `[ref=e2]`, …)."""
    counter = iter(range(1, 1 << 30))
    return _REF.sub(lambda _: f"[ref=e{next(counter)}]", snapshot)


def url_parts(url: Any) -> Any:
    if not isinstance(url, str):
        return url
    parts = urlsplit(url)
    origin = f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}"
    return {"origin": origin, "path": parts.path or "/", "query": dict(parse_qsl(parts.query, keep_blank_values=True))}
