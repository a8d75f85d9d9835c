"""Paginated listings (the `paginate` perturbation): a route's listing split into
pages, each but the last with a cursor to the next. Pure functions; the engine keeps
the pages still to be served in session state (records/shared_state/session_state.py), so a
follow-up call with a cursor gets the same next page on any replica.

Where the cursor goes, in the answer's own shape:
- a mapping holding a list (`{"items": [...]}`, structured or as JSON text): the
  page's items and a `next_cursor` field beside them;
- a JSON list or lines of text (MCP): the page, and the cursor in a second text
  block, `next_cursor: <cursor>`;
- an HTTP JSON body: a mapping gets `next_cursor`; a list gets a `Link` header to
  the same URL with the cursor (`rel="next"`), as paginated APIs send.
A follow-up passes the cursor in the rule's `cursor_argument` (an HTTP call, in
the query string).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from hashlib import blake2b
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from backends.http.messages import render_response
from calls import Call, Observation, Perturbation, Provenance
from shadow.compare.http_canonical import query_dict, query_pairs

CURSOR_PREFIX = "cur_"
CURSOR_FIELD = "next_cursor"

# (the page's items, the next page's cursor or None) -> the page as the agent sees it
Rebuild = Callable[[list[Any], str | None], Observation]


def cursor_in(call: Call) -> str | None:
    """A cursor simroute issued, in the call's arguments (top level, or an HTTP call's
    query string), or None. Cheap: no call without one pays a state lookup."""
    values = list(call.arguments.values())
    query = call.arguments.get("query") if call.channel == "http" else None
    if isinstance(query, dict):
        values += list(query.values())
    for value in values:
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, str) and value.startswith(CURSOR_PREFIX) and len(value) == len(CURSOR_PREFIX) + 16:
            return value
    return None


def cursor_for(perturbation: Perturbation, key: str, page: int) -> str:
    """The cursor of page `page` (2: the second) of the listing a perturbation paginated:
    a function of the seed, the session key, the rule and its call number, as the
    decision is."""
    text = f"{perturbation.seed}\x1f{key}\x1f{perturbation.rule}\x1f{perturbation.n}\x1f{page}".encode()
    return CURSOR_PREFIX + blake2b(text, digest_size=8).hexdigest()


def listing_of(call: Call, observation: Observation, *, argument: str = "cursor") -> tuple[list[Any], Rebuild] | None:
    """The listing's items and how a page of them is rebuilt, or None when the answer
    is not a listing (an error, a single value, one line of text)."""
    if observation.is_error:
        return None
    structured = observation.structured
    if call.channel == "http":
        return (
            _http_listing(call, observation, argument)
            if isinstance(structured, dict) and "status" in structured
            else None
        )
    if isinstance(structured, dict) and _list_key(structured) is not None:
        return _mapping_listing(observation, structured)
    text = observation.text.strip()
    value = _json(text)
    if isinstance(value, dict) and _list_key(value) is not None:
        return _mapping_listing(observation, value, structured=False)
    if isinstance(value, list):
        return value, lambda items, cursor: _text_page(
            observation, json.dumps(items, indent=2, ensure_ascii=False), cursor
        )
    lines = text.splitlines()
    if len(lines) > 1:
        return lines, lambda items, cursor: _text_page(observation, "\n".join(items), cursor)
    return None


def pages_of(call: Call, observation: Observation, perturbation: Perturbation, key: str) -> list[Observation] | None:
    """The listing's pages of `perturbation.page_size` items, each but the last with
    the cursor of the next (provenance `none`: simroute cut them); None when the
    answer is not a listing or fits one page."""
    listing = listing_of(call, observation, argument=perturbation.cursor_argument)
    size = max(1, perturbation.page_size)
    if listing is None or len(listing[0]) <= size:
        return None
    items, rebuild = listing
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    pages = []
    for index, chunk in enumerate(chunks):
        cursor = cursor_for(perturbation, key, index + 2) if index + 1 < len(chunks) else None
        pages.append(replace(rebuild(chunk, cursor), provenance=Provenance.NONE))
    return pages


def next_cursor(observation: Observation) -> str | None:
    """The cursor a page carries (None: the last page), wherever `pages_of` put it."""
    structured = observation.structured
    if isinstance(structured, dict) and isinstance(structured.get(CURSOR_FIELD), str):
        return structured[CURSOR_FIELD]
    if isinstance(structured, dict) and "status" in structured:
        value = _json(str(structured.get("body") or ""))
        if isinstance(value, dict) and isinstance(value.get(CURSOR_FIELD), str):
            return value[CURSOR_FIELD]
        for name, header in structured.get("headers") or []:
            if name.lower() == "link" and f"={CURSOR_PREFIX}" in header:
                return CURSOR_PREFIX + header.split(f"={CURSOR_PREFIX}", 1)[1][:16]
        return None
    for block in observation.content:
        text = block.get("text", "") if block.get("type") == "text" else ""
        if text.startswith(f"{CURSOR_FIELD}: "):
            return text.split(": ", 1)[1].strip()
        value = _json(text.strip())
        if isinstance(value, dict) and isinstance(value.get(CURSOR_FIELD), str):
            return value[CURSOR_FIELD]
    return None


def _json(text: str) -> Any:
    if text[:1] not in ("[", "{"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _list_key(value: dict[str, Any]) -> str | None:
    return next((key for key, item in value.items() if isinstance(item, list)), None)


def _mapping_listing(
    observation: Observation, value: dict[str, Any], *, structured: bool = True
) -> tuple[list[Any], Rebuild]:
    key = _list_key(value)
    assert key is not None

    def rebuild(items: list[Any], cursor: str | None) -> Observation:
        page = {name: items if name == key else item for name, item in value.items() if name != CURSOR_FIELD}
        if cursor is not None:
            page[CURSOR_FIELD] = cursor
        text = json.dumps(page, indent=2, ensure_ascii=False)
        return replace(
            observation,
            content=[{"type": "text", "text": text}],
            structured=page if structured else observation.structured,
        )

    return value[key], rebuild


def _text_page(observation: Observation, text: str, cursor: str | None) -> Observation:
    content = [{"type": "text", "text": text}]
    if cursor is not None:
        content.append({"type": "text", "text": f"{CURSOR_FIELD}: {cursor}"})
    return replace(observation, content=content, structured=None)


def _http_listing(call: Call, observation: Observation, argument: str) -> tuple[list[Any], Rebuild] | None:
    structured = observation.structured
    assert isinstance(structured, dict)
    body = _json(str(structured.get("body") or "")) if structured.get("body_encoding") == "text" else None
    key = _list_key(body) if isinstance(body, dict) else None
    if not isinstance(body, list) and key is None:
        return None
    items = body if isinstance(body, list) else body[key]  # type: ignore[index]

    def rebuild(chunk: list[Any], cursor: str | None) -> Observation:
        headers = [
            list(pair) for pair in structured.get("headers") or [] if pair[0].lower() not in ("link", "content-length")
        ]
        if isinstance(body, dict):
            page: Any = {name: chunk if name == key else item for name, item in body.items() if name != CURSOR_FIELD}
            if cursor is not None:
                page[CURSOR_FIELD] = cursor
        else:
            page = chunk
            if cursor is not None:
                headers.append(
                    ["Link", f'<{_with_cursor(str(call.arguments.get("url") or ""), argument, cursor)}>; rel="next"']
                )
        text = json.dumps(page, ensure_ascii=False)
        cut = {
            **structured,
            "headers": headers,
            "body": text,
            "body_encoding": "text",
            "body_size": len(text.encode()),
            "truncated": False,
        }
        cut.pop("body_sha256", None)
        return replace(observation, content=[{"type": "text", "text": render_response(cut)}], structured=cut)

    return items, rebuild


def _with_cursor(url: str, argument: str, cursor: str) -> str:
    parts = urlsplit(url)
    query = {name: value for name, value in query_dict(query_pairs(parts.query)).items() if name != argument}
    return urlunsplit(parts._replace(query=urlencode({**query, argument: cursor}, doseq=True)))
