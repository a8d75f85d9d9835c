"""Episodes while their Redis store is away: a step goes on (its record spooled, its
Idempotency-Key answer kept where it can be), a reset that cannot be shared with the
other replicas is a 503 to retry, never a bare 500; once Redis is back, every
answered step has its record and none is numbered twice."""

from __future__ import annotations

import time

import pytest
from kit.episodes import text_of
from kit.launch import records_of, toolbox_server
from kit.redis import RedisServer
from kit.replicas import two_replicas

pytestmark = pytest.mark.integration


def test_episodes_ride_out_their_redis_store_going_away(tmp_path):
    server = RedisServer(tmp_path, persistent=True).start()
    try:
        with two_replicas(tmp_path, server.url, mcpServers={"toolbox": toolbox_server()}) as (a, _):
            episode = a.open(options={"route": "real"})
            assert text_of(a.call(episode, "echo", text="before")) == "before"
            server.kill()
            action = {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "during"}}
            during = a.http.post(
                f"{a.url}/episodes/{episode}/step", json=action, headers={"Idempotency-Key": "while-away"}
            )
            assert during.status_code == 200 and text_of(during.json()) == "during", during.text
            refused = a.reset(options={"route": "real"})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
            assert refused.json()["error"].startswith("simroute: the shared store is unreachable, retry shortly")
            server.start()
            after = a.call(episode, "echo", text="after")
            assert text_of(after) == "after"
            wanted = {during.json()["info"]["record_id"], after["info"]["record_id"]}
            config = tmp_path / "a" / "simroute.yaml"
            deadline = time.monotonic() + 30
            while not wanted <= {r["id"] for r in records_of(config)}:  # the spool flushes in the background
                assert time.monotonic() < deadline, "the spooled record did not reach Redis"
                time.sleep(0.2)
            records = [r for r in records_of(config) if r["tool"] == "echo"]
            assert [r["arguments"]["text"] for r in records] == ["before", "during", "after"]
            assert len({r["step"] for r in records}) == 3 and all(r["status"] == "complete" for r in records)
    finally:
        server.kill()
