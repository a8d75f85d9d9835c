"""The upstream guard across two `simroute serve` processes sharing one real
redis-server, in front of an HTTP upstream written here that fails, then recovers,
and counts every request it receives (and how many it holds at once).

- the breaker: failures through replica A open it for replica B too; the upstream
  receives nothing while it is open; after the cool-down one trial goes through and
  closes it on both replicas;
- the concurrency cap (1): of two slow calls at once, one through each replica, the
  second is refused (not queued) and the upstream never holds two;
- the budget: a token's calls are counted across replicas; past the budget `429`,
  another token unaffected.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx
import pytest
from kit.launch import free_port, write_config
from kit.serve import parsed, serving

pytestmark = pytest.mark.integration


class Upstream:
    """What the test's upstream does and what it saw."""

    def __init__(self) -> None:
        self.failing = False
        self.delay_s = 0.0
        self.received = 0
        self.holding = 0
        self.most_held = 0
        self.lock = threading.Lock()


@contextmanager
def failing_upstream() -> Iterator[tuple[str, Upstream]]:
    state = Upstream()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            pass

        def do_GET(self):
            with state.lock:
                state.received += 1
                state.holding += 1
                state.most_held = max(state.most_held, state.holding)
            try:
                time.sleep(state.delay_s)
                status = 500 if state.failing else 200
                body = json.dumps({"ok": not state.failing}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            finally:
                with state.lock:
                    state.holding -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def two_replicas(tmp_path, redis_url: str, guard: dict, **sections) -> Iterator[tuple[list[int], list[int]]]:
    """Two `simroute serve` processes on one Redis store; yields their proxy and MCP ports."""
    proxies = [free_port(), free_port()]
    mcp_ports = []
    with ExitStack() as stack:
        for name, proxy_port in zip(("a", "b"), proxies, strict=True):
            (tmp_path / name).mkdir()
            config = write_config(tmp_path / name, store={"url": redis_url}, upstream_guard=guard, **sections)
            mcp_ports.append(stack.enter_context(serving(config, tmp_path / f"{name}.log", http_port=proxy_port)))
        yield proxies, mcp_ports


def refusal(response: httpx.Response) -> str | None:
    """The guard's reason for refusing, or None for an answer of the upstream."""
    if response.headers.get("x-simroute-provenance") != "none":
        return None
    return response.json().get("reason")


def test_a_breaker_opened_through_one_replica_refuses_on_the_other_until_a_trial_closes_it(tmp_path, redis_server):
    guard = {"defaults": {"breaker_failures": 3, "breaker_cooldown_s": 2}}
    with failing_upstream() as (url, upstream), two_replicas(tmp_path, redis_server.url, guard) as (proxies, mcp_ports):
        a, b = (httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=30) for port in proxies)
        upstream.failing = True
        for _ in range(3):  # the upstream's own 500s, through A
            failed = a.get(f"{url}/x")
            assert failed.status_code == 500 and failed.headers["x-simroute-provenance"] == "real"
        assert upstream.received == 3

        refused = b.get(f"{url}/x")  # B never saw a failure: the breaker is shared
        assert refused.status_code == 503 and refusal(refused) == "breaker_open"
        assert 1 <= int(refused.headers["retry-after"]) <= 2
        assert "circuit breaker is open after 3 consecutive failures" in refused.json()["error"]
        assert refusal(a.get(f"{url}/x")) == "breaker_open"
        assert upstream.received == 3  # nothing reached the upstream while open

        metrics = parsed(httpx.get(f"http://127.0.0.1:{mcp_ports[1]}/metrics").text)
        host = url.removeprefix("http://")
        assert metrics[("simroute_upstream_refusals_total", (("reason", "breaker_open"), ("upstream", host)))] == 1
        assert metrics[("simroute_upstream_breaker", (("state", "open"), ("upstream", host)))] == 1

        time.sleep(2.2)  # the cool-down
        upstream.failing = False
        trial = b.get(f"{url}/x")
        assert trial.status_code == 200 and trial.headers["x-simroute-provenance"] == "real"
        assert upstream.received == 4
        for client in (a, b, a, b):  # closed on both replicas
            assert client.get(f"{url}/x").status_code == 200
        assert upstream.received == 8
        metrics = parsed(httpx.get(f"http://127.0.0.1:{mcp_ports[0]}/metrics").text)
        assert metrics[("simroute_upstream_breaker", (("state", "closed"), ("upstream", host)))] == 1
        for client in (a, b):
            client.close()


def test_a_concurrency_cap_of_one_refuses_a_second_call_on_the_other_replica(tmp_path, redis_server):
    """Refused, not queued: the agent gets a 503 with Retry-After at once."""
    guard = {"defaults": {"max_concurrent": 1}}
    with failing_upstream() as (url, upstream), two_replicas(tmp_path, redis_server.url, guard) as (proxies, _):
        clients = [httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=30) for port in proxies]
        for client in clients:  # warm: the first request through each replica pays its start-up
            assert client.get(f"{url}/warm").status_code == 200
        upstream.received, upstream.delay_s = 0, 1.5
        barrier = threading.Barrier(2)

        def slow_call(client: httpx.Client) -> tuple[float, httpx.Response]:
            barrier.wait()
            started = time.monotonic()
            response = client.get(f"{url}/slow")
            return time.monotonic() - started, response

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(slow_call, clients))
        reasons = sorted(str(refusal(response)) for _, response in results)
        assert reasons == ["None", "concurrency"]
        [(refused_after, refused)] = [(t, r) for t, r in results if refusal(r) == "concurrency"]
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused_after < 1.0  # refused at once, not queued behind the slow call
        assert upstream.received == 1 and upstream.most_held == 1
        upstream.delay_s = 0.0
        assert all(client.get(f"{url}/after").status_code == 200 for client in clients)  # the slot came back
        for client in clients:
            client.close()


def test_a_tokens_budget_is_counted_across_replicas(tmp_path, redis_server):
    tokens = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
    guard = {"defaults": {"budget": 3, "budget_window_s": 600}}
    with (
        failing_upstream() as (url, upstream),
        two_replicas(tmp_path, redis_server.url, guard, service={"tokens": tokens}) as (proxies, _),
    ):

        def client(token: str, port: int) -> httpx.Client:
            return httpx.Client(proxy=f"http://agent:{tokens[token]}@127.0.0.1:{port}", timeout=30)

        alice = [client("alice", port) for port in proxies]
        # The window may turn over mid-test only if it starts within a few seconds of its end.
        if 600 - time.time() % 600 < 10:
            time.sleep(600 - time.time() % 600 + 0.1)
        for i in range(3):
            assert alice[i % 2].get(f"{url}/x").status_code == 200
        spent = alice[1].get(f"{url}/x")
        assert spent.status_code == 429 and refusal(spent) == "budget"
        assert 0 < int(spent.headers["retry-after"]) <= 600
        assert "this token's budget of 3 calls per 600s is spent" in spent.json()["error"]
        assert refusal(alice[0].get(f"{url}/x")) == "budget"
        bob = client("bob", proxies[0])
        assert bob.get(f"{url}/x").status_code == 200
        assert upstream.received == 4
        for each in (*alice, bob):
            each.close()
