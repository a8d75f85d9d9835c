"""Replay stays inside a token's namespace: with tokens on, a recording made under one
token is never served to another, while the same token's next session replays it;
`service.shared_namespaces` opens one token's recordings to every token (replay and
the world model's examples), after each token's own."""

from __future__ import annotations

import json

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, records_of, toolbox_server

pytestmark = pytest.mark.integration

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"
TOKENS = {"alice": ALICE, "bob": BOB}


def client(url: str, token: str, session: str) -> Client:
    return Client(
        StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}", "X-Simroute-Session": session})
    )


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
    assert (
        refused.is_error
        and meta_of(refused)["provenance"] == "none"
        and real.content[0].text not in str(refused.content)
    )
    assert "no call like this" in refused.content[0].text
    assert meta_of(replayed)["provenance"] == "replay" and replayed.content[0].text == real.content[0].text
    sessions = [(r["session"], r["provenance"]) for r in records_of(config)]
    assert sessions == [("alice/first", "real"), ("bob/second", "none"), ("alice/third", "replay")]


CI = "ci-token-0123456789abcdef00000"


async def balance(port: int, token: str, session: str):
    async with client(f"http://127.0.0.1:{port}/mcp", token, session) as caller:
        return await caller.call_tool("get_balance", {}, raise_on_error=False)


async def test_on_serve_a_token_gets_its_own_recordings_and_the_shared_namespaces_never_anothers(make_config, tmp_path):
    """`simroute serve` with three tokens, `ci` shared: bob is replayed ci's recording,
    not alice's newer one; alice her own; and the world model's examples for bob's
    simulated call show ci's answer, never alice's."""
    from kit.model_stub import ModelStub
    from kit.serve import serving

    account = tmp_path / "balance"
    servers = {"toolbox": toolbox_server(TOOLBOX_BALANCE=str(account))}
    service = {"tokens": {**TOKENS, "ci": CI}, "shared_namespaces": ["ci"]}

    recording = make_config(mcpServers=servers, service=service, mode="real")
    with serving(recording, tmp_path / "record.log") as port:
        account.write_text("2222")
        golden = await balance(port, CI, "golden")  # the shared recording, made first
        account.write_text("1111")
        alices = await balance(port, ALICE, "first")  # alice's own, newer
    assert golden.content[0].text == "balance 2222" and alices.content[0].text == "balance 1111"
    recorded = {row["session"]: row["id"] for row in records_of(recording)}

    account.write_text("9999")  # what the real side would say now: never asked below
    replaying = make_config(mcpServers=servers, service=service, mode="replay", replay={"on_miss": "error"})
    with serving(replaying, tmp_path / "replay.log") as port:
        bobs = await balance(port, BOB, "second")
        alices_again = await balance(port, ALICE, "third")
    assert meta_of(bobs)["provenance"] == "replay" and bobs.content[0].text == "balance 2222"
    assert recorded["ci/golden"] in meta_of(bobs)["note"]  # served from the shared namespace ...
    assert meta_of(alices_again)["provenance"] == "replay" and alices_again.content[0].text == "balance 1111"
    assert recorded["alice/first"] in meta_of(alices_again)["note"]  # ... and alice from her own first

    with ModelStub(answer="balance 0") as model:
        world_model = {"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30}
        aligning = make_config(mcpServers=servers, service=service, mode="sim", world_model=world_model)
        with serving(aligning, tmp_path / "aligned.log") as port:
            aligned = await balance(port, BOB, "aligned")
        # An aligned recorded session is one bob may see: the shared one, never alice's.
        assert meta_of(aligned)["source"]["sub"] == "replay-aligned" and aligned.content[0].text == "balance 2222"
        assert not model.bodies
        simulating = make_config(
            mcpServers=servers,
            service=service,
            mode="sim",
            world_model=world_model,
            world_state={"mcp_alignment": False},
        )
        with serving(simulating, tmp_path / "sim.log") as port:
            simulated = await balance(port, BOB, "fourth")
    assert meta_of(simulated)["provenance"] == "sim" and len(model.bodies) == 1
    prompt = json.dumps(model.bodies[0])
    assert "balance 2222" in prompt  # the shared namespace's recording is an example ...
    assert "balance 1111" not in prompt  # ... alice's never reaches bob's prompt
