"""No way around the HTTP channel's gate, end to end through `simroute http-proxy`
launched as a user launches it: raw TCP after CONNECT, WebSockets, body limits and
compression bombs, host/path normalisation, metadata addresses, proxy tokens."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
import websockets.sync.client
import websockets.sync.server
from kit.http import Listener, http_config, scripted_dns
from kit.launch import simroute_executable
from servers.http_upstream import serve_upstream

pytestmark = pytest.mark.integration

TOKEN = "t0ken-for-the-perimeter-tests"


def connect_tunnel(proxy_port: int, target: str, *, auth: str | None = None) -> tuple[socket.socket, bytes]:
    sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    extra = f"Proxy-Authorization: Basic {base64.b64encode(auth.encode()).decode()}\r\n" if auth else ""
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, head


def read_until_closed(sock: socket.socket, timeout: float = 10) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def test_raw_tcp_after_connect_is_refused_before_a_byte_reaches_the_target_and_recorded(proxy):
    target = Listener()
    try:
        p = proxy(mode="deny")
        sock, head = connect_tunnel(p.port, f"127.0.0.1:{target.port}")
        assert head.startswith(b"HTTP/1.1 200")  # the tunnel opens; nothing is connected yet
        sock.sendall(b"\x00\x01SECRET raw bytes, not HTTP\n")
        assert read_until_closed(sock) == b""  # closed without an answer
        sock.close()
        time.sleep(0.5)
        assert target.connections == 0 and target.received == b""
        [row] = p.records()
        assert (row["channel"], row["server"], row["tool"], row["route"], row["policy"]) == (
            "http",
            f"127.0.0.1:{target.port}",
            "TCP",
            "deny",
            "http-tcp",
        )

        # The default mode (real) refuses raw TCP too: only a rule opens a tunnel.
        p.stop()
        p = proxy()
        sock, _ = connect_tunnel(p.port, f"127.0.0.1:{target.port}")
        sock.sendall(b"SSH-2.0-probe\r\n")
        assert read_until_closed(sock) == b"" and target.connections == 0
        sock.close()
    finally:
        target.close()


def test_a_rule_lets_one_tunnel_through_recorded_with_byte_counts(proxy):
    target = Listener()
    try:
        rule = {
            "name": "db-tunnel",
            "match": {"channel": "http", "tool": "TCP", "server": f"127.0.0.1:{target.port}"},
            "route": "real",
        }
        p = proxy(rules=[rule], http={"tunnel_first_bytes_s": 0.3})
        sock, _ = connect_tunnel(p.port, f"127.0.0.1:{target.port}")
        sock.sendall(b"\x00PING\n")
        sock.settimeout(10)
        assert sock.recv(100) == b"\x00PING\n"
        time.sleep(0.8)  # past the wait for first bytes: the tunnel, decided by them, carries on
        sock.sendall(b"\x00PONG\n")
        assert sock.recv(100) == b"\x00PONG\n"
        sock.close()
        [row] = p.records_when_written()
        assert (row["tool"], row["route"], row["policy"], row["provenance"]) == (
            "TCP",
            "real",
            "rules:db-tunnel",
            "real",
        )
        assert (
            row["observation"]["structured"]["bytes_from_client"] == 12
            and row["observation"]["structured"]["bytes_from_server"] == 12
        )
        assert "Traceback" not in p.log.read_text()  # the expired wait disturbed nothing
    finally:
        target.close()


class Greeter(Listener):
    """A server that speaks first (an SMTP-like banner), then says goodbye to the first
    line; it counts the connections it got and the bytes it received."""

    BANNER = b"220 mail.test ESMTP ready\r\n"

    def greet(self, conn) -> None:
        conn.sendall(self.BANNER)

    def answer(self, conn, data: bytes) -> bool:
        conn.sendall(b"221 bye\r\n")
        return False


@pytest.mark.serial
def test_a_silent_client_tunnel_is_raw_tcp_refused_without_touching_the_target_and_recorded(proxy):
    target = Greeter()
    try:
        p = proxy(mode="deny", http={"tunnel_first_bytes_s": 0.5})
        sock, head = connect_tunnel(p.port, f"127.0.0.1:{target.port}")
        assert head.startswith(b"HTTP/1.1 200")
        sock.settimeout(10)
        started = time.monotonic()
        assert sock.recv(100) == b""  # closed by the proxy (not by mitmproxy's idle timeout): no banner
        assert time.monotonic() - started < 5
        sock.close()
        time.sleep(0.5)
        assert target.connections == 0
        [row] = p.records()
        assert (row["channel"], row["server"], row["tool"], row["route"], row["policy"]) == (
            "http",
            f"127.0.0.1:{target.port}",
            "TCP",
            "deny",
            "http-tcp",
        )
        assert "sent nothing within 0.5s" in row["observation"]["content"][0]["text"]
    finally:
        target.close()


def test_a_rule_lets_a_server_speaks_first_tunnel_through_recorded_with_byte_counts(proxy):
    target = Greeter()
    try:
        rule = {
            "name": "smtp",
            "match": {"channel": "http", "tool": "TCP", "server": f"127.0.0.1:{target.port}"},
            "route": "real",
        }
        p = proxy(rules=[rule], http={"tunnel_first_bytes_s": 0.5})
        sock, _ = connect_tunnel(p.port, f"127.0.0.1:{target.port}")
        sock.settimeout(10)
        banner = b""
        while not banner.endswith(b"\r\n"):
            banner += sock.recv(100)
        assert banner == Greeter.BANNER  # the client said nothing: the server spoke first, through the tunnel
        sock.sendall(b"QUIT\r\n")
        assert read_until_closed(sock) == b"221 bye\r\n"
        sock.close()
        [row] = p.records_when_written()
        assert (row["tool"], row["route"], row["policy"], row["provenance"]) == ("TCP", "real", "rules:smtp", "real")
        counts = row["observation"]["structured"]
        assert (counts["bytes_from_client"], counts["bytes_from_server"]) == (6, len(Greeter.BANNER) + 9)
        assert target.received == b"QUIT\r\n"
    finally:
        target.close()


@pytest.fixture
def echo_socket():
    def echo(connection):
        for message in connection:
            connection.send(f"echo: {message}")

    with websockets.sync.server.serve(echo, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"ws://127.0.0.1:{server.socket.getsockname()[1]}/chat"
        server.shutdown()


def test_websocket_is_a_call_deny_403_real_recorded_at_close_sim_501(proxy, echo_socket):
    p = proxy(mode="deny")
    with pytest.raises(websockets.exceptions.InvalidStatus) as denied:
        websockets.sync.client.connect(echo_socket, proxy=p.url, open_timeout=10)
    assert denied.value.response.status_code == 403
    p.stop()

    p = proxy()
    with websockets.sync.client.connect(
        echo_socket, proxy=p.url, open_timeout=10, additional_headers={"X-Simroute-Session": "chatter"}
    ) as ws:
        ws.send("hello")
        assert ws.recv(timeout=10) == "echo: hello"
        ws.send("again")
        assert ws.recv(timeout=10) == "echo: again"
    [row] = p.records_when_written()
    socket_record = row["observation"]["structured"]["websocket"]
    assert row["session"] == "chatter" and row["route"] == "real" and row["observation"]["structured"]["status"] == 101
    assert socket_record["from_client"]["messages"] == 2 and socket_record["from_server"]["messages"] == 2
    assert [m["text"] for m in socket_record["messages"]] == ["hello", "echo: hello", "again", "echo: again"]
    p.stop()

    p = proxy(rules=[{"match": {"channel": "http"}, "route": "sim"}])
    with pytest.raises(websockets.exceptions.InvalidStatus) as simulated:
        websockets.sync.client.connect(echo_socket, proxy=p.url, open_timeout=10)
    assert simulated.value.response.status_code == 501
    [row] = p.records()
    assert "WebSocket" in row["observation"]["structured"]["body"]


def test_websocket_under_a_replay_route_gets_501_with_a_reason_recorded(proxy, echo_socket):
    p = proxy(rules=[{"name": "replay-all", "match": {"channel": "http"}, "route": "replay"}])
    with pytest.raises(websockets.exceptions.InvalidStatus) as replayed:
        websockets.sync.client.connect(echo_socket, proxy=p.url, open_timeout=10)
    answer = replayed.value.response
    assert answer.status_code == 501 and answer.headers["x-simroute-route"] == "replay"
    assert "cannot be replayed" in json.loads(answer.body)["error"]
    [row] = p.records()
    assert (row["route"], row["policy"]) == ("replay", "rules:replay-all")
    assert "WebSocket cannot be replayed" in row["observation"]["structured"]["body"]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def gzip_of_zeros(size: int) -> bytes:
    """`size` zero bytes, gzip-encoded as members of 64 MiB one after another (gzip allows it)."""
    member = gzip.compress(bytes(64 << 20), 9)
    return member * (size // (64 << 20))


def test_body_limits_413_before_routing_and_a_gzip_bomb_is_decoded_boundedly(proxy, upstream):
    p = proxy(http={"max_request_bytes": 4 * 1024 * 1024, "max_decoded_bytes": 8 * 1024 * 1024})
    with httpx.Client(proxy=p.url, timeout=60) as client:
        too_big = client.post(f"{upstream}/echo", content=b"x" * (5 * 1024 * 1024))
        assert too_big.status_code == 413 and "max_request_bytes" in too_big.json()["error"]
        assert too_big.headers["x-simroute-record"]

        def chunks():
            for _ in range(6):
                yield b"y" * (1024 * 1024)

        chunked = client.post(f"{upstream}/echo", content=chunks())  # no Content-Length: cut while it streams in
        assert chunked.status_code == 413

        bomb = gzip_of_zeros(2 * 1024 * 1024 * 1024)  # 2 GiB of zeros in about 2 MB
        assert len(bomb) < 4 * 1024 * 1024
        before = rss_kib(p.process.pid)
        answer = client.post(
            f"{upstream}/echo",
            content=bomb,
            headers={"Content-Encoding": "gzip", "Content-Type": "application/octet-stream"},
        )
        after = rss_kib(p.process.pid)
    assert answer.status_code == 200  # forwarded as sent: the upstream decides what to do with it
    assert after - before < 200 * 1024, f"the proxy grew by {(after - before) // 1024} MiB"
    rows = p.records()
    assert [(r["policy"], r["route"]) for r in rows[:2]] == [("http-body-limit", "deny"), ("http-body-limit", "deny")]
    assert rows[0]["id"] == too_big.headers["x-simroute-record"]
    assert "decoded body cut" in rows[2]["note"] and rows[2]["arguments"]["body"]["size"] <= 8 * 1024 * 1024


def test_rules_see_normalised_hosts_and_paths_and_contradicting_hosts_get_400(proxy, upstream):
    deny = {
        "name": "no-admin",
        "match": {"channel": "http", "server": "api.example.test", "arguments": {"path": "/admin/*"}},
        "route": "deny",
    }
    p = proxy(rules=[deny])
    with httpx.Client(proxy=p.url, timeout=20) as client:
        for url in (
            "http://api.example.test/admin/x",
            "http://API.Example.TEST./admin/x",
            "http://api.example.test/%61dmin/x",
            "http://api.example.test/public/../admin/x",
        ):
            answer = client.get(url)
            assert answer.status_code == 403 and answer.headers["x-simroute-route"] == "deny", url
        # What goes upstream is the normalised request.
        echoed = client.get(f"{upstream}/%65cho/./x").json()
        assert echoed["path"].startswith("/echo/x")
    assert [r["policy"] for r in p.records()[:4]] == ["rules:no-admin"] * 4

    host = upstream.removeprefix("http://")
    raw = _raw_request(p.port, f"GET {upstream}/echo HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 400") and b"Host header" in raw
    raw = _raw_request(p.port, f"GET {upstream}/../../etc/passwd HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 400") and b"climbs above the root" in raw
    assert [r["policy"] for r in p.records()[-2:]] == ["http-normalize", "http-normalize"]


def _raw_request(port: int, text: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(text.encode())
        return read_until_closed(sock, timeout=5)


def test_cloud_metadata_and_link_local_addresses_are_refused_and_recorded(proxy):
    p = proxy()
    with httpx.Client(proxy=p.url, timeout=20) as client:
        for url in (
            "http://169.254.169.254/latest/meta-data/iam/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://169.254.1.1/",
        ):
            answer = client.get(url)
            error = answer.json()["error"]
            assert answer.status_code == 403 and ("metadata" in error or "link-local" in error), url
    raw = _raw_request(
        p.port, "GET http://[fd00:ec2::254]/latest/ HTTP/1.1\r\nHost: [fd00:ec2::254]\r\nConnection: close\r\n\r\n"
    )
    assert raw.startswith(b"HTTP/1.1 403") and b"metadata address" in raw
    assert [r["policy"] for r in p.records()] == ["http-address"] * 4


def test_a_name_is_checked_on_its_addresses_and_connected_to_the_address_checked(proxy, upstream, tmp_path):
    port = int(upstream.rsplit(":", 1)[1])
    names: list[str] = []
    with serve_upstream(tls_dir=tmp_path, server_names=names) as tls_upstream:
        tls_port = int(tls_upstream.rsplit(":", 1)[1])
        # DNS rebinding: the first answer (the one checked) is the upstream; every later
        # one is an address the check never saw, where a trap listens on the same port.
        echo = Listener()
        traps = [Listener("127.0.0.2", port), Listener("127.0.0.2", tls_port), Listener("127.0.0.2", echo.port)]
        try:
            rebinding = ["127.0.0.1", "127.0.0.2"]
            tunnel = {
                "match": {"channel": "http", "tool": "TCP", "server": f"tcp-rebind.test:{echo.port}"},
                "route": "real",
            }
            p = proxy(
                env=scripted_dns(
                    {
                        "inner.test": ["169.254.7.7"],
                        "rebind.test": rebinding,
                        "tls-rebind.test": rebinding,
                        "tcp-rebind.test": rebinding,
                    }
                ),
                rules=[tunnel],
            )
            with httpx.Client(proxy=p.url, verify=ssl.create_default_context(cafile=p.ca_cert), timeout=20) as client:
                refused = client.get(f"http://inner.test:{port}/echo")
                assert refused.status_code == 403 and "link-local" in refused.json()["error"]
                plain = client.get(f"http://rebind.test:{port}/echo")
                assert plain.status_code == 200, plain.text
                assert (
                    plain.json()["headers"]["host"] == f"rebind.test:{port}"
                )  # the name still, only the address pinned
                secure = client.get(f"https://tls-rebind.test:{tls_port}/json")
                assert secure.status_code == 200 and secure.json()["ok"] is True, secure.text
            sock, _ = connect_tunnel(p.port, f"tcp-rebind.test:{echo.port}")
            sock.sendall(b"\x00raw\n")
            sock.settimeout(10)
            assert sock.recv(100) == b"\x00raw\n" and echo.connections == 1
            sock.close()
        finally:
            for listener in (echo, *traps):
                listener.close()
    assert [trap.connections for trap in traps] == [0, 0, 0]
    assert names == ["tls-rebind.test"]  # TLS asked for the name, not the pinned address
    rows = p.records()
    assert [(r["server"], r["policy"], r["route"]) for r in rows[:1]] == [
        (f"inner.test:{port}", "http-address", "deny")
    ]
    assert [r["observation"]["structured"]["status"] for r in rows[1:3]] == [200, 200]


def test_with_a_token_the_proxy_needs_session_and_token_and_namespaces_sessions(proxy, upstream, tmp_path):
    p = proxy(env={"SIMROUTE_TOKEN": TOKEN})
    with httpx.Client(proxy=p.url, timeout=20) as client:
        assert client.get(f"{upstream}/json").status_code == 407
    with httpx.Client(proxy=p.url.replace("http://", "http://agent-1:wrong-token-wrong-token@"), timeout=20) as client:
        assert client.get(f"{upstream}/json").status_code == 407
    with httpx.Client(proxy=p.url.replace("http://", f"http://agent-1:{TOKEN}@"), timeout=20) as client:
        ok = client.get(f"{upstream}/echo")
    assert ok.status_code == 200 and "proxy-authorization" not in ok.json()["headers"]
    sock, head = connect_tunnel(p.port, "127.0.0.1:9")
    assert head.startswith(b"HTTP/1.1 407")  # no tunnel without a token either
    sock.close()
    rows = p.records()
    assert [(r["policy"], r["route"]) for r in rows[:2]] == [("proxy-auth", "deny")] * 2
    assert rows[2]["session"] == "default/agent-1"

    # Beyond loopback, no start without a token.
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    config = http_config(open_dir, http={"listen_host": "0.0.0.0"})
    out = subprocess.run(
        [simroute_executable(), "http-proxy", "--config", str(config), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "SIMROUTE_TOKEN" in out.stderr and "0.0.0.0" in out.stderr
