"""Facts a session's answers stated, kept so the simulated world stays consistent
when the turns that stated them no longer fit the world model's context.

Extraction is deliberately plain (no model, no guessing at meaning). From one
answered call it keeps:
- **entities**: every JSON object in the answer (MCP structured content or JSON
  text, an HTTP JSON body) that has an identifier (`id`, `uuid`, `key`, `slug`, or
  a `…_id` field), as `<server> <field>=<value>` → its scalar fields;
- **files written**: a call whose arguments name a path and carry its content (a
  `write_file`-like tool), a shell `echo`/`printf` redirected into a file, and the
  output of a plain `cat <file>`, as `file <path>` → the text;
- otherwise **the answer itself**, cut short, keyed by the call: an MCP tool and its
  arguments, an HTTP method and URL (with the status), a shell command, a page's URL
  (with its title).

Values are cut to `VALUE_CHARS`. A session keeps at most `limit` facts: a fact
stated again is updated (the world changed), and once the limit is reached new facts
are not kept. The oldest facts are the ones the prompt has lost; the newest are
still in the history it shows.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from calls import Call, Observation, SessionSlice

VALUE_CHARS = 240
KEY_CHARS = 160
ENTITIES_PER_ANSWER = 16
# Bounds on the work one answer costs (facts are kept on the agent's path): a longer
# answer is not parsed as JSON, and only a list's first elements are looked into.
PARSED_CHARS = 65_536
LIST_ELEMENTS = 64
# A value this long found in the prompt is shown there already (a shorter one, a
# number or a name, may be there by chance).
SHOWN_MIN_CHARS = 16
FACTS_HEADING = "## Facts stated earlier in this session (keep them true)"

_ID_FIELDS = ("id", "uuid", "key", "slug")
_PATH_ARGUMENTS = ("path", "file_path", "filepath", "filename", "file")
_CONTENT_ARGUMENTS = ("content", "contents", "text", "data", "body")
# `echo …  > file`, `printf … >> file`: one command of a `&&`/`;` chain.
_WRITE = re.compile(r"^(echo|printf)\s+(.*?)\s*(>>?)\s*([^\s<>|&;]+)$", re.DOTALL)
_CAT = re.compile(r"^cat\s+([^\s<>|&;*?]+)$")
_SEPARATORS = re.compile(r"\s*(?:&&|;|\n)\s*")


def _short(text: str, limit: int = VALUE_CHARS) -> str:
    text = " ".join(str(text)[: limit * 8].split())  # a long answer is not split whole
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if not isinstance(value, str) else value


def stated_facts(call: Call, observation: Observation) -> dict[str, str]:
    """The facts one answered call states (see the module's docstring); none for an error."""
    if observation.is_error:
        return {}
    facts = dict(_files_written(call, observation))
    entities = dict(_entities(call.server, _json_of(call, observation)))
    facts.update(entities)
    if not facts:
        answer = _answer(call, observation)
        if answer is not None:
            facts[answer[0]] = answer[1]
    return {_short(key, KEY_CHARS): _short(value) for key, value in facts.items() if value.strip()}


def _json_of(call: Call, observation: Observation) -> Any:
    structured = observation.structured
    if call.channel == "http":
        if not isinstance(structured, Mapping) or structured.get("body_encoding", "text") != "text":
            return None
        return _loads(str(structured.get("body") or ""))
    if call.channel == "mcp":
        return structured if structured is not None else _loads(observation.text)
    return None


def _loads(text: str) -> Any:
    if len(text) > PARSED_CHARS or not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _entities(server: str, value: Any) -> Iterator[tuple[str, str]]:
    found = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and found < ENTITIES_PER_ANSWER:
        item, depth = stack.pop(0)
        if isinstance(item, list) and depth < 4:
            stack.extend((element, depth + 1) for element in item[:LIST_ELEMENTS])
        elif isinstance(item, Mapping) and depth < 4:
            identifier = _identifier(item)
            if identifier is not None:
                fields = ", ".join(f"{k}={_compact(v)}" for k, v in item.items() if k != identifier and _scalar(v))
                found += 1
                yield f"{server} {identifier}={_compact(item[identifier])}", fields or "(exists)"
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (list, Mapping)))


def _identifier(item: Mapping[str, Any]) -> str | None:
    for name in (*_ID_FIELDS, *(k for k in item if isinstance(k, str) and k.endswith("_id"))):
        if name in item and isinstance(item[name], (str, int)) and str(item[name]).strip():
            return name
    return None


def _files_written(call: Call, observation: Observation) -> Iterator[tuple[str, str]]:
    arguments = call.arguments
    if call.channel == "shell":
        yield from _shell_files(str(arguments.get("command", "")), observation)
        return
    path = next((arguments[k] for k in _PATH_ARGUMENTS if isinstance(arguments.get(k), str)), None)
    content = next((arguments[k] for k in _CONTENT_ARGUMENTS if isinstance(arguments.get(k), str)), None)
    if path and content is not None and call.channel == "mcp":
        yield f"file {path}", content


def _shell_files(command: str, observation: Observation) -> Iterator[tuple[str, str]]:
    structured = observation.structured or {}
    cwd = str(structured.get("cwd") or "").rstrip("/")
    written: dict[str, str] = {}
    parts = [part for part in _SEPARATORS.split(command.strip()) if part]
    for part in parts:
        match = _WRITE.match(part)
        if match is None:
            continue
        verb, words, mode, target = match.groups()
        text = _echoed(verb, words)
        if text is None:
            continue
        path = _absolute(target, cwd)
        written[path] = written.get(path, "") + text if mode == ">>" else text
    if not written and len(parts) == 1 and (match := _CAT.match(parts[0])) and structured.get("exit_code") == 0:
        written[_absolute(match.group(1), cwd)] = str(structured.get("output") or "")
    for path, text in written.items():
        yield f"file {path}", text


def _echoed(verb: str, words: str) -> str | None:
    """What `echo`/`printf` with these words writes (without interpreting escapes)."""
    try:
        tokens = shlex.split(words)
    except ValueError:
        return None
    if verb == "echo":
        newline = "\n"
        while tokens and tokens[0] in ("-n", "-e", "-ne", "-en"):
            newline = "" if "n" in tokens.pop(0) else newline
        return " ".join(tokens) + newline
    return tokens[0].replace("\\n", "\n") if tokens else ""


def _absolute(path: str, cwd: str) -> str:
    if path.startswith(("/", "~")) or not cwd:
        return path
    return f"{cwd}/{path.removeprefix('./')}"


def _answer(call: Call, observation: Observation) -> tuple[str, str] | None:
    arguments = call.arguments
    structured = observation.structured if isinstance(observation.structured, Mapping) else {}
    if call.channel == "http":
        url = str(arguments.get("url") or f"{call.server}{arguments.get('path', '')}")
        return (
            f"{arguments.get('method', call.tool)} {url}",
            f"{structured.get('status', '')} {structured.get('body') or ''}",
        )
    if call.channel == "shell":
        output = str(structured.get("output") or "")
        return (f"$ {arguments.get('command', '')}", output) if output.strip() else None
    if call.channel == "browser":
        page, title = structured.get("url"), structured.get("title")
        return (f"page {page}", str(title or "(untitled)")) if page else None
    args = json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    if structured:  # a tool's structured answer, compact; a text tool's wrapped `{"result": …}`, the text
        only = structured.get("result") if list(structured) == ["result"] else None
        return f"{call.server}.{call.tool}({args})", only if isinstance(only, str) else _compact(dict(structured))
    return f"{call.server}.{call.tool}({args})", observation.text


@dataclass(slots=True)
class StatedFacts(SessionSlice):
    """The session's stated facts (name -> (the step that last stated it, its value)),
    shared by replicas: given back to the world model on whichever replica simulates."""

    key: ClassVar[str] = "facts"
    facts: dict[str, tuple[int, str]] = field(default_factory=dict)
    limit: int = 0  # the facts kept (0: no cap); the shared state keeps no more

    def fields(self) -> dict[str, str]:
        return {name: f"{step}\x1f{value}" for name, (step, value) in self.facts.items()}

    def merge(self, fields: Mapping[str, str]) -> None:
        for name, stored in fields.items():
            step, _, value = stored.partition("\x1f")
            self.facts[name] = (int(step) if step.isdigit() else 0, value)

    def cap(self) -> int | None:
        return self.limit or None


def keep_facts(
    kept: dict[str, tuple[int, str]], new: Mapping[str, str], *, step: int, limit: int
) -> dict[str, tuple[int, str]]:
    """Add `new` (stated at `step`) to `kept` within `limit`; returns what changed."""
    changed = {}
    for key, value in new.items():
        known = kept.get(key)
        if known is not None and known[1] == value:
            continue
        if known is None and len(kept) >= limit:
            continue  # full: the oldest facts stay (the newest are still in the shown history)
        kept[key] = changed[key] = (step, value)
    return changed


def render_facts(kept: Mapping[str, tuple[int, str]], *, shown: str = "", budget_chars: int | None = None) -> str:
    """The facts block for a prompt: facts whose value `shown` (the prompt) does not
    already carry, oldest first, within `budget_chars`; "" when there are none."""
    lines, used = [], len(FACTS_HEADING)
    shown = " ".join(shown.split())
    for key, (_, value) in sorted(kept.items(), key=lambda item: (item[1][0], item[0])):
        if len(value) >= SHOWN_MIN_CHARS and value in shown:
            continue  # the prompt's history still shows it
        line = f"- {key}: {value}"
        if budget_chars is not None and used + 1 + len(line) > budget_chars:
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join([FACTS_HEADING, *lines]) if lines else ""
