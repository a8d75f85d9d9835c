"""The learned router keeps token namespaces apart on `simroute serve`: alice's agreeing
recordings let alice replay, never bob (he is not shown her statistics and gets the
real answer); a shared namespace's recordings count for every token, so a token
whose only recording sits there is replayed it under `mode: learned`."""

from __future__ import annotations

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, records_of, toolbox_server
from kit.serve import serving

pytestmark = pytest.mark.integration

TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdef00",
    "ci": "ci-token-0123456789abcdef00000",
    "dave": "dave-token-0123456789abcdef0",
}
LEARNED = {"explore_rate": 0, "freeze": True, "replay_min_sessions": 2}


async def balance(port: int, token: str, session: str):
    headers = {"Authorization": f"Bearer {TOKENS[token]}", "X-Simroute-Session": session}
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp", headers=headers)) as caller:
        return await caller.call_tool("get_balance", {}, raise_on_error=False)


async def test_learned_statistics_stay_in_their_namespace_and_a_shared_one_counts_for_all(make_config, tmp_path):
    account = tmp_path / "balance"
    servers = {"toolbox": toolbox_server(TOOLBOX_BALANCE=str(account))}
    service = {"tokens": TOKENS}
    shared = {"tokens": TOKENS, "shared_namespaces": ["ci"]}

    account.write_text("1111")
    with serving(make_config(mcpServers=servers, service=service, mode="real"), tmp_path / "alice.log") as port:
        for n in range(3):
            assert (await balance(port, "alice", f"a{n}")).content[0].text == "balance 1111"

    account.write_text("9999")  # the real answer from now on
    learned = make_config(mcpServers=servers, service=service, mode="learned", learned=LEARNED)
    with serving(learned, tmp_path / "learned.log") as port:
        alices = await balance(port, "alice", "a3")
        bobs = await balance(port, "bob", "b0")
    assert meta_of(alices)["provenance"] == "replay" and alices.content[0].text == "balance 1111"
    assert meta_of(bobs)["provenance"] == "real" and bobs.content[0].text == "balance 9999"
    decided = {row["session"]: row["reason"] for row in records_of(learned)}
    assert "agreed in 3 sessions" in decided["alice/a3"]
    assert "agreed" not in decided["bob/b0"] and "0 labels" in decided["bob/b0"]  # none of alice's statistics

    account.write_text("2222")
    with serving(make_config(mcpServers=servers, service=shared, mode="real"), tmp_path / "ci.log") as port:
        for n in range(3):
            assert (await balance(port, "ci", f"golden{n}")).content[0].text == "balance 2222"
    account.write_text("7777")
    learned_shared = make_config(mcpServers=servers, service=shared, mode="learned", learned=LEARNED)
    with serving(learned_shared, tmp_path / "shared.log") as port:
        daves = await balance(port, "dave", "d0")  # dave's only recordings are ci's
    assert meta_of(daves)["provenance"] == "replay" and daves.content[0].text == "balance 2222"
    golden = {row["session"]: row["id"] for row in records_of(learned_shared) if row["session"].startswith("ci/")}
    assert golden["ci/golden2"] in meta_of(daves)["note"]
