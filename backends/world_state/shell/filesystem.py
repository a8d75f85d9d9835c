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
    owner: str = "agent"
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

    def copy(self) -> FileSystem:
        return FileSystem(dict(self.nodes), counter=self.counter)

    # --- questions -------------------------------------------------------------------------

    def lookup(self, path: str) -> Node | None:
        """The node at `path` (absolute, normalised); None when it certainly does not exist.
        Raises Unanswerable when the state cannot tell."""
        node = self.nodes.get(path)
        if node is not None:
            return node
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
        node = self.nodes[path]
        if node.content is None:
            raise Unanswerable(f"the content of {path} is not known")
        return node.content

    def names(self, directory: str) -> list[str]:
        """The entry names of a directory, newest first (the order tmpfs lists them in).
        Raises Unanswerable when the listing is not complete."""
        node = self.nodes[directory]
        if node.kind != DIR or not node.complete:
            raise Unanswerable(f"the entries of {directory} are not all known")
        children = self._index().get(directory, set())
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
        """What the state held of `path` is no longer to be trusted: a file's content and
        a directory's listing become unknown; a name the store lacks makes its nearest
        stored directory's listing unknown."""
        node = self.nodes.get(path)
        if node is None:
            ancestor = parent_of(path)
            while ancestor != "/" and ancestor not in self.nodes:
                ancestor = parent_of(ancestor)
            if ancestor in self.nodes and self.nodes[ancestor].kind == DIR:
                self.nodes[ancestor] = replace(self.nodes[ancestor], complete=False)
            return
        if node.kind == DIR:
            self.nodes[path] = replace(node, complete=False)
        else:
            self.nodes[path] = replace(node, content=None, invented=False)
