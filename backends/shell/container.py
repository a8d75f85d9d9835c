"""How a sandbox container is made: hardened options, ownership labels, reaping.

Hardened by default: no network, every capability dropped, no-new-privileges,
a non-root user, a read-only root filesystem with tmpfs mounts for the places
a shell writes (/workspace, /tmp, $HOME), and memory, CPU and pids limits.

Every container gets a label at `docker run` naming the router process that
owns it (the image carries no simroute label: a container someone else started
from it is not simroute's). The container's command holds it to its owner's
life (see owned.py); a router that starts after one killed mid-`docker run`
removes what is left, and never touches a live router's sandboxes or a
container without simroute's owner label.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from backends.shell.options import ShellConfig
from records.owners import owner_is_alive

OWNER_LABEL = "org.simroute.owner"
# Runs until the container's stdin closes: the owner's attach connection ends
# with the owner (stdin_once), so the container exits and the engine removes it.
# Shell builtins only: any image with a shell will do.
LIFELINE_COMMAND = ["sh", "-c", "while read -r _; do :; done"]
USER = "1000:1000"
WORKSPACE = "/workspace"
HOME = "/home/agent"


def create_options(config: ShellConfig, *, owner: str) -> dict[str, Any]:
    """Keyword arguments for docker-py's `containers.create` (then attach, then start)."""
    limits = config.limits
    return {
        "image": config.image,
        "command": LIFELINE_COMMAND,
        # stdin open and, with detach False, StdinOnce: closed when the owner's attach ends.
        "stdin_open": True,
        "detach": False,
        "auto_remove": True,
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
        "labels": {OWNER_LABEL: owner},
    }


def reap_orphans(client: Any, is_alive: Callable[[str], bool] = owner_is_alive) -> tuple[list[str], list[str]]:
    """Remove sandboxes whose owning router is gone, in parallel. Only containers
    carrying simroute's owner label are considered, and only those of a gone
    owner removed (`is_alive`: by default, an owner of this host whose process is
    gone; with replica leases, another host's owner whose lease ran out too).
    Returns (removed names, "name: why" of failures): a removal that fails is
    reported, never stops the router from starting."""
    from backends.docker_engine import ENGINE_ERRORS
    from backends.shell.owned import remove_container

    orphans = [
        container
        for container in client.containers.list(all=True, filters={"label": OWNER_LABEL})
        if not is_alive(container.labels.get(OWNER_LABEL, ""))
    ]

    def remove(container: Any) -> str | None:
        try:
            remove_container(container)
        except ENGINE_ERRORS as exc:  # reported to the caller, who logs it and goes on
            return f"{container.name}: {exc}"
        return None

    if not orphans:
        return [], []
    with ThreadPoolExecutor(max_workers=min(8, len(orphans)), thread_name_prefix="simroute-reap") as pool:
        outcomes = list(pool.map(remove, orphans))
    removed = [c.name for c, failure in zip(orphans, outcomes, strict=True) if failure is None]
    return removed, [failure for failure in outcomes if failure is not None]
