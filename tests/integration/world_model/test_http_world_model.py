"""HTTP requests on the simulated and shadow routes, with the real SmolLM2 GGUF model
in simroute's process (run under the CPU lock: flock /tmp/simroute-cpu.lock)."""

from __future__ import annotations

import subprocess

import httpx2 as httpx
import pytest
from kit.http import http_config, start_proxy
from kit.launch import model_path, simroute_executable

# The bundled GGUF model runs in these tests, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

WORLD_MODEL = {"max_tokens": 96, "deadline_s": 120}


def test_simulated_requests_answer_as_http_with_the_recorded_example(tmp_path, upstream):
    model_path()  # part of the set-up: fail clearly when missing
    # A real exchange with the same URL, recorded by another session, is the example the model copies.
    p = start_proxy(http_config(tmp_path, world_model=WORLD_MODEL))
    with httpx.Client(proxy=p.url, timeout=180) as client:
        recorded = client.get(f"{upstream}/json", headers={"X-Simroute-Session": "recording"})
    p.stop()
    simulate = {"name": "simulate-json", "match": {"channel": "http", "arguments": {"path": "/json"}}, "route": "sim"}
    p = start_proxy(http_config(tmp_path, world_model=WORLD_MODEL, rules=[simulate]))
    try:
        with httpx.Client(proxy=p.url, timeout=180) as client:
            simulated = client.get(f"{upstream}/json", headers={"X-Simroute-Session": "agent"})
            real = client.get(f"{upstream}/echo", headers={"X-Simroute-Session": "agent"})
    finally:
        p.stop()
    assert recorded.headers["x-simroute-provenance"] == real.headers["x-simroute-provenance"] == "real"
    assert simulated.headers["x-simroute-provenance"] == "sim" and simulated.headers["x-simroute-route"] == "sim"
    row = p.records()[1]
    assert (row["session"], row["provenance"], row["policy"]) == ("agent", "sim", "rules:simulate-json")
    structured = row["observation"]["structured"]
    assert simulated.status_code == structured["status"] and not row["observation"]["is_error"]
    assert simulated.status_code < 500  # a well-formed answer of the API, never the world model failing
    assert simulated.content == structured["body"].encode()
    assert isinstance(simulated.json(), dict)  # the route's recordings are JSON: so is the simulated body
    print("simulated:", row["observation"]["content"][0]["text"][:400])


def test_shadowed_requests_serve_real_and_compare_with_the_model(tmp_path, upstream):
    config = http_config(
        tmp_path, world_model=WORLD_MODEL, mode="shadow", shadow={"drain_on_start": False, "stop_grace_s": 0}
    )
    p = start_proxy(config)
    try:
        response = httpx.Client(proxy=p.url, timeout=180).get(
            f"{upstream}/json", headers={"X-Simroute-Session": "agent"}
        )
    finally:
        p.stop()
    assert response.headers["x-simroute-provenance"] == "real" and response.json()["ok"] is True
    assert p.records()[-1]["status"] == "pending"  # the stop left the shadow side to drain
    subprocess.run(
        [simroute_executable(), "drain", "--config", str(config)], check=True, capture_output=True, timeout=300
    )
    row = p.records()[-1]
    assert row["status"] == "complete" and row["shadow"]["provenance"] == "sim"
    assert row["divergence"] is not None and 0 <= row["divergence"] <= 1


def test_an_api_that_does_not_exist_is_simulated_over_https(tmp_path):
    config = http_config(
        tmp_path,
        world_model={**WORLD_MODEL, "initial_state": {"api.offline.test": "A JSON API of users; user 1 is Ada."}},
        mode="sim",
    )
    p = start_proxy(config)
    try:
        out = subprocess.run(
            [
                "curl",
                "-s",
                "-i",
                "--max-time",
                "150",
                "-x",
                p.url,
                "--cacert",
                str(p.ca_cert),
                "https://api.offline.test/v1/users/1",
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        p.stop()
    assert "x-simroute-provenance: sim" in out.stdout.lower()  # no DNS, no upstream: the world model answered
    [row] = p.records()
    assert (row["server"], row["provenance"], row["arguments"]["path"]) == ("api.offline.test", "sim", "/v1/users/1")
