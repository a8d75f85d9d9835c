"""What the recordings of other sessions teach a session's view of one API, beneath
what the session itself learnt: the API's conventions (its id field, how it answers
creates, changes and 404s), its collections' id kinds and create shapes, and the
resources the newest real answers showed, as a real server would still hold them.

The session's own knowledge wins everywhere: it is newer. A recorded resource joins
a collection unless the session knows that id (present or gone) or saw the whole
collection itself; recorded resources list before the session's own."""

from __future__ import annotations

from backends.world_state.http.ids import DIGITS, INT
from backends.world_state.http.store import Api, Collection, Resource


def underlay(api: Api, recorded: Api) -> None:
    """`recorded` (an API as recordings taught it) beneath `api`, in place."""
    fresh = not api.collections and not api.changes
    if fresh:
        api.content_type, api.style = recorded.content_type, recorded.style
    api.id_field = api.id_field or recorded.id_field
    api.not_found = api.not_found or recorded.not_found
    api.changes = {**recorded.changes, **api.changes}
    before = recorded.counter + 1  # recorded orders moved below the session's own
    for path, theirs in recorded.collections.items():
        ours = api.collections.get(path)
        if ours is None:
            ours = api.collections[path] = Collection(ids=theirs.ids, envelope=theirs.envelope, created=theirs.created)
        else:
            _ids_under(ours, theirs)
            ours.envelope, ours.created = ours.envelope or theirs.envelope, ours.created or theirs.created
            if ours.complete and not ours.invented:
                continue  # the session saw every member itself
        for key, item in theirs.items.items():
            if key not in ours.items and key not in ours.gone:
                ours.items[key] = Resource(item.body, False, item.order - before, item.size)
        for key in theirs.gone.keys() - ours.items.keys():
            ours.gone.setdefault(key, False)
        if theirs.complete:
            ours.complete, ours.invented = True, False


def _ids_under(ours: Collection, theirs: Collection) -> None:
    if ours.ids.kind is None:
        ours.ids = theirs.ids
    elif ours.ids.kind == theirs.ids.kind and ours.ids.kind in (INT, DIGITS):
        ours.ids.largest = max(ours.ids.largest, theirs.ids.largest)
