"""Records `simroute serve` made for three tokens under one named recording:
`simroute export --token` holds the namespaces asked for and nothing of any other
token's (a shared namespace included only when asked for: an export is the
operator's choice); `simroute recordings --token` counts the recording in those
namespaces only; and replay from the named recording serves a token its own
recording or the shared one, never another token's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.export import export_dataset
from kit.launch import meta_of, simroute_executable, toolbox_server
from kit.serve import serving

pytestmark = pytest.mark.integration

TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdef00",
    "ci": "ci-token-0123456789abcdef00000",
}


async def balance(port: int, token: str, session: str):
    headers = {"Authorization": f"Bearer {TOKENS[token]}", "X-Simroute-Session": session}
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp", headers=headers)) as client:
        return await client.call_tool("get_balance", {}, raise_on_error=False)


def recordings(config: Path, *tokens: str) -> list[dict]:
    args = [arg for token in tokens for arg in ("--token", token)]
    done = subprocess.run(
        [simroute_executable(), "recordings", "--json", "--config", str(config), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def dataset_text(out: Path) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(out.glob("*/*.jsonl")))


async def test_export_by_token_holds_only_the_namespaces_asked_for(make_config, tmp_path: Path):
    account = tmp_path / "balance"
    servers = {"toolbox": toolbox_server(TOOLBOX_BALANCE=str(account))}
    service = {"tokens": TOKENS, "shared_namespaces": ["ci"]}
    config = make_config(mcpServers=servers, service=service, mode="real", replay={"recording": "golden"})
    with serving(config, tmp_path / "serve.log") as port:
        for token, amount in (("alice", "1111"), ("bob", "3333"), ("ci", "2222")):
            account.write_text(amount)
            await balance(port, token, "s1")

    assert [(r["name"], r["sessions"], r["records"]) for r in recordings(config)] == [("golden", 3, 3)]
    assert [(r["name"], r["sessions"], r["records"]) for r in recordings(config, "bob")] == [("golden", 1, 1)]

    bobs = export_dataset(config, tmp_path / "bob", "--token", "bob", "--test-fraction", "0")
    text = dataset_text(tmp_path / "bob")
    assert bobs["counts"]["records_read"] == 1 and "balance 3333" in text
    assert "balance 1111" not in text and "balance 2222" not in text
    with_ci = export_dataset(config, tmp_path / "bob-ci", "--token", "bob", "--token", "ci", "--test-fraction", "0")
    text = dataset_text(tmp_path / "bob-ci")
    assert with_ci["counts"]["records_read"] == 2 and "balance 3333" in text and "balance 2222" in text
    assert "balance 1111" not in text

    account.write_text("9999")
    replaying = make_config(
        mcpServers=servers, service={"tokens": TOKENS}, mode="replay", replay={"from": "golden", "on_miss": "error"}
    )
    with serving(replaying, tmp_path / "replay.log") as port:
        bobs = await balance(port, "bob", "s2")
    assert meta_of(bobs)["provenance"] == "replay" and bobs.content[0].text == "balance 3333"  # his own, not alice's
    config_only_alice = {"tokens": {"alice": TOKENS["alice"], "dave": "dave-token-0123456789abcdef0"}}
    replaying = make_config(
        mcpServers=servers, service=config_only_alice, mode="replay", replay={"from": "golden", "on_miss": "error"}
    )
    with serving(replaying, tmp_path / "dave.log") as port:
        headers = {"Authorization": "Bearer dave-token-0123456789abcdef0", "X-Simroute-Session": "s1"}
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp", headers=headers)) as client:
            daves = await client.call_tool("get_balance", {}, raise_on_error=False)
    assert daves.is_error and "balance" not in daves.content[0].text  # the recording holds nothing of dave's
