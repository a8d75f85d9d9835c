"""The deployment: docker-compose.yml built and brought up with two router replicas,
driven through its one address (the balancer), and taken down leaving nothing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid

import httpx2
import pytest
import yaml
from kit.compose import ROOT, ComposeStack, compose_command
from kit.launch import simroute_executable
from kit.stack_clients import SLOT, balancer_table, health, replica_containers, wait_for_replicas
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from router.cli.launch import free_port

pytestmark = pytest.mark.integration


def test_compose_file_needs_a_token_and_scales_one_router_service():
    env = {k: v for k, v in os.environ.items() if k != "SIMROUTE_TOKEN"}
    command = [*compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode != 0 and "SIMROUTE_TOKEN" in out.stderr  # no deployment without a token
    env["SIMROUTE_TOKEN"] = "compose-test-token-0123456789"
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    assert set(services) == {"balancer", "router", "worker", "redis", "world-model"}
    # Only the balancer publishes ports, on loopback; replicas scale without port clashes.
    assert [name for name, service in services.items() if service.get("ports")] == ["balancer"]
    # (docker-compose 1.x prints "127.0.0.1:8765:8765"; Compose v2 a mapping)
    host_ips = {
        port.split(":")[0] if isinstance(port, str) else port["host_ip"] for port in services["balancer"]["ports"]
    }
    assert host_ips == {"127.0.0.1"}
    assert services["worker"]["command"][:1] == ["worker"]
    # Every image builds from the Debian base the set-up imports: nothing to pull.
    for dockerfile in [
        "Dockerfile",
        "deploy/world-model/Dockerfile",
        "deploy/redis/Dockerfile",
        "deploy/balancer/Dockerfile",
    ]:
        bases = [line.split()[1] for line in (ROOT / dockerfile).read_text().splitlines() if line.startswith("FROM ")]
        assert bases[0] == "debian:trixie-slim", dockerfile


@pytest.mark.parametrize("config", ["simroute.yaml", "simroute-shell.yaml"])
def test_deployed_configs_are_valid(config):
    out = subprocess.run(
        [simroute_executable(), "check-config", "--config", str(ROOT / "deploy" / config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "1 server(s)" in out.stdout and "store redis://redis:6379/0" in out.stdout
    # The shell channel is opt-in (deploy/compose.shell.yml mounts the Docker socket).
    assert yaml.safe_load((ROOT / "deploy" / config).read_text())["shell"]["enabled"] is (
        config == "simroute-shell.yaml"
    )


def test_stack_builds_comes_up_scaled_serves_sticky_and_leaves_nothing():
    stack = ComposeStack(port=free_port(), proxy_port=free_port())
    started = time.monotonic()
    stack.build()
    try:
        stack.up(routers=2)
        assert len(stack.container_ids("router")) == 2
        redis = stack.container_ids("redis")[0]
        appendonly = subprocess.run(
            ["docker", "exec", redis, "redis-cli", "CONFIG", "GET", "appendonly"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert appendonly.stdout.split() == ["appendonly", "yes"]
        names: dict[str, str] = {}
        homes = stack.timed("health", lambda: wait_for_replicas(stack, 2, names=names))
        assert set(homes.values()) == {"router1", "router2"}  # both replicas healthy behind one address
        # Each answer names the replica's container (its host name, a prefix of its id), not the slot.
        containers = replica_containers(stack)
        assert all(containers[slot].startswith(name) and name for slot, name in names.items()), (names, containers)
        mcp_replicas, mcp_session = stack.timed("mcp", lambda: asyncio.run(mcp_session_calls(stack, calls=5)))
        assert len(set(mcp_replicas)) == 1, mcp_replicas  # every request of one MCP session on one replica
        assert balancer_table(stack, "mcp_sessions")[mcp_session] == mcp_replicas[0].removeprefix("router")
        stack.timed("episode", simulated_episode, stack)
        assert 'POST /v1/chat/completions HTTP/1.1" 200' in stack.logs("world-model")  # the model answered
        proxied_through_balancer(stack)
        stack.timed("failover", sessions_move_off_a_stopped_replica, stack, homes)
    finally:
        stack.down()
    assert stack.leftovers() == {"containers": [], "networks": [], "volumes": [], "images": []}
    print(
        f"stack test: {time.monotonic() - started:.0f}s; "
        + ", ".join(f"{k} {v:.0f}s" for k, v in stack.timings.items())
    )


def sessions_move_off_a_stopped_replica(stack: ComposeStack, homes: dict[str, str]) -> None:
    """One replica stopped: once the health checks mark it down, the sessions it held
    are served by the other one; the others stay where they were."""
    subprocess.run(
        ["docker", "stop", "-t", "2", stack.container_ids("router")[0]], check=True, capture_output=True, timeout=60
    )
    with httpx2.Client(headers={"Authorization": f"Bearer {stack.token}"}, timeout=5) as http:
        deadline = time.monotonic() + 60
        while True:
            answers = {session: health(http, stack, session) for session in homes}
            now = {s: r.headers[SLOT] for s, r in answers.items() if r is not None and r.status_code == 200}
            if len(now) == len(homes) and len(set(now.values())) == 1:
                break
            assert time.monotonic() < deadline, f"sessions did not move off the stopped replica: {now}"
            time.sleep(0.5)
    survivor = next(iter(now.values()))
    assert sorted(homes.values()) == ["router1", "router2"] and survivor in homes.values()
    moved = [s for s in homes if homes[s] != survivor]
    assert len(moved) == 1 and now[moved[0]] == survivor  # the stopped replica's session moved


async def mcp_session_calls(stack: ComposeStack, calls: int) -> tuple[list[str], str]:
    """An MCP client (the SDK's streamable HTTP transport) on one session: initialise,
    list the tools, call the deployed time server `calls` times; the replica of every
    HTTP request it made, and the session's id."""
    served: list[str] = []
    session_ids: set[str] = set()

    async def note(response: httpx2.Response) -> None:
        served.append(response.headers.get(SLOT, "none"))
        if "mcp-session-id" in response.headers:
            session_ids.add(response.headers["mcp-session-id"])

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {stack.token}"},
        timeout=httpx2.Timeout(30, read=300),
        event_hooks={"response": [note]},
    )
    async with http, streamable_http_client(f"{stack.url}/mcp", http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            tool = next(name for name in tools if name.endswith("get_current_time"))
            for _ in range(calls):
                result = await session.call_tool(tool, {"timezone": "UTC"})
                assert not result.is_error, result
                assert json.loads(result.content[0].text)["timezone"] == "UTC"  # the real server's answer
    assert len(served) >= calls + 2 and len(session_ids) == 1
    return served, session_ids.pop()


def simulated_episode(stack: ComposeStack) -> None:
    """The REST episode API through the balancer: a reset routed to simulation, steps
    answered by the world-model container, all on the replica holding the episode."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx2.Client(base_url=stack.url, headers=headers, timeout=180) as http:
        # A world of its own: the model writes its answers (a recorded real session is aligned
        # only with the real world's, see backends/world_state/simulation.py).
        options = {"route": "sim", "servers": ["time"], "world": "A clock shop whose clocks all show UTC."}
        reset = http.post("/episodes", json={"seed": 7, "options": options})
        assert reset.status_code == 201, reset.text
        episode = reset.json()["episode_id"]
        assert reset.headers["location"] == f"/episodes/{episode}"
        home = reset.headers[SLOT]
        assert balancer_table(stack, "episodes")[episode] == home.removeprefix("router")  # learnt from Location
        tools = http.post(f"/episodes/{episode}/step", json={"type": "list_tools"})
        assert tools.status_code == 200, tools.text
        tool = next(t["name"] for t in tools.json()["observation"]["tools"] if t["name"].endswith("get_current_time"))
        step = http.post(
            f"/episodes/{episode}/step", json={"type": "call_tool", "tool_name": tool, "arguments": {"timezone": "UTC"}}
        )
        assert step.status_code == 200, step.text
        assert step.headers[SLOT] == home  # the episode lives on the replica that reset it
        info, result = step.json()["info"], step.json()["observation"]["result"]
        assert (info["route"], info["provenance"], info["infra_error"]) == ("sim", "sim", False), step.json()
        assert not result.get("isError", result.get("is_error")), result
        text = result["content"][0]["text"]
        assert text.strip() and not text.startswith("simroute:"), text  # the model's answer, not an error
        state = http.get(f"/episodes/{episode}/state")
        assert (state.status_code, state.headers[SLOT], state.json()["step_count"]) == (
            200,
            home,
            1,
        )  # list_tools is no step
        assert http.delete(f"/episodes/{episode}").status_code == 204


def proxied_through_balancer(stack: ComposeStack) -> None:
    """The HTTP proxy channel through the balancer's TCP frontend, the session as the
    proxy user name: a replica's proxy answers (the upstream does not exist here), and
    every connection of one session goes to the replica the balancer keeps for it."""
    sessions = [f"agent-{n}" for n in range(6)]
    for _ in range(2):
        for session in sessions:  # a connection each (a client per request)
            proxy = f"http://{session}:{stack.token}@127.0.0.1:{stack.proxy_port}"
            with httpx2.Client(proxy=proxy, timeout=60, trust_env=False) as http:
                response = http.get("http://upstream.invalid/")
            assert response.headers.get("x-simroute-provenance") == "none", (response.status_code, response.text)
    table = balancer_table(stack, "proxy_sessions")
    assert set(table) == set(sessions)  # the key is the proxy user name, decoded from Proxy-Authorization
    assert set(table.values()) == {"1", "2"}  # spread over both replicas (source balancing alone would not)


def test_an_extra_ca_given_to_the_build_is_trusted_in_the_image(tmp_path):
    """EXTRA_CA_CERT (docker-compose: SIMROUTE_EXTRA_CA_CERT) joins the CA store of the
    Python images, the one their TLS clients use (SSL_CERT_FILE)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"simroute extra CA {uuid.uuid4().hex[:8]}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder(
            subject_name=name, issuer_name=name, public_key=key.public_key(), serial_number=x509.random_serial_number()
        )
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    tag = f"simroute-ca-test:{uuid.uuid4().hex[:10]}"
    build = [
        "docker",
        "build",
        "-q",
        "--target",
        "runtime",
        "--build-arg",
        f"EXTRA_CA_CERT={pem}",
        "-t",
        tag,
        str(ROOT),
    ]
    out = subprocess.run(build, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    try:
        check = (
            "import os, ssl; "
            "print([c['subject'] for c in "
            "ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE']).get_ca_certs()])"
        )
        out = subprocess.run(
            ["docker", "run", "--rm", tag, "python3", "-c", check], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value in out.stdout  # trusted beside Debian's CAs
        assert out.stdout.count("commonName") > 100
    finally:
        subprocess.run(["docker", "rmi", tag], capture_output=True, timeout=120)
