"""simroute's shell sandboxes on the local Docker engine, and which of them belong to
the routers a test started (other tests may run sandboxes at the same time)."""

from __future__ import annotations

from pathlib import Path

OWNER_LABEL = "org.simroute.owner"  # set by simroute at `docker run`: host:pid:start-time of the router


def sandboxes(owners: set[str] | None = None) -> list:
    """simroute's shell sandbox containers on the local Docker engine; with `owners`,
    only those of these routers (other tests may run sandboxes at the same time)."""
    from types import SimpleNamespace

    import docker

    # One listing call (the high-level list inspects each container: racy while they go).
    listed = docker.from_env().api.containers(all=True, filters={"label": OWNER_LABEL})
    found = [SimpleNamespace(id=c["Id"], labels=c.get("Labels") or {}, status=c.get("State")) for c in listed]
    return found if owners is None else [c for c in found if c.labels.get(OWNER_LABEL) in owners]


def owner_of(pid: int) -> str | None:
    """The owner label a router running as `pid` puts on its sandboxes."""
    from records.owners import process_identity

    return process_identity(pid)


def routers_started_here() -> set[str]:
    """Owner identities of the processes descending from this test process now
    (the simroute processes it launched, however it launched them)."""
    import os

    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
    me, found = os.getpid(), set()
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != me:
            ancestor = parents.get(ancestor)
        if ancestor == me and (identity := owner_of(pid)) is not None:
            found.add(identity)
    return found


class RouterWatch:
    """Notes every router this test process starts (polling /proc), so a test can
    ask which sandboxes its own routers left, whatever else runs on the engine."""

    def __init__(self, interval_s: float = 0.1) -> None:
        import threading

        self.owners: set[str] = set()
        self._stop = threading.Event()
        self._interval_s = interval_s
        self._thread = threading.Thread(target=self._watch, name="router-watch", daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.owners |= routers_started_here()
            self._stop.wait(self._interval_s)

    def __enter__(self) -> RouterWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.owners |= routers_started_here()

    def sandboxes(self) -> list:
        self.owners |= routers_started_here()
        return sandboxes(self.owners)
