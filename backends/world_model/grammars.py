"""Generation grammars (GBNF, llama.cpp's grammar language) that make a
prediction well-formed for its channel by construction.

Each builder returns grammar text for the generated part of the answer (after
the observation marker the model runner prefills). Bounds are in bytes of printable
ASCII where the answer must end inside `max_tokens`: a token is at least one
byte, so N bytes never take more than N tokens, and the grammar forces the
closing structure (a terminal's prompt line) before the budget runs out.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

# Printable ASCII and tab: one byte each, so a byte bound is a token bound.
_TEXT_CHAR = r"[ -~\t]"
# What a prediction never contains: the prompt's own scaffolding.
STOP_SEQUENCES = [
    "### Turn",
    "**Action:**",
    "<predicted_observation>",
    "</predicted_observation>",
    "**Environment Observation:**",
]


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _bytes(text: str) -> int:
    return len(text.encode())


def terminal_grammar(*, command: str, user: str, host: str, max_tokens: int) -> str:
    """The screen after `command`: its echo, bounded output, then the prompt line
    `[<exit code>] user@host:<cwd>$` — forced within `max_tokens`."""
    echo = command.rstrip("\n")
    prompt_head = f"] {user}@{host}:"
    # The echo and the longest prompt line come out of the budget first.
    cwd_max = 60
    reserved = _bytes(echo) + 1 + 1 + 3 + _bytes(prompt_head) + 1 + cwd_max + 1
    output_bytes = max(0, min(4000, max_tokens - reserved - 4))
    if _bytes(echo) + 1 + 1 + 3 + _bytes(prompt_head) + 2 > max_tokens:
        echo_rule = ""  # a command too long to echo within the budget: the prompt line still fits
    else:
        echo_rule = literal(echo + "\n") + " "
    cwd_bytes = max(0, min(cwd_max, max_tokens - (_bytes(echo) + 8 + _bytes(prompt_head)) - output_bytes))
    return (
        "\n".join(
            [
                f"root ::= {echo_rule}output prompt",
                f'output ::= ({_TEXT_CHAR[:-1]}\\n]{{0,{output_bytes}}} "\\n")?' if output_bytes else 'output ::= ""',
                f'prompt ::= "[" code {literal(prompt_head)} cwd "$"',
                "code ::= [0-9] | [1-9] [0-9] | [1-2] [0-9] [0-9]",
                f"cwd ::= [/~] [a-zA-Z0-9._/~+@-]{{0,{max(0, cwd_bytes - 1)}}}",
            ]
        )
        + "\n"
    )


def http_grammar(*, max_tokens: int, body_schema: dict[str, Any] | None = None, json_body: bool = False) -> str:
    """A raw HTTP response: status line, headers, a blank line, a body. With
    `body_schema` (inferred from the route's recorded JSON answers) the body is
    JSON of that shape; with `json_body` any JSON object or array."""
    headers = max(2, min(10, max_tokens // 40))
    rules = [
        'root ::= "HTTP/1.1 " status " " reason "\\n" header{0,' + str(headers) + '} "\\n" body',
        "status ::= [1-5] [0-9] [0-9]",
        "reason ::= [A-Za-z] [A-Za-z -]{0,30}",
        'header ::= [A-Za-z] [A-Za-z0-9-]{0,30} ": " [!-~] [ -~]{0,80} "\\n"',
    ]
    if body_schema is not None or json_body:
        gbnf = _schema_rules(body_schema if body_schema is not None else {"type": ["object", "array"]})
        rules.append("body ::= json-root")
        rules.append(gbnf)
    else:
        rules.append(f"body ::= {_TEXT_CHAR[:-1]}\\n]*")  # text: max_tokens bounds it, cut anywhere it is still a body
    return "\n".join(rules) + "\n"


def web_grammar(*, max_tokens: int, url: str | None = None) -> str:
    """A page as the playwright-mcp tools print it: URL, title, then an aria
    snapshot in a yaml fence whose lines carry [ref=eN] markers. A navigation's
    URL is the one navigated to."""
    url_rule = literal(url) if url else "scheme [!-~]{1,150}"
    lines = max(1, min(80, max_tokens // 12))
    return (
        "\n".join(
            [
                'root ::= "- Page URL: " url "\\n- Page Title: " title "\\n- Page Snapshot:\\n```yaml\\n" '
                f'line{{1,{lines}}} "```"',
                f"url ::= {url_rule}",
                'scheme ::= "http" "s"? "://" | "about:" | "file://"',
                "title ::= [^\\n]{0,80}",
                'line ::= indent "- " role name? attr{0,2} ref text? "\\n"',
                'indent ::= "  "{0,6}',
                "role ::= [a-z] [a-z]{1,15}",
                'name ::= " \\"" [^"\\n]{0,60} "\\""',
                'attr ::= " [" [a-z]{1,10} ("=" [a-z0-9]{1,5})? "]"',
                'ref ::= " [ref=e" [1-9] [0-9]{0,2} "]"',
                'text ::= ":" (" " [^\\n]{1,80})?',
            ]
        )
        + "\n"
    )


def mcp_grammar(
    *,
    schema: dict[str, Any] | None,
    max_tokens: int,
    json_text: bool = False,
    forbid_json: bool = False,
    allow_fence: bool = False,
    outcome_error: bool | None = None,
    error_word: bool = True,
    text_schema: dict[str, Any] | None = None,
) -> str:
    """An MCP tool result: with an output `schema`, JSON matching it; else text,
    bounded, not starting the way prompt scaffolding does (a fence, a heading,
    bold markup; a tool definition's `{` unless the tool answers JSON). Either
    way an error result may be predicted instead: `Error: <message>`. With
    `outcome_error` (what every recorded answer to this call agrees on), only that
    outcome: the status class is part of the recordings' shape. Without
    `error_word`, a text result does not start with "Error" either (no recorded
    success does; a small model primed by an earlier error writes one as text).
    `text_schema`: the shape of a JSON-text answer (recorded answers' shape), else any
    object or array."""
    root = {None: "root ::= result | error", False: "root ::= result", True: "root ::= error"}[outcome_error]
    rules = [root, 'error ::= "Error: " [^\\n] [^\\n]{0,300}']
    if schema is not None:
        rules.append("result ::= json-root")
        rules.append(_schema_rules(schema))
    elif json_text:
        rules.append("result ::= json-root")
        rules.append(_schema_rules(text_schema or {"type": ["object", "array"]}))
    else:
        first = "[^" + ("" if allow_fence else "`") + "#*" + ("{[" if forbid_json else "") + "\\n E]"
        # "E" starts only "Error: …" (the error form) or a word other than "Error:".
        error_text = ' | "Error" [^:]' if error_word else ""
        rules.append(
            f'result ::= ({first} | "E" [^r\\n] | "Er" [^r] | "Err" [^o] | "Erro" [^r]{error_text}) [^\\x00]*'
        )  # max_tokens bounds it
    return "\n".join(rules) + "\n"


def _schema_rules(schema: dict[str, Any]) -> str:
    """GBNF rules for a JSON schema, their root renamed `json-root`, so they
    combine with a grammar of our own."""
    return _schema_rules_of(json.dumps(schema))  # key order kept: it is the order the grammar emits


@functools.lru_cache(maxsize=512)
def _schema_rules_of(schema_json: str) -> str:
    """Cached: a tool's schema is the same call after call, and the conversion costs
    more than the rest of a simulated call's preparation (~0.4 ms)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    out = []
    for line in gbnf.splitlines():
        if line.startswith("root ::="):
            line = "json-root ::=" + line[len("root ::=") :]
        out.append(line)
    return "\n".join(out)


def ordered_like(schema: dict[str, Any], samples: Sequence[Any]) -> dict[str, Any]:
    """`schema` with each object's properties in the order the recorded answers
    write them (then the `required` order, then the rest). The grammar emits
    properties in schema order, and a stored schema may have its keys sorted; a
    small model copies a recorded answer token by token only while the grammar lets
    it write the fields in the same order. Arrays are held to twice the longest
    recorded (plus one) where the schema sets no bound: a small model that starts
    repeating items has to close the list before its tokens run out."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    properties = schema.get("properties")
    objects = [s for s in samples if isinstance(s, dict)]
    if isinstance(properties, dict):
        order: list[str] = []
        for sample in objects:
            order += [key for key in sample if key in properties and key not in order]
        order += [key for key in schema.get("required") or [] if key in properties and key not in order]
        order += [key for key in properties if key not in order]
        out["properties"] = {key: ordered_like(properties[key], [o[key] for o in objects if key in o]) for key in order}
    items = schema.get("items")
    arrays = [s for s in samples if isinstance(s, list)]
    if isinstance(items, dict):
        out["items"] = ordered_like(items, [item for s in arrays for item in s])
    if arrays and schema.get("type") == "array" and "maxItems" not in schema:
        out["maxItems"] = max(2 * max(len(a) for a in arrays) + 1, int(schema.get("minItems") or 0))
    for combinator in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(combinator), list):
            out[combinator] = [ordered_like(sub, samples) for sub in schema[combinator]]
    return out


def infer_json_schema(bodies: Sequence[Any], *, slack: float = 2.0) -> dict[str, Any] | None:
    """The shape of recorded JSON bodies (genson), with bounds that keep a
    generated body short: strings at most `slack` x the longest seen (plus a
    little), arrays at most `slack` x the longest seen. None without bodies."""
    if not bodies:
        return None
    from genson import SchemaBuilder

    builder = SchemaBuilder(schema_uri=None)
    for body in bodies:
        builder.add_object(body)
    schema = builder.to_schema()
    schema.pop("$schema", None)
    _bound(schema, bodies, slack)
    return schema


def _bound(schema: dict[str, Any], samples: Sequence[Any], slack: float) -> None:
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    for alternative in schema.get("anyOf", []):
        _bound(alternative, samples, slack)
    if "string" in kinds:
        longest = max((len(s) for s in samples if isinstance(s, str)), default=16)
        schema["maxLength"] = int(longest * slack) + 8
    if "array" in kinds:
        arrays = [s for s in samples if isinstance(s, list)]
        schema["maxItems"] = int(max((len(a) for a in arrays), default=2) * slack) + 1
        items = schema.get("items")
        if isinstance(items, dict):
            _bound(items, [item for a in arrays for item in a], slack)
    if "object" in kinds:
        objects = [s for s in samples if isinstance(s, dict)]
        for name, sub in (schema.get("properties") or {}).items():
            _bound(sub, [o[name] for o in objects if name in o], slack)
