"""The shapes of a JSON API's answers the state reads and writes: a listing (a JSON
array of resources, or an object wrapping one: `{"items": [...], "total": 2}`), a
create's answer (the request's fields, the new id, and what the API adds by itself,
laid out as the API lays them out), and a resource after a PUT or PATCH."""

from __future__ import annotations

from typing import Any

from backends.world_state.http.messages import id_of, small
from backends.world_state.http.store import Collection


def listing_of(value: Any, id_field: str | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None] | None:
    """(the resources, the envelope around them or None) of a listing; None when
    `value` is not one: an array holding anything but resources with an id, an object
    with an id of its own (a resource that holds an array) or with several arrays."""
    envelope = None
    if isinstance(value, list):
        array = value
    elif isinstance(value, dict) and id_of(value, id_field) is None:
        arrays = [key for key, field in value.items() if isinstance(field, list)]
        if len(arrays) != 1:
            return None
        key = arrays[0]
        array = value[key]
        counts = [name for name, field in value.items() if _counts(name) and type(field) is int and field == len(array)]
        envelope = {
            "key": key,
            "layout": list(value),
            "rest": {k: v for k, v in value.items() if k != key},
            "counts": counts,
        }
        if not small(envelope["rest"]):
            return None
    else:
        return None
    if not all(isinstance(item, dict) for item in array):
        return None
    found = id_of(array[0], id_field) if array else None
    field = id_field or (found[0] if found else None)
    if array and (field is None or any(id_of(item, field) is None for item in array)):
        return None
    return array, envelope


def _counts(name: str) -> bool:
    """A field of a listing's envelope that counts its members (`total`, `count`, `totalCount`)."""
    return any(word in name.lower() for word in ("count", "total", "size", "length"))


def listing_value(collection: Collection, array: list[Any]) -> Any:
    """A listing of `array` as the collection's listings are written."""
    envelope = collection.envelope
    if envelope is None:
        return array
    rest, counts = envelope.get("rest") or {}, envelope.get("counts") or []
    return {
        name: array if name == envelope["key"] else len(array) if name in counts else rest.get(name)
        for name in envelope.get("layout") or []
    }


def created_shape(answer: dict[str, Any], sent: Any, id_field: str) -> dict[str, Any] | None:
    """What a real create's answer teaches of the next ones: the fields the API added
    by itself (defaults, timestamps: as this answer gave them) and the fields' order."""
    sent_fields = sent if isinstance(sent, dict) else {}
    defaults = {key: value for key, value in answer.items() if key != id_field and key not in sent_fields}
    shape = {"defaults": defaults, "layout": list(answer)}
    return shape if small(shape) else None


def created_body(shape: dict[str, Any] | None, sent: dict[str, Any], id_field: str, new_id: Any) -> dict[str, Any]:
    """A new resource as the API would answer its create: laid out as the create seen."""
    shape = shape or {}
    fields = {id_field: new_id, **(shape.get("defaults") or {}), **sent}
    layout = [key for key in shape.get("layout") or [id_field] if key in fields]
    return {
        **{key: fields[key] for key in layout},
        **{key: value for key, value in fields.items() if key not in layout},
    }


def changed_body(body: dict[str, Any], method: str, sent: dict[str, Any], id_field: str | None) -> dict[str, Any]:
    """A resource after a PATCH (the sent fields merged in) or a PUT (replaced by what
    was sent; its id kept), in its fields' order."""
    if method == "PATCH":
        return {**body, **sent}
    kept = {id_field: body[id_field]} if id_field and id_field in body else {}
    return {**kept, **{key: value for key, value in sent.items() if key not in kept}}
