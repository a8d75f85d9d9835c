"""How a sandbox container is made: hardened options, ownership labels, reaping.

Hardened by default: no network, every capability dropped, no-new-privileges,
a non-root user, a read-only root filesystem with tmpfs mounts for the places
a shell writes (/workspace, /tmp, $HOME), and memory, CPU and pids limits.

Every container carries labels naming the router process that owns it, so a
router that starts after a killed one removes the leftovers, and never touches
a live router's sandboxes.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from router.config import ShellConfig

LABEL = "org.simroute.sandbox"
OWNER_LABEL = "org.simroute.owner"
SESSION_LABEL = "org.simroute.session"
USER = "1000:1000"
WORKSPACE = "/workspace"
HOME = "/home/agent"


def process_identity(pid: int) -> str | None:
    """host:pid:start-time: unique for a process even when pids are reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (start time) counts after the command name, which may hold spaces.
    start_time = stat.rsplit(")", 1)[1].split()[19]
    return f"{socket.gethostname()}:{pid}:{start_time}"


def owner_is_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return True  # another machine's router (shared engine): not ours to judge
    pid, _, _ = rest.partition(":")
    return pid.isdigit() and process_identity(int(pid)) == owner


def run_options(config: ShellConfig, *, owner: str) -> dict[str, Any]:
    """Keyword arguments for docker-py's `containers.run`."""
    limits = config.limits
    return {
        "image": config.image,
        "command": ["sleep", "infinity"],
        "detach": True,
        "init": True,  # reaps the zombies of background jobs
        "hostname": config.hostname,
        "user": USER,
        "working_dir": WORKSPACE,
        "network_mode": "bridge" if config.network else "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {
            WORKSPACE: f"rw,exec,size={limits.workspace_size},uid=1000,gid=1000,mode=0755",
            "/tmp": f"rw,exec,size={limits.tmp_size},mode=1777",
            HOME: "rw,size=64m,uid=1000,gid=1000,mode=0700",
        },
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,
        "nano_cpus": int(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        "environment": {"HOME": HOME, "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "LANG": "C.UTF-8"},
        "labels": {LABEL: "1", OWNER_LABEL: owner},
    }


def reap_orphans(client: Any) -> list[str]:
    """Remove sandboxes whose owning router is gone. Returns their names."""
    reaped = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(OWNER_LABEL, "")
        if owner and owner_is_alive(owner):
            continue
        container.remove(force=True)
        reaped.append(container.name)
    return reaped


def this_process_owner() -> str:
    identity = process_identity(os.getpid())
    assert identity is not None  # our own /proc entry exists
    return identity
