"""Replay stays inside a token's namespace: with tokens on, a recording made under one
token is never served to another, while the same token's next session replays it."""

from __future__ import annotations

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, records_of, toolbox_server

pytestmark = pytest.mark.integration

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"
TOKENS = {"alice": ALICE, "bob": BOB}


def client(url: str, token: str, session: str) -> Client:
    return Client(StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}", "X-Simroute-Session": session}))


async def test_a_recording_made_under_one_token_is_never_served_to_another(make_config, simroute_http):
    servers = {"toolbox": toolbox_server()}
    recording = simroute_http(make_config(mcpServers=servers, service={"tokens": TOKENS}, mode="real"))
    async with client(recording.url, ALICE, "first") as alice:
        real = await alice.call_tool("get_motto", {})
    recording.process.terminate()
    assert recording.process.wait(30) == 0

    config = make_config(mcpServers=servers, service={"tokens": TOKENS}, mode="replay", replay={"on_miss": "error"})
    replaying = simroute_http(config)
    async with client(replaying.url, BOB, "second") as bob:
        refused = await bob.call_tool("get_motto", {}, raise_on_error=False)
    async with client(replaying.url, ALICE, "third") as alice:
        replayed = await alice.call_tool("get_motto", {})
    assert refused.is_error and meta_of(refused)["provenance"] == "none" and real.content[0].text not in str(refused.content)
    assert "no call like this" in refused.content[0].text
    assert meta_of(replayed)["provenance"] == "replay" and replayed.content[0].text == real.content[0].text
    sessions = [(r["session"], r["provenance"]) for r in records_of(config)]
    assert sessions == [("alice/first", "real"), ("bob/second", "none"), ("alice/third", "replay")]
