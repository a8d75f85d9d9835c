"""Who owns a record or a container: a process named by host, pid and start time.

A leaf module (imports nothing of simroute): records and sandboxes both carry an
owner, and whoever finds an owner gone (a killed router) cleans up after it.

On its own host a process is judged by /proc. Another host's process can only be
judged through the replica leases of a shared Redis store
(`records/shared_state/replicas_redis.py`): `owner_judge(live)` counts an owner of another
host alive while its lease runs, dead once it ran out.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable, Collection
from pathlib import Path


def process_identity(pid: int) -> str | None:
    """host:pid:start-time: unique for a process even when pids are reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces): 3 is the state, 22 the start time.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        # A zombie is dead, only not yet reaped: a killed router whose parent is gone
        # stays one for good where pid 1 reaps nothing (many containers).
        return None
    start_time = fields[19]
    return f"{socket.gethostname()}:{pid}:{start_time}"


def owner_is_alive(
    owner: str, live_elsewhere: Collection[str] | None = None, known_elsewhere: Collection[str] | None = None
) -> bool:
    """False for an owner identity of this host whose process is gone, and (given the
    replicas whose lease runs, `live_elsewhere`) for another host's owner without one.
    With `known_elsewhere` (the replicas that held a lease in this store), another
    host's owner not among them is alive: it is not this deployment's to judge (a
    Docker engine shared with another deployment holds its containers too)."""
    host, pid, start_time = (owner.split(":") + ["", "", ""])[:3]
    if not (pid.isdigit() and start_time.isdigit()) or owner.count(":") != 2:
        return True  # not an identity simroute writes: not ours to judge
    if host != socket.gethostname():
        # Another machine's router: judged by its lease when leases are kept, else not ours to judge.
        if live_elsewhere is None or (known_elsewhere is not None and owner not in known_elsewhere):
            return True
        return owner in live_elsewhere
    return process_identity(int(pid)) == owner


def owner_judge(
    live_elsewhere: Collection[str] | None, known_elsewhere: Collection[str] | None = None
) -> Callable[[str], bool]:
    """`owner_is_alive` with the replicas whose lease runs (None: no leases kept) and,
    for containers, those that ever held one here."""
    return lambda owner: owner_is_alive(owner, live_elsewhere, known_elsewhere)


@functools.cache
def this_process_owner() -> str:
    identity = process_identity(os.getpid())
    assert identity is not None  # our own /proc entry exists
    return identity
