"""One well-formedness checker per channel: is an observation the right shape
for what the agent expects? Shared by the simulator (a malformed prediction is
asked for once more), the tests and the fidelity benchmark.

A checker returns None when the observation is well-formed, else the reason.
It judges the shape only, never the provenance or the truth of the content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator

from calls import Observation

# Prompt scaffolding an answer must never carry: turn headings, the action and
# observation labels, the answer tags, tool definitions echoed back.
_SCAFFOLDING = re.compile(
    r"### Turn \d|\*\*Action:\*\*|\*\*Environment Observation:\*\*|</?predicted_observation>|\"inputSchema\"\s*:|"
    r"\(A real [a-zA-Z ]+ in another session"
)
# What a small model writes when it describes the answer instead of giving it.
_COMMENTARY = re.compile(
    r"\s*(?:The|This|Here is the|Here's the) (?:real |actual |tool's |server's "
    r")?(?:server|tool|observ\w*|result|output|response)\b",
    re.IGNORECASE,
)
_REF = re.compile(r"\[ref=e\d+\]")
# A markdown code fence alone on a line: what a small model writes when it copies
# the prompt's layout instead of predicting the terminal.
_FENCE_LINE = re.compile(r"^\s*```[\w-]*\s*$")
# A small model talking about its answer instead of giving it ("This is the expected
# output for the action …"): judged only beside fences, where a file's prose is unlikely.
_SCREEN_COMMENTARY = re.compile(r"(?i)\b(?:the|this) (?:expected |actual |real )?(?:output|observation|action)\b")
# The action's own layout echoed back as output: the keystrokes array of the prompt.
_KEYSTROKES = re.compile(r'"keystrokes"\s*:')


def check(
    channel: str, observation: Observation, *, schema: dict[str, Any] | None = None, json_body: bool = False
) -> str | None:
    if channel == "mcp":
        return check_mcp(observation, schema=schema)
    if channel == "shell":
        return check_terminal(observation)
    if channel == "http":
        return check_http(observation, json_body=json_body)
    if channel == "browser":
        return check_web(observation)
    return f"no checker for the {channel!r} channel"


def check_mcp(
    observation: Observation, *, schema: dict[str, Any] | None = None, recorded: Sequence[str] = ()
) -> str | None:
    """A tool result: text content without prompt scaffolding; with an output
    schema and no error, structured content matching it. With the tool's `recorded`
    real answers, a text that talks about the server or its answer ("The server
    returns …") where none of them does is commentary, not an answer."""
    text = observation.text
    if not text.strip():
        return "empty result"
    if scaffolding := _SCAFFOLDING.search(text):
        return f"prompt scaffolding in the result: {scaffolding.group(0)!r}"
    if recorded and _COMMENTARY.match(text) and not any(_COMMENTARY.match(answer) for answer in recorded):
        return f"commentary instead of the tool's answer: {text[:60]!r}"
    if observation.is_error or schema is None:
        return None
    if observation.structured is None:
        return "no structured content for a tool with an output schema"
    error = next(iter(Draft202012Validator(schema).iter_errors(observation.structured)), None)
    if error is not None:
        return f"structured content does not match the output schema: {error.message}"
    return None


def check_terminal(observation: Observation) -> str | None:
    """A shell result: an integer exit code and a working directory (read from
    the prompt line that ends the screen)."""
    structured = observation.structured or {}
    if not isinstance(structured.get("exit_code"), int):
        return f"no integer exit code (got {structured.get('exit_code')!r})"
    cwd = structured.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith(("/", "~")):
        return f"no working directory (got {cwd!r})"
    output = str(structured.get("output", ""))
    if _SCAFFOLDING.search(output) or _KEYSTROKES.search(output):
        return "prompt scaffolding in the output"
    return degenerate_screen(output)


def degenerate_screen(output: str) -> str | None:
    """Output no program prints: mostly bare code fences, or fences with talk about
    the answer. A real file may hold a fence or two (a README); a screen whose lines
    are half fences is the model repeating the prompt's markup."""
    lines = [line for line in output.splitlines() if line.strip()]
    fences = sum(1 for line in lines if _FENCE_LINE.match(line))
    if lines and fences == len(lines):
        return "code fences instead of output"
    if fences >= 2 and fences * 2 >= len(lines):
        return f"code fences instead of output ({fences} of {len(lines)} lines)"
    if fences >= 2 and (talk := _SCREEN_COMMENTARY.search(output)):
        return f"commentary instead of output: {talk.group(0)!r} beside code fences"
    return None


def check_http(observation: Observation, *, json_body: bool = False) -> str | None:
    """An HTTP response: a status, headers, a body; JSON when the route answers JSON.
    simroute's own 502 for an answer that was not HTTP is malformed."""
    structured = observation.structured or {}
    status = structured.get("status")
    if not isinstance(status, int) or not 100 <= status <= 599:
        return f"no HTTP status (got {status!r})"
    if "not an HTTP response" in str(structured.get("body", "")) and status == 502:
        return "the world model's answer was not an HTTP response"
    if not isinstance(structured.get("headers", []), list):
        return "headers are not a list"
    if json_body:
        try:
            json.loads(str(structured.get("body") or ""))
        except ValueError:
            return "the body is not JSON (the route's recorded answers are)"
    if _SCAFFOLDING.search(str(structured.get("body", ""))):
        return "prompt scaffolding in the body"
    return None


def check_web(observation: Observation) -> str | None:
    """A browser result: a page URL, a title and an aria snapshot with [ref=eN]
    markers; or an error page (a refusal, a closed browser)."""
    structured = observation.structured or {}
    if observation.is_error:
        return None if observation.text.strip() else "empty error"
    if structured.get("snapshot") is None and structured.get("url") is None:
        return None  # no page open (after browser_close): the real tools say so too
    url = structured.get("url")
    if not isinstance(url, str) or url in ("", "unknown") or ":" not in url:
        return f"no page URL (got {url!r})"
    if not isinstance(structured.get("title"), str):
        return "no page title"
    if not _REF.search(str(structured.get("snapshot") or "")):
        return "no [ref=eN] marker in the snapshot"
    return None
