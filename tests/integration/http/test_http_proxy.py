"""The HTTP(S) channel end to end: `simroute http-proxy` launched as a user launches
it, real clients (curl, httpx, requests) through it to real local upstreams,
plain HTTP and HTTPS with simroute's CA."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import ssl
import subprocess
import time

import httpx2 as httpx
import pytest
import requests
from kit.http import http_config
from kit.launch import simroute_executable

pytestmark = pytest.mark.integration


def curl(proxy, *args) -> tuple[dict[str, str], str, int]:
    out = subprocess.run(
        ["curl", "-s", "-i", "--max-time", "20", "-x", proxy.url, *args], capture_output=True, text=True, timeout=30
    )
    head, _, body = out.stdout.replace("\r\n", "\n").partition("\n\n")
    while head.startswith("HTTP/1.1 200 Connection established"):  # the CONNECT answer of HTTPS
        head, _, body = body.partition("\n\n")
    lines = head.split("\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return headers, body, int(lines[0].split()[1])


def test_real_route_with_curl_carries_provenance_and_is_recorded(proxy, upstream):
    p = proxy()
    headers, body, status = curl(p, "-H", "X-Simroute-Session: agent-1", f"{upstream}/echo?b=2&a=1")
    assert status == 200 and headers["x-simroute-provenance"] == "real" and headers["x-simroute-route"] == "real"
    echo = json.loads(body)
    assert "x-simroute-session" not in echo["headers"]  # the session header never reaches the upstream
    [row] = p.records()
    assert row["id"] == headers["x-simroute-record"]
    assert (row["session"], row["channel"], row["tool"], row["provenance"]) == ("agent-1", "http", "GET", "real")
    assert row["server"] == upstream.removeprefix("http://")
    assert row["arguments"]["url"] == f"{upstream}/echo?a=1&b=2" and row["arguments"]["query"] == {"a": "1", "b": "2"}
    recorded = row["observation"]["structured"]
    assert recorded["status"] == 200 and json.loads(recorded["body"]) == echo
    assert row["observation"]["content"][0]["text"].startswith("HTTP/1.1 200 OK\n")


def test_https_with_simroutes_ca_for_curl_requests_and_httpx(proxy, tls_upstream):
    p = proxy()
    headers, body, status = curl(p, "--cacert", str(p.ca_cert), f"{tls_upstream}/json")
    assert status == 200 and headers["x-simroute-provenance"] == "real" and json.loads(body)["ok"] is True
    response = requests.get(f"{tls_upstream}/json", proxies={"https": p.url}, verify=str(p.ca_cert), timeout=20)
    assert response.status_code == 200 and response.headers["X-Simroute-Provenance"] == "real"
    with httpx.Client(proxy=p.url, verify=ssl.create_default_context(cafile=p.ca_cert), timeout=20) as client:
        response = client.post(f"{tls_upstream}/echo", json={"hello": "world"})
    assert response.json()["body"] == '{"hello":"world"}' and response.headers["x-simroute-provenance"] == "real"
    rows = p.records()
    assert [r["arguments"]["method"] for r in rows] == ["GET", "GET", "POST"]
    assert rows[2]["arguments"]["body"] == {"hello": "world"} and rows[2]["arguments"]["url"].startswith("https://")
    # Without trusting the CA, the client refuses the connection: nothing is decrypted silently.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{tls_upstream}/json", proxies={"https": p.url}, timeout=20)


def test_deny_rule_by_host_method_and_path_answers_403_with_a_json_reason(proxy, upstream):
    host = upstream.removeprefix("http://")
    deny = {
        "name": "no-deletes",
        "match": {"channel": "http", "server": host, "tool": "DELETE", "arguments": {"path": "/echo*"}},
        "route": "deny",
        "reason": "no deletes in tests",
    }
    p = proxy(rules=[deny])
    with httpx.Client(proxy=p.url, timeout=20) as client:
        denied = client.delete(f"{upstream}/echo/7")
        allowed = client.get(f"{upstream}/echo/7")
    assert denied.status_code == 403 and denied.headers["x-simroute-provenance"] == "none"
    assert denied.headers["x-simroute-route"] == "deny" and "no deletes in tests" in denied.json()["error"]
    assert allowed.status_code == 200 and allowed.headers["x-simroute-provenance"] == "real"
    assert [(r["route"], r["policy"]) for r in p.records()] == [("deny", "rules:no-deletes"), ("real", "mode")]


def test_https_requests_that_do_not_go_real_need_no_reachable_upstream_and_down_ones_get_502(proxy):
    offline = f"127.0.0.1:{_closed_port()}"
    p = proxy(rules=[{"match": {"channel": "http", "server": offline}, "route": "deny", "reason": "offline host"}])
    headers, body, status = curl(p, "--cacert", str(p.ca_cert), f"https://{offline}/v1/things")
    assert status == 403 and headers["x-simroute-provenance"] == "none" and "offline host" in json.loads(body)["error"]
    down = f"127.0.0.1:{_closed_port()}"  # no rule: it goes real, and the upstream is down
    headers, body, status = curl(p, "--cacert", str(p.ca_cert), f"https://{down}/v1/things")
    assert status == 502 and headers["x-simroute-provenance"] == "none" and "failed" in json.loads(body)["error"]
    denied, failed = p.records()
    assert denied["server"] == offline and denied["arguments"]["url"] == f"https://{offline}/v1/things"
    assert failed["server"] == down and failed["observation"]["structured"]["status"] == 502


def test_replay_matches_noisy_query_and_body_fields(proxy, upstream):
    http = {"ignore_query": ["ts"], "ignore_body_fields": ["meta.request_id"]}
    replay = {"match": {"channel": "http"}, "route": "replay"}
    p = proxy(http=http, rules=[replay], replay={"on_miss": "real"})

    def post(session, ts, request_id, **extra):
        payload = {"q": "weather", "meta": {"request_id": request_id}, **extra}
        return requests.post(
            f"{upstream}/echo?ts={ts}&city=paris",
            json=payload,
            headers={"X-Simroute-Session": session},
            proxies={"http": p.url},
            timeout=20,
        )

    first = post("recording", 1, "r-1")
    assert first.headers["X-Simroute-Provenance"] == "real"  # a miss goes real and is recorded
    again = post("replaying", 2, "r-2")
    assert again.headers["X-Simroute-Provenance"] == "replay" and again.json() == first.json()  # same nonce: replayed
    different = post("replaying", 3, "r-3", q2="other")
    assert different.headers["X-Simroute-Provenance"] == "real"
    rows = p.records()
    assert rows[1]["note"].startswith("replayed record " + rows[0]["id"])
    assert rows[1]["arguments"]["query"]["ts"] == "2"  # the record keeps what was sent


def test_a_recorded_event_stream_replays_whole(proxy, upstream):
    p = proxy(rules=[{"match": {"channel": "http"}, "route": "replay"}])
    with httpx.Client(proxy=p.url, timeout=20, headers={"X-Simroute-Session": "first"}) as client:
        recorded = client.get(f"{upstream}/sse?n=3")
    with httpx.Client(proxy=p.url, timeout=20, headers={"X-Simroute-Session": "second"}) as client:
        replayed = client.get(f"{upstream}/sse?n=3")
    assert recorded.headers["x-simroute-provenance"] == "real" and replayed.headers["x-simroute-provenance"] == "replay"
    assert replayed.text == recorded.text and replayed.headers["content-type"] == "text/event-stream"


def test_sse_and_chunked_pass_through_unbroken_and_are_recorded_when_complete(proxy, upstream):
    p = proxy()
    with httpx.Client(proxy=p.url, timeout=20) as client:
        with client.stream("GET", f"{upstream}/sse?n=6") as response:
            assert response.headers["x-simroute-provenance"] == "real"
            arrivals, events = [], []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    arrivals.append(time.monotonic())
                    events.append(json.loads(line[5:]))
        chunked = client.get(f"{upstream}/chunked?n=5")
    assert events == [{"n": i} for i in range(6)]
    assert arrivals[-1] - arrivals[0] > 0.15  # events arrived as sent (50 ms apart), not all at the end
    assert chunked.text == "".join(f"chunk {i}\n" for i in range(5))
    sse_row, chunked_row = p.records()
    assert sse_row["note"] == "streamed" and sse_row["observation"]["structured"]["body"].count("event: tick") == 6
    assert chunked_row["observation"]["structured"]["body"] == chunked.text
    assert not any(
        name.lower() == "transfer-encoding" for name, _ in chunked_row["observation"]["structured"]["headers"]
    )


def test_body_limits_truncate_text_with_a_marker_and_keep_binary_intact_or_by_hash(proxy, upstream):
    p = proxy(http={"max_body_bytes": 1000})
    with httpx.Client(proxy=p.url, timeout=20) as client:
        big = client.get(f"{upstream}/big?n=50000")
        small_binary = client.get(f"{upstream}/binary?n=600")
        big_binary = client.get(f"{upstream}/binary?n=5000")
        zipped = client.get(f"{upstream}/gzip")
    assert len(big.content) == 50000 and len(big_binary.content) == 5000  # the agent gets everything
    assert zipped.json() == {"zipped": True}
    rows = {
        r["arguments"]["path"] + str(r["arguments"]["query"].get("n", "")): r["observation"]["structured"]
        for r in p.records()
    }
    text = rows["/big50000"]
    assert (
        text["truncated"]
        and text["body_size"] == 50000
        and "[simroute: body truncated, 1000 of 50000 bytes recorded]" in text["body"]
    )
    assert base64.b64decode(rows["/binary600"]["body"]) == small_binary.content
    assert (
        rows["/binary5000"]["body"] is None
        and rows["/binary5000"]["body_size"] == 5000
        and len(rows["/binary5000"]["body_sha256"]) == 64
    )
    assert rows["/gzip"]["body"] == '{"zipped": true}' and not any(
        n.lower() == "content-encoding" for n, _ in rows["/gzip"]["headers"]
    )


def test_https_tunnels_take_the_session_of_their_connect(proxy, tls_upstream):
    p = proxy()
    authed = p.url.replace("http://", "http://bob:secret@")
    with requests.Session() as client:  # the credentials go on the CONNECT, not on the requests inside
        for _ in range(2):
            client.get(f"{tls_upstream}/json", proxies={"https": authed}, verify=str(p.ca_cert), timeout=20)
    assert [(r["session"], r["step"]) for r in p.records()] == [("bob", 0), ("bob", 1)]


def test_sessions_from_header_proxy_auth_user_or_connection(proxy, upstream):
    p = proxy()
    requests.get(f"{upstream}/json", headers={"X-Simroute-Session": "from-header"}, proxies={"http": p.url}, timeout=20)
    authed = p.url.replace("http://", "http://alice:secret@")
    echoed = requests.get(f"{upstream}/echo", proxies={"http": authed}, timeout=20).json()
    assert "proxy-authorization" not in echoed["headers"]
    with httpx.Client(proxy=p.url, timeout=20) as client:  # one keep-alive connection: one session
        client.get(f"{upstream}/json")
        client.get(f"{upstream}/json")
    sessions = [r["session"] for r in p.records()]
    assert sessions[:2] == ["from-header", "alice"]
    assert sessions[2] == sessions[3] and sessions[2].startswith("http-")
    assert [r["step"] for r in p.records()][2:] == [0, 1]


def test_bad_input_down_and_slow_upstreams_get_clear_answers_and_the_proxy_stays_up(proxy, upstream):
    p = proxy(http={"timeout_s": 1})
    with socket.create_connection(("127.0.0.1", p.port), timeout=10) as sock:
        sock.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        malformed = sock.recv(65536).decode()
    assert malformed.startswith("HTTP/1.1 400") and "x-simroute-provenance: none" in malformed.lower()
    malformed_record = re.search(r"(?im)^x-simroute-record: (\S+)", malformed)
    assert malformed_record, malformed
    down_url = f"http://127.0.0.1:{_closed_port()}/x"
    with httpx.Client(proxy=p.url, timeout=20) as client:
        down = client.get(down_url)
        started = time.monotonic()
        slow = client.get(f"{upstream}/slow?s=3")
        waited = time.monotonic() - started
        started = time.monotonic()
        stalled = client.get(f"{upstream}/stall?s=3")  # the headers came, the body stopped
        waited_stalled = time.monotonic() - started
        fine = client.get(f"{upstream}/json")
    assert (
        down.status_code == 502 and down.headers["x-simroute-provenance"] == "none" and "failed" in down.json()["error"]
    )
    assert slow.status_code == 504 and "1s deadline" in slow.json()["error"] and waited < 2.5
    assert stalled.status_code == 504 and waited_stalled < 2.5
    assert fine.status_code == 200
    unparsed, *rows = p.records()  # records are complete: the malformed request too
    assert unparsed["id"] == malformed_record.group(1) and (
        unparsed["tool"],
        unparsed["route"],
        unparsed["policy"],
    ) == (
        "INVALID",
        "deny",
        "http-parser",
    )
    assert (
        "malformed request" in unparsed["observation"]["content"][0]["text"] and unparsed["session"] == "http-unparsed"
    )
    assert [r["observation"]["structured"]["status"] for r in rows] == [502, 504, 504, 200]
    assert rows[1]["note"] == rows[2]["note"] == "timed out" and rows[1]["latency_ms"] >= 1000


def test_reverse_mode_fronts_one_upstream(proxy, upstream):
    p = proxy(http={"mode": f"reverse:{upstream}"})
    response = requests.get(f"{p.url}/echo?x=1", timeout=20)
    assert response.status_code == 200 and response.headers["X-Simroute-Provenance"] == "real"
    assert response.json()["query"] == {"x": "1"}
    assert p.records()[0]["server"] == upstream.removeprefix("http://")


def test_simroute_ca_creates_one_ca_per_user_and_says_how_to_trust_it(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path)}
    first = subprocess.run(
        [simroute_executable(), "ca"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    cert = tmp_path / ".simroute" / "mitmproxy-ca-cert.pem"
    assert first.returncode == 0 and cert.is_file() and str(cert) in first.stdout
    assert (
        "--cacert" in first.stdout
        and "NODE_EXTRA_CA_CERTS" in first.stdout
        and "update-ca-certificates" in first.stdout
    )
    before = cert.read_bytes()
    subprocess.run([simroute_executable(), "ca"], capture_output=True, env=env, cwd=tmp_path, check=True, timeout=60)
    assert cert.read_bytes() == before  # created once, kept


def test_a_taken_port_is_a_clear_error(tmp_path, upstream):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        config = http_config(tmp_path)
        out = subprocess.run(
            [simroute_executable(), "http-proxy", "--config", str(config), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1 and "cannot listen" in out.stderr and str(port) in out.stderr


def test_a_disabled_channel_does_not_start(tmp_path):
    config = http_config(tmp_path, http={"enabled": False})
    out = subprocess.run(
        [simroute_executable(), "http-proxy", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "http.enabled is false" in out.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gigantic_bodies_pass_whole_and_are_recorded_truncated(proxy, upstream):
    p = proxy(http={"max_body_bytes": 4096})
    upload = b"0123456789" * 2_000_000  # 20 MB
    with httpx.Client(proxy=p.url, timeout=60) as client:
        sent = client.post(f"{upstream}/echo", content=upload, headers={"Content-Type": "text/plain"})
        fetched = client.get(f"{upstream}/big?n=20000000")
    assert sent.status_code == 200 and len(sent.json()["body"]) == len(upload)  # the upstream got all of it
    assert len(fetched.content) == 20_000_000
    up, down = p.records()
    assert up["arguments"]["body"]["size"] == len(upload) and up["arguments"]["body"]["text"].startswith(
        "0123456789" * 409
    )
    assert up["arguments"]["body"]["text"].endswith("[simroute: body truncated, 4096 of 20000000 bytes recorded]")
    assert (
        down["observation"]["structured"]["body_size"] == 20_000_000 and down["observation"]["structured"]["truncated"]
    )


def test_upstream_tls_failures_are_a_502_with_the_reason(proxy, tls_upstream):
    p = proxy(http={"ssl_insecure": False})  # the upstream's self-made certificate is not trusted
    headers, body, status = curl(p, "--cacert", str(p.ca_cert), f"{tls_upstream}/json")
    assert status == 502 and headers["x-simroute-provenance"] == "none"
    assert "certificate" in json.loads(body)["error"].lower()
    assert p.records()[0]["observation"]["structured"]["status"] == 502


def test_a_stream_the_agent_leaves_early_is_recorded_as_far_as_it_got(proxy, upstream):
    p = proxy()
    with httpx.Client(proxy=p.url, timeout=20) as client:
        with client.stream("GET", f"{upstream}/sse?n=40") as response:
            for line in response.iter_lines():
                if line.startswith("data:"):
                    break  # one event, then hang up
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not p.records():
        time.sleep(0.2)
    [row] = p.records()
    assert row["note"].startswith("stream broken") and "event: tick" in row["observation"]["structured"]["body"]
    assert requests.get(f"{upstream}/json", proxies={"http": p.url}, timeout=20).status_code == 200  # still up


def test_concurrent_agents_are_recorded_completely_in_their_own_sessions(proxy, upstream):
    from concurrent.futures import ThreadPoolExecutor

    p = proxy()

    def agent(n: int) -> list[int]:
        with httpx.Client(proxy=p.url, timeout=30, headers={"X-Simroute-Session": f"agent-{n}"}) as client:
            return [client.get(f"{upstream}/echo?agent={n}&i={i}").status_code for i in range(10)]

    with ThreadPoolExecutor(8) as pool:
        statuses = [s for result in pool.map(agent, range(8)) for s in result]
    assert statuses == [200] * 80
    rows = p.records()
    assert len(rows) == 80
    for n in range(8):
        mine = [r for r in rows if r["session"] == f"agent-{n}"]
        assert sorted(r["step"] for r in mine) == list(range(10))
        assert all(r["arguments"]["query"]["agent"] == str(n) for r in mine)
