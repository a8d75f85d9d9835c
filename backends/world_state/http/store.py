"""`HttpWorld`: the JSON APIs a session talks to, as the state knows them.

Per API (a call's server, `host[:port]`): how it writes its answers (the id field, the
content type, the JSON style, its 404 body, the status of each kind of change) and its
collections by path (`/items`, `/users/7/posts`). A collection holds its resources by
id (the path segment after it), the ids known to be gone, and whether every member is
known (`complete`: a listing showed them all). A resource whose `body` is None exists
with unknown contents: a question about it goes to the model. What is in no map is
unknown, unless its collection is complete: then it is absent.

Plain data: `to_json()` / `from_json()`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.world_state.http.ids import IdFormat


@dataclass(slots=True)
class Resource:
    body: Any  # the JSON object as the API shows it; None: unknown
    invented: bool = False  # learnt from a simulated answer: a real one overrides it
    order: int = 0  # when the state learnt or made it (listings keep this order)
    size: int = 0  # bytes of its JSON as UTF-8 (the caps count them)

    def to_json(self) -> dict[str, Any]:
        return {
            "body": self.body,
            "order": self.order,
            "size": self.size,
            **({"invented": True} if self.invented else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Resource:
        return cls(data.get("body"), bool(data.get("invented")), int(data.get("order", 0)), int(data.get("size", 0)))


@dataclass(slots=True)
class Collection:
    items: dict[str, Resource] = field(default_factory=dict)
    gone: dict[str, bool] = field(default_factory=dict)  # ids known absent -> whether a simulated answer said so
    complete: bool = False
    invented: bool = False  # complete only by a simulated listing: a real one overrides it
    ids: IdFormat = field(default_factory=IdFormat)
    # A listing that wraps its array: {"key": "items", "rest": {...the other fields},
    # "counts": [fields equal to its length]}; None: a plain JSON array.
    envelope: dict[str, Any] | None = None
    # A real create's answer: {"defaults": what it added that the request did not send, "layout": its
    # fields in order}; None: no create seen.
    created: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "items": {key: item.to_json() for key, item in self.items.items()},
            "gone": self.gone,
            "complete": self.complete,
            "invented": self.invented,
            "ids": self.ids.to_json(),
            "envelope": self.envelope,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Collection:
        return cls(
            {str(key): Resource.from_json(item) for key, item in dict(data.get("items") or {}).items()},
            {str(key): bool(value) for key, value in dict(data.get("gone") or {}).items()},
            bool(data.get("complete")),
            bool(data.get("invented")),
            IdFormat.from_json(dict(data.get("ids") or {})),
            data.get("envelope"),
            data.get("created"),
        )


@dataclass(slots=True)
class Api:
    collections: dict[str, Collection] = field(default_factory=dict)
    id_field: str | None = None
    content_type: str = "application/json"
    style: str = "spaced"
    not_found: dict[str, Any] | None = None  # the API's own 404: {"body": text, "content_type": …}
    # The status each kind of change answers (a real answer taught it): "POST", "PUT", "PATCH",
    # "DELETE" -> {"status": 201, "echo": whether the body is the resource}.
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    recorded: bool = False  # the recordings of other sessions were read into it
    counter: int = 0

    def collection(self, path: str) -> Collection:
        found = self.collections.get(path)
        if found is None:
            found = self.collections[path] = Collection()
        return found

    def put(self, collection: Collection, key: str, body: Any, *, invented: bool) -> None:
        """`body` (None: unknown) as the resource `key` of `collection`."""
        self.counter += 1
        known = collection.items.get(key)
        order = known.order if known is not None else self.counter
        size = len(json.dumps(body, ensure_ascii=False).encode()) if body is not None else 0
        collection.items[key] = Resource(body, invented, order, size)
        collection.gone.pop(key, None)

    def remove(self, collection: Collection, key: str, *, invented: bool) -> None:
        collection.items.pop(key, None)
        collection.gone[key] = invented

    def to_json(self) -> dict[str, Any]:
        return {
            "collections": {path: collection.to_json() for path, collection in self.collections.items()},
            "id_field": self.id_field,
            "content_type": self.content_type,
            "style": self.style,
            "not_found": self.not_found,
            "changes": self.changes,
            "recorded": self.recorded,
            "counter": self.counter,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Api:
        return cls(
            {str(path): Collection.from_json(c) for path, c in dict(data.get("collections") or {}).items()},
            data.get("id_field"),
            str(data.get("content_type") or "application/json"),
            str(data.get("style") or "spaced"),
            data.get("not_found"),
            dict(data.get("changes") or {}),
            bool(data.get("recorded")),
            int(data.get("counter", 0)),
        )


@dataclass(slots=True)
class HttpWorld:
    apis: dict[str, Api] = field(default_factory=dict)

    def api(self, server: str) -> Api:
        found = self.apis.get(server)
        if found is None:
            found = self.apis[server] = Api()
        return found

    def copy(self) -> HttpWorld:
        return HttpWorld.from_json(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {"apis": {server: api.to_json() for server, api in self.apis.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HttpWorld:
        return cls({str(server): Api.from_json(api) for server, api in dict(data.get("apis") or {}).items()})
