"""The virtual filesystem: absolute paths to nodes, and what the state knows of each.

A flat dict of normalised absolute paths is the store (JSON as it is, easy to cap and to
merge path by path). A path's parent is always in the store. What is not in the store
is absent only where its parent directory is `complete` (every entry known); elsewhere
it is unknown, and so is a file whose `content` is None: a question about it raises
`Unanswerable`, so the caller asks the world model instead of guessing.

Nodes are immutable: a change replaces the node, so a copy of the store is a shallow
dict copy (the executor works on a copy and keeps it only when it answers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from backends.world_state.shell.errors import Unanswerable

FILE = "file"
DIR = "dir"


@dataclass(frozen=True, slots=True)
class Node:
    kind: str | None  # FILE or DIR; None: a name seen in a listing, its kind not known
    mode: int = 0o644  # permission bits, with the sticky bit where set
    content: str | None = None  # a file's text; None: not known
    invented: bool = False  # learnt from a simulated answer: a real one overrides it
    complete: bool = True  # a directory: every entry is in the store
    hidden_known: bool = True  # a complete directory: its dot-names too (a plain `ls` shows none)
    owner: str = "agent"  # "": not known (a path learnt from an answer, outside the agent's mounts)
    mtime: float = 0.0
    order: int = 0  # when the entry was made or renamed (tmpfs lists a directory's newest entry first)
    inode: int = 0  # when the file itself was made (a rename keeps it; cp -r copies in inode order)
    # (links, size, KiB blocks) of a directory outside the tmpfs mounts, which the state
    # cannot count from its entries.
    fixed: tuple[int, int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "mode": self.mode, "owner": self.owner, "mtime": self.mtime}
        data["order"], data["inode"] = self.order, self.inode
        if self.kind == FILE or self.content is not None:
            data["content"] = self.content
        if self.invented:
            data["invented"] = True
        if self.kind == DIR and not self.complete:
            data["complete"] = False
        if self.kind == DIR and not self.hidden_known:
            data["hidden_known"] = False
        if self.fixed is not None:
            data["fixed"] = list(self.fixed)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Node:
        fixed = data.get("fixed")
        return cls(
            kind=data.get("kind"),
            mode=int(data.get("mode", 0o644)),
            content=data.get("content"),
            invented=bool(data.get("invented", False)),
            complete=bool(data.get("complete", True)),
            hidden_known=bool(data.get("hidden_known", True)),
            owner=str(data.get("owner", "agent")),
            mtime=float(data.get("mtime", 0.0)),
            order=int(data.get("order", 0)),
            inode=int(data.get("inode", 0)),
            fixed=(int(fixed[0]), int(fixed[1]), int(fixed[2])) if fixed else None,
        )


def normalize(path: str, cwd: str) -> str:
    """`path` made absolute against `cwd`, with `.`, `..` and repeated slashes resolved
    lexically (the state holds no symbolic links)."""
    parts: list[str] = []
    for part in (path if path.startswith("/") else f"{cwd}/{path}").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[1] if path != "/" else "/"


def join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


class FileSystem:
    def __init__(self, nodes: dict[str, Node] | None = None, *, counter: int = 0) -> None:
        self.nodes: dict[str, Node] = nodes if nodes is not None else {}
        self.counter = counter  # the last creation order given
        self._children: dict[str, set[str]] | None = None  # built on first use
        # While a pipeline's stage runs: the paths it asked about (their folders too), so
        # stages running at once that touch the same paths are told apart (executor.py).
        self.seen: set[str] | None = None

    def copy(self) -> FileSystem:
        return FileSystem(dict(self.nodes), counter=self.counter)

    # --- questions -------------------------------------------------------------------------

    def lookup(self, path: str) -> Node | None:
        """The node at `path` (absolute, normalised); None when it certainly does not exist.
        Raises Unanswerable when the state cannot tell."""
        if self.seen is not None:
            self.seen.add(path)
        node = self.nodes.get(path)
        if node is not None:
            return node
        if self.seen is not None:
            self.seen.add(parent_of(path))  # that it is absent is the folder's listing's say
        ancestor = parent_of(path)
        while ancestor not in self.nodes:
            if ancestor == "/":
                raise Unanswerable(f"nothing is known of {path}")
            ancestor = parent_of(ancestor)
        found = self.nodes[ancestor]
        if found.kind == FILE:
            return None
        if found.kind is None or not found.complete:
            raise Unanswerable(f"the entries of {ancestor} are not all known")
        if not found.hidden_known and path[len(ancestor) :].lstrip("/").startswith("."):
            raise Unanswerable(f"the dot-names of {ancestor} are not known")
        return None

    def missing_reason(self, path: str) -> str:
        """Why `path` does not exist, as the C library says it: a file where a directory
        is needed on the way, or simply no such file."""
        ancestor = parent_of(path)
        while ancestor != "/" and ancestor not in self.nodes:
            ancestor = parent_of(ancestor)
        node = self.nodes.get(ancestor)
        return "Not a directory" if node is not None and node.kind == FILE else "No such file or directory"

    def content(self, path: str) -> str:
        if self.seen is not None:
            self.seen.add(path)
        node = self.nodes[path]
        if node.content is None:
            raise Unanswerable(f"the content of {path} is not known")
        return node.content

    def names(self, directory: str, *, hidden: bool = True) -> list[str]:
        """The entry names of a directory, newest first (the order tmpfs lists them in);
        without dot-names unless `hidden`. Raises Unanswerable when the listing is not
        complete."""
        if self.seen is not None:
            self.seen.add(directory)
        node = self.nodes[directory]
        if node.kind != DIR or not node.complete or (hidden and not node.hidden_known):
            raise Unanswerable(f"the entries of {directory} are not all known")
        children = self._index().get(directory, set())
        if not hidden:
            children = {name for name in children if not name.startswith(".")}
        return sorted(children, key=lambda name: -self.nodes[join(directory, name)].order)

    def known_names(self, directory: str) -> set[str]:
        """The entries of a directory the state holds, complete or not."""
        return set(self._index().get(directory, set()))

    def subtree(self, path: str) -> list[str]:
        """`path` and every path below it in the store."""
        prefix = path.rstrip("/") + "/"
        return [p for p in self.nodes if p == path or p.startswith(prefix)]

    def _index(self) -> dict[str, set[str]]:
        if self._children is None:
            index: dict[str, set[str]] = {}
            for path in self.nodes:
                if path != "/":
                    index.setdefault(parent_of(path), set()).add(name_of(path))
            self._children = index
        return self._children

    # --- changes ---------------------------------------------------------------------------

    def put(self, path: str, node: Node) -> Node:
        """Stores `node` at `path` (its parent must be stored); a new entry gets the next
        creation order and inode, a replaced one keeps its own unless `node` gives them."""
        old = self.nodes.get(path)
        if node.order == 0 or node.inode == 0:
            if old is None:
                self.counter += 1
            order = node.order or (old.order if old is not None else self.counter)
            node = replace(node, order=order, inode=node.inode or (old.inode if old is not None else self.counter))
        self.nodes[path] = node
        if old is None and self._children is not None and path != "/":
            self._children.setdefault(parent_of(path), set()).add(name_of(path))
        return node

    def renew(self, path: str) -> None:
        """Gives `path` the next creation order (a moved entry is listed as a new one)."""
        self.counter += 1
        self.nodes[path] = replace(self.nodes[path], order=self.counter)

    def remove(self, path: str) -> None:
        """Removes `path` and everything below it."""
        for gone in self.subtree(path):
            del self.nodes[gone]
            if self._children is not None:
                self._children.get(parent_of(gone), set()).discard(name_of(gone))
                self._children.pop(gone, None)

    def forget(self, path: str) -> None:
        """Nothing the state held of `path` is to be trusted any more, not even that it
        exists: it leaves the store, and its folder's listing becomes unknown (a name the
        store lacks: its nearest stored folder's)."""
        if path in self.nodes and path != "/":
            self.remove(path)
        ancestor = parent_of(path)
        while ancestor != "/" and ancestor not in self.nodes:
            ancestor = parent_of(ancestor)
        self.forget_listing(ancestor)

    def forget_entries(self, directory: str) -> None:
        """Nothing below `directory` is to be trusted: its entries leave the store and its
        listing becomes unknown (the folder itself stays)."""
        for name in self.known_names(directory):
            self.remove(join(directory, name))
        self.forget_listing(directory)

    def forget_listing(self, directory: str) -> None:
        """New names may have appeared in `directory`: its listing is no longer complete."""
        node = self.nodes.get(directory)
        if node is not None and node.kind == DIR:
            self.nodes[directory] = replace(node, complete=False)

    def forget_content(self, path: str) -> None:
        """A file's content is no longer known (it stays where it is)."""
        node = self.nodes.get(path)
        if node is not None and node.kind == FILE:
            self.nodes[path] = replace(node, content=None, invented=False)
