"""Faults on the running stack, each under load, each ending with the store audited.

docker-compose.yml with compose.faults.yml laid over it (the test toolbox server, the
shell channel on the host's Docker engine, 6-second replica leases) and two router
replicas behind the balancer. Agents step REST episodes from threads throughout
(kit/stack_load.py: each step retried under its Idempotency-Key, as an RL framework's
client does) while the test kills a router replica, the world model, an upstream
MCP server mid-call, a sandbox container mid-call and Redis. After each, the store
is audited as an operator reads it (`simroute records --json` in a router): every
answered call has exactly one complete record, a call in flight at a kill has one,
marked interrupted, and no step of a session is recorded twice. The tests share one
stack and run in this order; it is taken down at the end, leaving nothing."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.compose import ComposeStack
from kit.stack_clients import replica_containers, wait_for_replicas
from kit.stack_load import (
    Agent,
    InBackground,
    audit,
    client,
    reset,
    situation,
    step,
    store_rows,
    text_of,
    tool_named,
    wait_for,
    wait_for_answers,
)

from router.cli.launch import free_port

# Serial: the stack's two replicas, world model and agents load both cores; beside other
# tests both would measure each other's slowness (a browser test's page load timed out).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

FAULTS = Path(__file__).with_name("compose.faults.yml")
OWNER_LABEL = "org.simroute.owner"  # on every sandbox container: the router process that owns it
LEASE_S = 6  # sessions.replica_lease_s in faults.yaml


@pytest.fixture(scope="module")
def stack() -> Iterator[ComposeStack]:
    stack = ComposeStack(port=free_port(), proxy_port=free_port(), files=(FAULTS,))
    stack.build()
    routers: list[str] = []
    try:
        stack.up(routers=2)
        routers = stack.container_ids("router")
        wait_for_replicas(stack, 2)
        yield stack
    finally:
        routers = sorted(set(routers) | set(stack.container_ids("router")))
        stack.down()
        left = sandboxes_of(routers)
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, timeout=120) if left else None
        assert stack.leftovers() == {"containers": [], "networks": [], "volumes": [], "images": []}
        assert left == [], f"sandbox containers left behind by the stack's routers: {left}"


def sandboxes_of(routers: list[str]) -> list[str]:
    """Sandbox containers on the host's engine owned by these router containers (an
    owner is host:pid:start, the host a container's short id)."""
    listing = [
        "docker",
        "ps",
        "-a",
        "--filter",
        f"label={OWNER_LABEL}",
        "--format",
        f'{{{{.ID}}}} {{{{.Label "{OWNER_LABEL}"}}}}',
    ]
    rows = subprocess.run(listing, capture_output=True, text=True, timeout=30, check=True).stdout.split("\n")
    hosts = {router[:12] for router in routers}
    return [row.split()[0] for row in rows if row.strip() and row.split()[1].split(":")[0] in hosts]


def docker(*args: str, timeout: float = 60) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"docker {' '.join(args)}: {out.stderr}"
    return out.stdout


def agents(stack: ComposeStack, routes: list[str]) -> list[Agent]:
    return [Agent(stack, f"{route}-{n}", route).start() for n, route in enumerate(routes)]


def stop_all(load: list[Agent]) -> list:
    for agent in load:
        agent.stop()
    return [answer for agent in load for answer in agent.answers]


def wait_for_a_started_sleep(stack: ComposeStack) -> None:
    """Until the store shows a `sleep` call running (its record written `started`)."""
    wait_for(
        lambda: any(r["tool"] == "sleep" and r["status"] == "started" for r in store_rows(stack)),
        60,
        "the sleep call to start",
    )


def kill_processes(container: str, needle: str) -> int:
    """SIGKILL every process of the container whose command line holds `needle` (the
    images carry no procps: /proc read by Python); how many."""
    script = (
        "import os, signal, sys\n"
        "n = 0\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        line = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if sys.argv[1].encode() in line and int(pid) != os.getpid():\n"
        "        os.kill(int(pid), signal.SIGKILL); n += 1\n"
        "print(n)\n"
    )
    return int(docker("exec", container, "python", "-c", script, needle).strip())


def test_a_killed_replica_loses_no_record_and_its_sessions_go_on(stack):
    load = agents(stack, ["real", "real", "real", "sim"])
    wait_for_answers(stack, load, 2, "every agent to be answered twice")
    replicas = replica_containers(stack)
    assert sorted(replicas) == ["router1", "router2"], replicas
    # A call certainly in flight on the victim: a real `sleep` on an episode it holds.
    with client(stack) as http:
        for _ in range(10):
            episode, home = reset(http, {"route": "real", "servers": ["toolbox"], "channels": ["mcp"]})
            if home == load[0].replica:
                break
        assert home == load[0].replica
        victim = replicas[home]
        sleep = tool_named(http, episode, "sleep")
        sleeper = InBackground(http, episode, {"type": "call_tool", "tool_name": sleep, "arguments": {"seconds": 60}})
        wait_for_a_started_sleep(stack)
        docker("kill", victim)
        # Answers the victim sent just before it died may still reach their clients: later than this, none can.
        killed_at = time.monotonic() + 2
        body, replica = sleeper.result(300)
    # The retry reached the survivor, which says the answer was lost with its replica (not run twice).
    assert body["info"]["infra_error"] is True and body["info"]["record_id"] is None, body
    assert replica != home
    # Every agent goes on: the victim's episodes on the survivor, from Redis.
    wait_for_answers(stack, load, 3, "every agent to go on after the kill", since=killed_at)
    answers = stop_all(load)
    moved = [a for agent in load if agent.replica == home for a in agent.answered_since(killed_at)]
    assert moved and {a.replica for a in moved} == {r for r in replicas if r != home}
    # The survivor reaps the dead replica's call once its lease runs out: marked interrupted.
    rows = wait_for(
        lambda: (rows := store_rows(stack)) and not any(r["status"] == "started" for r in rows) and rows,
        6 * LEASE_S,
        "the reaper",
    )
    [interrupted] = [r for r in rows if r["tool"] == "sleep"]
    assert interrupted["status"] == "interrupted"
    audit(stack, answers)
    texts = [a.text for a in answers if not a.infra_error and a.agent.startswith("real")]
    assert texts and all(t.startswith("real-") for t in texts)  # the real toolbox's echo
    docker("start", victim)  # back behind the balancer for the next faults
    wait_for_replicas(stack, 2)


def test_a_killed_world_model_fails_simulated_calls_clearly_and_shadow_work_waits_for_it(stack):
    load = agents(stack, ["real", "real"])
    world_model = stack.container_ids("world-model")[0]
    with client(stack) as http:
        # A world of its own: the model must write its answers (a recorded real session is
        # aligned only with the real world's, see backends/world_state/simulation.py).
        world = "A toolbox whose echo tool repeats its text."
        simulated, _ = reset(http, {"route": "sim", "servers": ["toolbox"], "channels": ["mcp"], "world": world})
        shadowed, _ = reset(http, {"route": "shadow", "servers": ["toolbox"], "channels": ["mcp"]})
        echo = tool_named(http, simulated, "echo")
        docker("kill", world_model)
        asked = time.monotonic()
        body, _ = step(
            http, simulated, {"type": "call_tool", "tool_name": echo, "arguments": {"text": "while the model is down"}}
        )
        took = time.monotonic() - asked
        text = text_of(body["observation"]["result"])
        assert body["info"]["infra_error"] is True and text.startswith("simroute: world model failed"), body
        assert "unreachable" in text and took < 60, (text, took)  # a clear error, within world_model.deadline_s
        # Shadowed calls are answered by the real side; their simulated side waits for the model.
        pending = []
        for n in range(3):
            body, _ = step(
                http, shadowed, {"type": "call_tool", "tool_name": echo, "arguments": {"text": f"shadowed-{n}"}}
            )
            assert text_of(body["observation"]["result"]) == f"shadowed-{n}" and body["info"]["provenance"] == "real", (
                body
            )
            pending.append(body["info"]["record_id"])
        time.sleep(8)  # past the worker's retry (every 5 s): still waiting, not completed with the failure
        rows = {row["id"]: row for row in store_rows(stack)}
        assert [rows[i]["status"] for i in pending] == ["pending"] * 3
        docker("start", world_model)
        done = wait_for(
            lambda: (
                (rows := {row["id"]: row for row in store_rows(stack)})
                and all(rows[i]["status"] == "complete" for i in pending)
                and rows
            ),
            300,
            "the held shadow work to complete once the model is back",
            detail=lambda: situation(stack, load),
        )
        assert all(done[i]["shadow"]["provenance"] == "sim" and not done[i]["shadow"]["is_error"] for i in pending)
        answered = []
        for _ in range(3):  # the model answers again (a malformed answer may take another try)
            body, _ = step(
                http, simulated, {"type": "call_tool", "tool_name": echo, "arguments": {"text": "the model is back"}}
            )
            answered.append(body)
            if not body["info"]["infra_error"]:
                break
        assert not answered[-1]["info"]["infra_error"], answered
    audit(stack, stop_all(load))


def test_an_upstream_server_killed_mid_call_is_a_clear_error_and_the_next_call_works(stack):
    load = agents(stack, ["real", "real"])
    replicas = replica_containers(stack)
    with client(stack) as http:
        episode, home = reset(http, {"route": "real", "servers": ["toolbox"], "channels": ["mcp"]})
        sleep, echo = tool_named(http, episode, "sleep"), tool_named(http, episode, "echo")
        caller = InBackground(http, episode, {"type": "call_tool", "tool_name": sleep, "arguments": {"seconds": 60}})
        wait_for_a_started_sleep(stack)
        assert kill_processes(replicas[home], "/servers/toolbox.py") >= 1
        body, _ = caller.result(120)
        result = body["observation"]["result"]
        assert result.get("isError") and "toolbox" in text_of(result) and time.monotonic() - caller.sent_at < 45, body
        after, _ = step(
            http, episode, {"type": "call_tool", "tool_name": echo, "arguments": {"text": "after the crash"}}
        )
        assert text_of(after["observation"]["result"]) == "after the crash" and not after["observation"]["result"].get(
            "isError"
        ), after
    audit(stack, stop_all(load))


def test_a_sandbox_killed_mid_call_is_a_clear_error_and_the_next_call_works(stack):
    load = agents(stack, ["real"])
    replicas = replica_containers(stack)
    with client(stack) as http:
        episode, home = reset(http, {"route": "real", "channels": ["shell"]})
        shell = tool_named(http, episode, "shell_exec")
        ready, _ = step(
            http, episode, {"type": "call_tool", "tool_name": shell, "arguments": {"command": "echo ready"}}
        )
        assert "ready" in text_of(ready["observation"]["result"]), ready
        command = {"type": "call_tool", "tool_name": shell, "arguments": {"command": "sleep 97", "timeout_s": 120}}
        caller = InBackground(http, episode, command)

        def running_it() -> list[str]:
            tops = {
                c: subprocess.run(["docker", "top", c], capture_output=True, text=True, timeout=30)
                for c in sandboxes_of([replicas[home]])
            }
            return [c for c, top in tops.items() if "sleep 97" in top.stdout]

        [sandbox] = wait_for(running_it, 60, "the sandbox to run the command")
        docker("kill", sandbox)
        body, _ = caller.result(150)
        result = body["observation"]["result"]
        assert result.get("isError") and time.monotonic() - caller.sent_at < 60, body
        after, _ = step(
            http, episode, {"type": "call_tool", "tool_name": shell, "arguments": {"command": "echo after"}}
        )
        assert "after" in text_of(after["observation"]["result"]) and not after["observation"]["result"].get(
            "isError"
        ), after
    audit(stack, stop_all(load))


def test_redis_killed_and_restarted_loses_no_record(stack):
    load = agents(stack, ["real", "real", "sim"])
    wait_for_answers(stack, load, 2, "every agent to be answered twice")
    redis = stack.container_ids("redis")[0]
    docker("kill", redis)
    killed_at = time.monotonic()
    # Calls go on without Redis (the routers' records spool on their disk meanwhile).
    wait_for(
        lambda: all(a.answered_since(killed_at) for a in load if a.route == "real"),
        60,
        "calls answered while Redis is down",
        detail=lambda: situation(stack, load),
    )
    time.sleep(3)
    docker("start", redis)
    restarted_at = time.monotonic()
    wait_for_answers(stack, load, 2, "every agent to go on after the restart", since=restarted_at)
    answers = stop_all(load)
    during = [a for a in answers if killed_at < a.answered_at < restarted_at and a.record_id is not None]
    assert len(during) >= 2, during
    # The spools flush once Redis answers: every call answered while it was down is in the store.
    wanted = {a.record_id for a in answers if a.record_id is not None}
    wait_for(
        lambda: wanted <= {row["id"] for row in store_rows(stack)},
        120,
        "the spooled records to reach Redis",
        detail=lambda: situation(stack, load),
    )
    audit(stack, answers)
