"""The bounds on what one session's shell state keeps (issue 37: 256 KB, 1,000 paths).

Beyond them, names are kept and contents dropped (marked unknown: a later read asks the
world model). Names themselves stop at `MAX_NAMES`; past it the newest names go too and
their directory's listing becomes unknown, so memory stays bounded whatever an agent does.
"""

from __future__ import annotations

from backends.world_state.shell.filesystem import FileSystem, parent_of

MAX_CONTENT_BYTES = 256 * 1024
MAX_PATHS = 1000
MAX_NAMES = 4 * MAX_PATHS


def content_bytes(fs: FileSystem) -> int:
    """The bytes of contents `fs` holds (what MAX_CONTENT_BYTES bounds)."""
    return sum(
        len(node.content.encode("utf-8", "surrogateescape")) for node in fs.nodes.values() if node.content is not None
    )


def enforce(fs: FileSystem, *, max_bytes: int = MAX_CONTENT_BYTES) -> None:
    """Brings `fs` within the caps, in place (`max_bytes`: what the session's other kinds
    of state leave of MAX_CONTENT_BYTES, see backends/world_state/session.py)."""
    if len(fs.nodes) > MAX_NAMES:
        _drop_newest_names(fs, len(fs.nodes) - MAX_NAMES)
    if len(fs.nodes) > MAX_PATHS:
        # Contents of the paths past the first 1,000 (by creation) go.
        for path in sorted(fs.nodes, key=lambda p: fs.nodes[p].order)[MAX_PATHS:]:
            fs.forget_content(path)
    sizes = {path: len(node.content) for path, node in fs.nodes.items() if node.content is not None}
    if sum(sizes.values()) * 4 <= max_bytes:  # UTF-8 takes at most 4 bytes a character
        return
    sizes = {path: len(fs.nodes[path].content.encode("utf-8", "surrogateescape")) for path in sizes}  # type: ignore[union-attr]
    total = sum(sizes.values())
    # The largest contents go first: the fewest files lose what the state knows of them.
    for path in sorted(sizes, key=lambda p: (-sizes[p], p)):
        if total <= max_bytes:
            break
        fs.forget_content(path)
        total -= sizes[path]


def _drop_newest_names(fs: FileSystem, count: int) -> None:
    for path in sorted(fs.nodes, key=lambda p: -fs.nodes[p].order)[:count]:
        if path in fs.nodes:  # not gone with a folder removed before it
            fs.remove(path)
            fs.forget_listing(parent_of(path))
