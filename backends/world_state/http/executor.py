"""`answer(world, call)`: the answer the resource state gives an HTTP call by itself,
its effects applied to the state, or None whenever the state does not determine it
(an API or collection it has not seen, a resource whose contents it does not know, a
query — filters and pages are the API's own logic —, a body that is not JSON, a
method it does not model): then the world model answers, as it did before.

- `GET /items` (every member known): the members, in the order the state learnt or
  made them, as the API's listings are written (a bare array, or its envelope with
  count fields following the members);
- `GET /items/{id}`: the resource; a 404 once it is gone;
- `POST /items`: a new resource (the request's fields, what the API's create answers
  add by themselves, a new id of the collection's kind), answered with the status
  the API's creates answer with (a create must have been seen: the status cannot be
  guessed safely, 200 and 201 are both common);
- `PUT`/`PATCH /items/{id}`: the resource replaced or merged, answered as the API
  answers them (200 with the resource until one is seen);
- `DELETE /items/{id}`: gone, answered as the API answers deletes (204 until one is seen).

A 404 has the API's own 404 body when one was seen, else `{"detail": "Not Found"}`
(what Starlette and FastAPI answer: a JSON API's most common not-found body; an agent
reads the status first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backends.http.messages import encode_body, response_record
from backends.world_state.http import caps
from backends.world_state.http.ids import DIGITS, INT, UUID, IdFormat
from backends.world_state.http.messages import NOT_JSON, Request, dumps, request_of
from backends.world_state.http.shapes import changed_body, created_body, listing_value
from backends.world_state.http.store import Api, Collection, HttpWorld
from calls import Call

NOT_FOUND = {"detail": "Not Found"}
_NO_BODY = object()


@dataclass(frozen=True, slots=True)
class HttpOutcome:
    structured: dict[str, Any]  # the answer, as an HTTP observation's `structured` part
    invented: bool  # it shows something a simulated answer invented (never a real side's fact)

    @property
    def status(self) -> int:
        return int(self.structured["status"])


def answer(world: HttpWorld, call: Call) -> HttpOutcome | None:
    request = request_of(call)
    api = world.apis.get(call.server) if request is not None else None
    if request is None or api is None or request.query or request.body is NOT_JSON:
        return None
    if request.method == "GET":
        return _read(api, request)
    if request.method == "POST":
        outcome = _create(api, request, seed=f"{call.server} {request.path} {api.counter}")
    elif request.method in ("PUT", "PATCH", "DELETE"):
        outcome = _change(api, request)
    else:
        return None
    caps.enforce(world)
    return outcome


def _read(api: Api, request: Request) -> HttpOutcome | None:
    collection = api.collections.get(request.path)
    if collection is not None and collection.complete:
        members = sorted(collection.items.values(), key=lambda item: item.order)
        if any(item.body is None for item in members):
            return None
        invented = collection.invented or any(item.invented for item in members)
        return _answer(api, 200, listing_value(collection, [item.body for item in members]), invented=invented)
    place = _place(api, request)
    if place is None:
        return None
    collection, key = place
    item = collection.items.get(key)
    if item is not None and item.body is not None:
        return _answer(api, 200, item.body, invented=item.invented)
    return _not_found(api, collection.gone.get(key, False)) if _absent(collection, key) else None


def _create(api: Api, request: Request, *, seed: str) -> HttpOutcome | None:
    collection = api.collections.get(request.path)
    created = api.changes.get("POST")
    if collection is None or created is None or api.id_field is None or not isinstance(request.body, dict):
        return None
    if api.id_field in request.body:
        return None  # an id the client chose: whether the API takes it is its own rule
    if collection.ids.kind is None:
        collection.ids = _borrowed_ids(api)
    new_id = collection.ids.next(seed)
    if new_id is None or str(new_id) in collection.items:
        return None
    body = created_body(collection.created, request.body, api.id_field, new_id)
    api.put(collection, str(new_id), body, invented=True)
    return _answer(api, int(created["status"]), body, invented=True)


def _change(api: Api, request: Request) -> HttpOutcome | None:
    place = _place(api, request)
    if place is None:
        return None
    collection, key = place
    if _absent(collection, key):
        return _not_found(api, collection.gone.get(key, False))
    item = collection.items.get(key)
    if item is None:
        return None
    if request.method == "DELETE":
        change = api.changes.get("DELETE") or {"status": 204, "echo": False}
        shown = item.body if change.get("echo") else change.get("body", _NO_BODY)
        if shown is None:
            return None  # the API echoes what it deleted, and the state does not know it
        api.remove(collection, key, invented=True)
        return _answer(api, int(change["status"]), shown, invented=item.invented)
    if item.body is None or not isinstance(request.body, dict):
        return None
    body = changed_body(item.body, request.method, request.body, api.id_field)
    api.put(collection, key, body, invented=True)
    change = api.changes.get(request.method) or {"status": 200, "echo": True}
    return _answer(
        api, int(change["status"]), body if change.get("echo") else change.get("body", _NO_BODY), invented=True
    )


def _place(api: Api, request: Request) -> tuple[Collection, str] | None:
    collection = api.collections.get(request.parent) if request.path != "/" else None
    return (collection, request.last) if collection is not None else None


def _absent(collection: Collection, key: str) -> bool:
    return key in collection.gone or (collection.complete and key not in collection.items)


def _borrowed_ids(api: Api) -> IdFormat:
    """A new collection's ids, of the kind the API's other collections use (a counter
    starts afresh; a token's prefix names its collection, so it is never borrowed)."""
    kinds = {collection.ids.kind for collection in api.collections.values()} - {None}
    return IdFormat(kinds.pop()) if len(kinds) == 1 and kinds <= {INT, DIGITS, UUID} else IdFormat()


def _not_found(api: Api, invented: bool) -> HttpOutcome:
    own = api.not_found
    if own is not None:
        return _answer(
            api,
            int(own.get("status", 404)),
            _NO_BODY,
            invented=invented,
            text=str(own["body"]),
            content_type=own.get("content_type"),
        )
    return _answer(api, 404, NOT_FOUND, invented=invented)


def _answer(
    api: Api, status: int, value: Any, *, invented: bool, text: str | None = None, content_type: str | None = None
) -> HttpOutcome:
    if text is None:
        text = "" if value is _NO_BODY or value is None else dumps(value, api.style)
    data = text.encode()
    headers = [("Content-Type", content_type or api.content_type)] if data else []
    return HttpOutcome(
        response_record(status, "", headers, encode_body(data, limit=max(len(data), 1)), decoded=False), invented
    )
