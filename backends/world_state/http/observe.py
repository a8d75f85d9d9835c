"""`observe(world, call, observation, provenance=…)`: what an HTTP answer the agent got
teaches the resource state, whichever route served it.

The call says what changed (its method and path), the answer whether it did and what
the resource now is: a `POST /items` answered 2xx with an object holding an id made
`/items/{id}`; `PUT`/`PATCH /items/{id}` changed it (to the answer's object when the
API echoes it, else by what was sent); `DELETE` or a 404 means it is gone; `GET /items`
lists every member (a query — filters, pages — shows some members, not all). A change
the state cannot follow (an action such as `POST /items/7/archive`, a change whose
answer was not kept whole) makes what it touched unknown: later questions about it go
to the model or the real side, never to a guess.

A real or replayed answer overrides what the state held, and teaches how the API
writes its answers (the status of each kind of change, its 404 body, its JSON style).
A simulated one (the model's) only fills what the state does not know, marked
invented, except for the change the agent asked for, which the state applies whoever
answered: the agent's world has it from then on. An answer the state gave itself has
applied its effects already and is not observed (session.py).
"""

from __future__ import annotations

from backends.world_state.http import caps
from backends.world_state.http.ids import looks_like_id
from backends.world_state.http.messages import NOT_JSON, Answer, Request, answer_of, id_of, request_of, small
from backends.world_state.http.shapes import changed_body, created_shape, listing_of
from backends.world_state.http.store import Api, Collection, HttpWorld
from calls import Call, Observation, Provenance

GONE = (404, 410)


def observe(world: HttpWorld, call: Call, observation: Observation, *, provenance: Provenance | str) -> bool:
    """Updates `world` in place from one call and the answer the agent got; False: it
    is not an HTTP call the state reads."""
    request = request_of(call)
    if request is None or not isinstance(observation.structured, dict):
        return False  # not an HTTP answer: a simulation that failed, a refusal made before any side ran
    fresh = call.server not in world.apis
    api = world.api(call.server)
    answer = answer_of(observation)
    invented = Provenance(provenance) not in (Provenance.REAL, Provenance.REPLAY)
    if answer is None or (answer.value is NOT_JSON and answer.text.strip()):
        # Not JSON (a page, a file) or not kept whole: a change it made cannot be followed.
        if request.method not in ("GET", "HEAD", "OPTIONS") and (answer is None or 200 <= answer.status < 300):
            forget(api, request.path)
    else:
        if not invented:
            _learn_writing(api, answer)
        if request.method == "GET":
            _read(api, request, answer, invented=invented)
        elif request.method == "POST":
            _create(api, request, answer, invented=invented)
        elif request.method in ("PUT", "PATCH", "DELETE"):
            _change(api, request, answer, invented=invented)
        elif request.method not in ("HEAD", "OPTIONS") and 200 <= answer.status < 300:
            forget(api, request.path)
    if fresh and not api.collections and not api.changes:
        del world.apis[call.server]  # nothing of a JSON API here: the state holds nothing for it
    caps.enforce(world)
    return True


def forget(api: Api, path: str) -> None:
    """What a change at `path` may have changed becomes unknown."""
    for prefix, collection in api.collections.items():
        if path == prefix:
            collection.complete = False
        elif path.startswith(prefix.rstrip("/") + "/"):
            key = path[len(prefix.rstrip("/")) + 1 :].split("/")[0]
            item = collection.items.get(key)
            if item is not None:
                api.put(collection, key, None, invented=item.invented)
            elif key in collection.gone or collection.complete:
                collection.gone.pop(key, None)
                collection.complete = False


def _learn_writing(api: Api, answer: Answer) -> None:
    if answer.value is not NOT_JSON and "json" in answer.content_type.lower():
        api.content_type = answer.content_type
        if "," in answer.text:  # a one-field body does not show how fields are separated
            api.style = answer.style
    if answer.status in GONE and answer.value is not NOT_JSON and small(answer.value):
        api.not_found = {"status": answer.status, "body": answer.text, "content_type": answer.content_type}


def _read(api: Api, request: Request, answer: Answer, *, invented: bool) -> None:
    place = _place(api, request, answer)
    if answer.status in GONE and place is not None:
        collection, key = place
        if not invented or _unknown(collection, key):
            api.remove(collection, key, invented=invented)
        return
    if answer.status != 200:
        return
    listed = listing_of(answer.value, api.id_field)
    if listed is not None and place is None:
        _listing(api, api.collection(request.path), request, *listed, invented=invented)
    elif place is not None and (id_of(answer.value, api.id_field) or ("", ""))[1] == place[1]:
        collection, key = place
        if not invented or _unknown(collection, key):
            api.put(collection, key, answer.value, invented=invented)


def _listing(
    api: Api, collection: Collection, request: Request, items: list[dict], envelope: dict | None, *, invented: bool
) -> None:
    found = id_of(items[0], api.id_field) if items else None
    if found is not None:
        api.id_field = api.id_field or found[0]
    keys = []
    for item in items:
        field, key = id_of(item, api.id_field) or ("", "")
        collection.ids.learn(item[field])
        keys.append(key)
        if not invented or _unknown(collection, key):
            api.put(collection, key, item, invented=invented)
    if request.query:
        return  # some members: the listing as a whole stays as it was
    if not invented:
        for key in [key for key in collection.items if key not in keys]:
            api.remove(collection, key, invented=False)
        for order, key in enumerate(keys):  # the API's order, after what came before
            collection.items[key].order = api.counter + order + 1
        api.counter += len(keys)
        collection.complete, collection.invented, collection.envelope = True, False, envelope
    elif not (collection.complete and not collection.invented) and set(collection.items) <= set(keys):
        # The model's listing holds every member the state knows: later listings agree with it.
        collection.complete, collection.invented = True, True
        collection.envelope = collection.envelope or envelope


def _create(api: Api, request: Request, answer: Answer, *, invented: bool) -> None:
    if not 200 <= answer.status < 300:
        return
    found = id_of(answer.value, api.id_field)
    if found is None:
        forget(api, request.path)  # something happened there, the state cannot tell what
        return
    field, key = found
    api.id_field = api.id_field or field
    collection = api.collection(request.path)
    collection.ids.learn(answer.value[field])
    if not invented:
        api.changes["POST"] = {"status": answer.status, "echo": True}
        collection.created = created_shape(answer.value, request.body, field) or collection.created
    if not invented or _unknown(collection, key):
        api.put(collection, key, answer.value, invented=invented)


def _change(api: Api, request: Request, answer: Answer, *, invented: bool) -> None:
    place = _place(api, request, answer)
    if place is None:
        if 200 <= answer.status < 300:
            forget(api, request.path)
        return
    collection, key = place
    if answer.status in GONE:
        if not invented or _unknown(collection, key):
            api.remove(collection, key, invented=invented)
        return
    if not 200 <= answer.status < 300:
        return
    shown = id_of(answer.value, api.id_field)
    echoes = shown is not None and shown[1] == key
    if not invented:
        # A body of its own: {"deleted": true}.
        shows = not echoes and answer.value is not NOT_JSON and small(answer.value)
        api.changes[request.method] = {
            "status": answer.status,
            "echo": echoes,
            **({"body": answer.value} if shows else {}),
        }
    if request.method == "DELETE":
        api.remove(collection, key, invented=invented)
        return
    known = collection.items.get(key)
    if echoes:
        api.put(collection, key, answer.value, invented=invented)
    elif known is not None and known.body is not None and isinstance(request.body, dict):
        api.put(
            collection, key, changed_body(known.body, request.method, request.body, api.id_field), invented=invented
        )
    else:
        api.put(collection, key, None, invented=invented)  # it exists; what it holds now, the state cannot say


def _place(api: Api, request: Request, answer: Answer) -> tuple[Collection, str] | None:
    """(collection, id) of an item path: its parent is a collection the state knows,
    the answer is an object whose id is the path's last segment, or the path ends in
    an id and the call changed it or found it gone."""
    shown = answer.value
    if request.path == "/" or request.query and request.method == "GET":
        return None
    collection = api.collections.get(request.parent)
    found = id_of(shown, api.id_field)
    if (
        collection is None
        and found is not None
        and found[1] == request.last
        and listing_of(shown, api.id_field) is None
    ):
        api.id_field = api.id_field or found[0]
        collection = api.collection(request.parent)
    elif collection is None and (request.method != "GET" or answer.status in GONE) and looks_like_id(request.last):
        collection = api.collection(request.parent)  # /things/42 changed, or gone, answered without the thing
    if collection is None:
        return None
    if isinstance(shown, dict) and (found := id_of(shown, api.id_field)) is not None and found[1] == request.last:
        collection.ids.learn(shown[found[0]])
    return collection, request.last


def _unknown(collection: Collection, key: str) -> bool:
    """Whether an invented fact about `key` contradicts nothing the state learnt from real answers."""
    item = collection.items.get(key)
    if item is not None:
        return item.invented or item.body is None
    if key in collection.gone:
        return collection.gone[key]
    return not (collection.complete and not collection.invented)
