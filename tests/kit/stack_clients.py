"""Clients of a running compose stack (kit/compose.py): health through the balancer,
the balancer's runtime API (its stick tables, its servers), and which container is
which replica."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import httpx2

from kit.compose import ComposeStack

SLOT = "x-simroute-balancer-slot"  # the balancer's answer header: the slot (router1, …) that served
REPLICA = "x-simroute-replica"  # the replica's own answer header: its container's host name


def health(http: httpx2.Client, stack: ComposeStack, session: str) -> httpx2.Response | None:
    try:
        return http.get(f"{stack.url}/health", headers={"X-Simroute-Session": session})
    except httpx2.TransportError:
        return None


def wait_for_replicas(
    stack: ComposeStack, count: int, deadline_s: float = 240, names: dict[str, str] | None = None
) -> dict[str, str]:
    """Health through the balancer, each request under a new agent session (balanced
    afresh), until `count` replicas have answered; one session per replica → its slot.
    `names`, when given, gets each slot → the name its replica answered with."""
    homes: dict[str, str] = {}
    deadline = time.monotonic() + deadline_s
    with httpx2.Client(headers={"Authorization": f"Bearer {stack.token}"}, timeout=5) as http:
        while len(set(homes.values())) < count:
            assert time.monotonic() < deadline, f"only {homes} of {count} replicas answered within {deadline_s}s"
            session = uuid.uuid4().hex
            response = health(http, stack, session)
            if response is not None and response.status_code == 200:
                if response.headers[SLOT] not in homes.values():
                    homes[session] = response.headers[SLOT]
                if names is not None:
                    names[response.headers[SLOT]] = response.headers[REPLICA]
            else:
                time.sleep(0.5)
        for session, replica in homes.items():  # an agent session stays where it started
            for _ in range(3):
                response = health(http, stack, session)
                assert response is not None and response.headers[SLOT] == replica
    return homes


def balancer_command(stack: ComposeStack, command: str) -> str:
    """One command of the balancer's runtime API (inside its container), its answer."""
    balancer = stack.container_ids("balancer")[0]
    script = f'exec 3<>/dev/tcp/127.0.0.1/9999; echo "{command}" >&3; cat <&3'
    out = subprocess.run(["docker", "exec", balancer, "bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def balancer_table(stack: ComposeStack, table: str) -> dict[str, str]:
    """A stick table of the balancer: key → server id."""
    lines = balancer_command(stack, f"show table {table}").splitlines()
    entries = [
        dict(part.split("=", 1) for part in line.split()[1:] if "=" in part) for line in lines if line.startswith("0x")
    ]
    return {entry["key"]: entry["server_id"] for entry in entries}


def replica_containers(stack: ComposeStack) -> dict[str, str]:
    """The balancer's server name (what X-Simroute-Balancer-Slot says: router1, …) → the
    router container behind it, matched by address."""
    # `show servers state`: a version line, a header (`# be_id be_name srv_id srv_name srv_addr …`), rows.
    lines = balancer_command(stack, "show servers state routers").splitlines()
    header = next(line for line in lines if line.startswith("# be_id")).lstrip("# ").split()
    rows = [dict(zip(header, line.split(), strict=False)) for line in lines[2:] if len(line.split()) > 4]
    by_address = {row["srv_addr"]: row["srv_name"] for row in rows}
    replicas: dict[str, str] = {}
    for container in stack.container_ids("router"):
        inspect = subprocess.run(
            ["docker", "inspect", container], capture_output=True, text=True, timeout=30, check=True
        )
        networks = json.loads(inspect.stdout)[0]["NetworkSettings"]["Networks"]
        for network in networks.values():
            if network.get("IPAddress") in by_address:
                replicas[by_address[network["IPAddress"]]] = container
    return replicas
