"""Noise probes of the HTTP channel, end to end through `simroute http-proxy`
launched as a user launches it: with `shadow.noise_probe_rate: 1`, a real GET is
sent once more off the agent's path and the pair teaches the noise table; a POST
never is; a probe reaches the address checked for the agent's request, under its
name (TLS, Host), never one a later DNS answer names."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from kit.http import Listener, scripted_dns
from kit.launch import simroute_executable
from servers.http_upstream import Handler, serve_upstream

pytestmark = pytest.mark.integration

# The upstream's /echo carries a random `nonce` (noise), the request (stable) and a
# `served` counter (state: it counts up by one between a call and its probe).
PROBES = {"noise_probe_rate": 1.0, "noise_probe_delay_s": 0.2}


def noise_table(config: Path) -> list[dict]:
    out = subprocess.run(
        [simroute_executable(), "noise", "--config", str(config), "--json"], capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def learned(config: Path, tool: str, pairs: int) -> list[dict]:
    """The noise table's rows of `tool`, once `pairs` pairs were learned (probes answer a moment after their call)."""
    deadline = time.monotonic() + 10
    while True:
        rows = [row for row in noise_table(config) if row["tool"] == tool]
        if (rows and rows[0]["pairs"] >= pairs) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def test_get_probes_teach_the_noise_table_and_a_post_is_never_probed(proxy, upstream):
    p = proxy(shadow=PROBES)
    before = Handler.served
    server = upstream.removeprefix("http://")
    with httpx.Client(proxy=p.url, timeout=20) as client:
        for x in (1, 2, 3):  # different queries: no passive pair, only probes teach
            answer = client.get(f"{upstream}/echo?x={x}")
            assert answer.status_code == 200 and answer.headers["X-Simroute-Provenance"] == "real"
        rows = learned(p.config, f"{server}.GET", pairs=3)
        assert Handler.served - before == 6  # each GET reached the upstream twice
        posted = client.post(f"{upstream}/echo", json={"title": "once"})
        assert posted.status_code == 200
        time.sleep(1.0)  # well past the probe delay
    assert Handler.served - before == 7  # the POST once: never probed

    noisy = {row["path"] for row in rows if row["noisy"]}
    assert "$.body.nonce" in noisy and {row["pairs"] for row in rows} == {3}
    # The request's own fields agree in every pair; the counter counts, which is state.
    assert not noisy & {"$.body.method", "$.body.path", "$.body.query.x", "$.body.served"}
    assert not any(row["tool"] == f"{server}.POST" for row in noise_table(p.config))

    records = p.records()  # the agent's calls only: probes are neither records nor steps
    assert [(r["tool"], r["route"]) for r in records] == [("GET", "real")] * 3 + [("POST", "real")]
    assert [r["step"] for r in records] == [0, 1, 2, 3]


def test_a_probe_reaches_the_checked_address_under_the_name(proxy, tmp_path):
    """DNS answers the checked address first and a trap's from then on: the probe goes
    to the address checked for the agent's request, TLS asks for the name (and
    `http.ssl_insecure` accepts the test certificate, as for the agent's request)."""
    names: list[str] = []
    with serve_upstream(tls_dir=tmp_path, server_names=names) as tls_upstream:
        port = int(tls_upstream.rsplit(":", 1)[1])
        trap = Listener("127.0.0.2", port)
        try:
            p = proxy(env=scripted_dns({"probed.test": ["127.0.0.1", "127.0.0.2"]}), shadow=PROBES)
            with httpx.Client(proxy=p.url, verify=ssl.create_default_context(cafile=p.ca_cert), timeout=20) as client:
                answer = client.get(f"https://probed.test:{port}/echo?x=1")
                assert answer.status_code == 200 and answer.json()["headers"]["host"] == f"probed.test:{port}", (
                    answer.text
                )
                rows = learned(p.config, f"probed.test:{port}.GET", pairs=1)
        finally:
            trap.close()
    assert trap.connections == 0  # the probe did not look the name up again
    assert names == ["probed.test"] * 2  # the call and its probe
    assert {(row["path"], row["disagreements"], row["pairs"]) for row in rows} >= {("$.body.nonce", 1, 1)}
    assert not [row for row in rows if row["path"].startswith("$.body.headers")]  # the probe sent the agent's headers


def test_a_reverse_mode_probe_keeps_the_host_header_of_the_agents_request(proxy, upstream):
    """In reverse mode mitmproxy's replay would name the pinned address in the Host
    header; the probe sends the agent's, so the echoed headers agree in each pair."""
    port = int(upstream.rsplit(":", 1)[1])
    p = proxy(
        env=scripted_dns({"front.test": ["127.0.0.1"]}),
        shadow=PROBES,
        http={"mode": f"reverse:http://front.test:{port}"},
    )
    before = Handler.served
    with httpx.Client(timeout=20) as client:
        for x in (1, 2):
            answer = client.get(f"{p.url}/echo?x={x}")
            assert answer.status_code == 200 and answer.json()["headers"]["host"] == f"front.test:{port}", answer.text
        rows = learned(p.config, f"front.test:{port}.GET", pairs=2)
    assert Handler.served - before == 4
    assert {(row["path"], row["disagreements"], row["pairs"]) for row in rows} >= {("$.body.nonce", 2, 2)}
    assert not [row for row in rows if row["path"].startswith("$.body.headers")]
