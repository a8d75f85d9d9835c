"""The bounds on what one session's resource state keeps (issue 37: 256 KB, 1,000
resources).

Beyond them, names are kept and contents dropped (marked unknown: a later read asks
the world model). Names themselves stop at `MAX_NAMES` (resources and ids known gone);
past it the newest go too and their collection's listing becomes unknown, so memory
stays bounded whatever an agent does.
"""

from __future__ import annotations

from backends.world_state.http.store import Collection, HttpWorld, Resource

MAX_CONTENT_BYTES = 256 * 1024
MAX_RESOURCES = 1000
MAX_NAMES = 4 * MAX_RESOURCES


def content_bytes(world: HttpWorld) -> int:
    """The bytes of contents `world` holds (what MAX_CONTENT_BYTES bounds)."""
    return sum(
        item.size
        for api in world.apis.values()
        for collection in api.collections.values()
        for item in collection.items.values()
        if item.body is not None
    )


def enforce(world: HttpWorld, *, max_bytes: int = MAX_CONTENT_BYTES) -> None:
    """Brings `world` within the caps, in place (`max_bytes`: what the session's other
    kinds of state leave of MAX_CONTENT_BYTES, see backends/world_state/session.py)."""
    entries: list[tuple[Collection, str, Resource]] = [
        (collection, key, item)
        for api in world.apis.values()
        for collection in api.collections.values()
        for key, item in collection.items.items()
    ]
    gone = sum(len(collection.gone) for api in world.apis.values() for collection in api.collections.values())
    if len(entries) + gone > MAX_NAMES:
        entries = _drop_newest_names(world, entries, len(entries) + gone - MAX_NAMES)
    known = [entry for entry in entries if entry[2].body is not None]
    if len(known) > MAX_RESOURCES:
        # Contents of the resources past the first 1,000 (by when the state learnt them) go.
        for _, _, item in sorted(known, key=lambda entry: entry[2].order)[MAX_RESOURCES:]:
            _forget_content(item)
        known = [entry for entry in known if entry[2].body is not None]
    total = sum(item.size for _, _, item in known)
    # The largest contents go first: the fewest resources lose what the state knows of them.
    for _, _, item in sorted(known, key=lambda entry: -entry[2].size):
        if total <= max_bytes:
            break
        total -= item.size
        _forget_content(item)


def _forget_content(item: Resource) -> None:
    item.body, item.size = None, 0


def _drop_newest_names(
    world: HttpWorld, entries: list[tuple[Collection, str, Resource]], count: int
) -> list[tuple[Collection, str, Resource]]:
    for api in world.apis.values():  # what is known gone goes first: it answers only 404s
        for collection in api.collections.values():
            while collection.gone and count > 0:
                collection.gone.pop(next(reversed(collection.gone)))
                collection.complete, count = False, count - 1
    dropped = sorted(entries, key=lambda entry: -entry[2].order)[: max(count, 0)]
    for collection, key, _ in dropped:
        del collection.items[key]
        collection.complete = False
    gone_ids = {id(item) for _, _, item in dropped}
    return [entry for entry in entries if id(entry[2]) not in gone_ids]
