"""Rehearsal end to end, through simroute as a user launches it: destructive
actions never reach the real world, on every channel. The sandbox's, the MCP
server's, the upstream's and the site's state afterwards shows it."""

from __future__ import annotations

import json
import re
import subprocess
import uuid

import pytest
from kit.http import http_config, start_proxy
from kit.launch import meta_of, notes_server, records_of, stdio_client, toolbox_server
from servers import http_upstream
from servers.web_pages import WebPages

pytestmark = pytest.mark.integration

# The real SmolLM2 GGUF with small budgets. What the model answers does not matter here:
# a diverted call is served by the simulated side (its answer, or its deadline error).
WORLD_MODEL = {"max_tokens": 64, "deadline_s": 60}


async def shell(client, command):
    result = await client.call_tool("shell_exec", {"command": command}, raise_on_error=False)
    return result, result.structured_content or {}


async def test_destructive_shell_commands_never_reach_the_sandbox(make_config, no_sandbox_left_behind):
    config = make_config(mode="rehearsal", rehearsal={"on_divert": "deny"}, shell={"pool_size": 0})
    async with stdio_client(config) as client:
        result, out = await shell(client, "mkdir -p /workspace/data && echo precious > /workspace/data/keep.txt")
        assert out["exit_code"] == 0 and meta_of(result)["provenance"] == "real"
        assert meta_of(result)["safety_class"] == "side_effect"  # the shell diverts only destructive commands
        for command in (
            "cd /workspace && bash -c 'rm -rf data'",
            "x=rm; $x -rf /workspace/data",
            "find /workspace -delete",
        ):
            result, _ = await shell(client, command)
            meta = meta_of(result)
            assert result.is_error and (meta["route"], meta["policy"], meta["safety_class"]) == (
                "deny",
                "rehearsal",
                "destructive",
            ), meta
        result, _ = await shell(client, 'rm -rf /workspace/data "unterminated')  # the parser fails: fail closed
        assert meta_of(result)["route"] == "deny" and "could not fully analyse" in meta_of(result)["reason"]
        result, out = await shell(client, "cat /workspace/data/keep.txt")  # a real read of the sandbox
        assert meta_of(result)["provenance"] == "real" and out["output"].strip() == "precious"
    rows = records_of(config)
    assert [row["safety_class"] for row in rows] == [
        "side_effect",
        "destructive",
        "destructive",
        "destructive",
        "destructive",
        "safe",
    ]


async def test_a_destructive_tool_of_a_real_server_is_simulated(make_config, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("keep me")
    config = make_config(
        mcpServers={"toolbox": toolbox_server()},
        mode="rehearsal",
        world_model=WORLD_MODEL,
        safety={
            "tools": {"toolbox": {"echo": "safe"}}
        },  # an override: echo has no annotations, and its name says nothing
    )
    async with stdio_client(config) as client:
        echoed = await client.call_tool("echo", {"text": "hi"})
        tidied = await client.call_tool("tidy_note", {"path": str(note)}, raise_on_error=False)
    assert (
        meta_of(echoed)["provenance"] == "real"
        and meta_of(echoed)["safety_reason"] == "safety.tools sets toolbox.echo to safe"
    )
    meta = meta_of(tidied)
    assert (meta["provenance"], meta["route"], meta["policy"], meta["safety_class"]) == (
        "sim",
        "sim",
        "rehearsal",
        "destructive",
    )
    assert "destructiveHint" in meta["safety_reason"]  # read from the server's own tool listing
    assert note.read_text() == "keep me"  # the server's state is unchanged
    row = records_of(config)[-1]
    assert (row["policy"], row["safety_class"], row["provenance"]) == ("rehearsal", "destructive", "sim")


async def test_after_a_diverted_delete_the_servers_reads_are_simulated(make_config, tmp_path):
    """Once rehearsal diverted a destructive call, a later read-only call of the same
    server in the session is simulated too (it must see the note deleted, which the
    real server never did); the real notes store still holds the note."""
    state = tmp_path / "notes.json"
    config = make_config(
        mcpServers={"notes": notes_server(state)},
        mode="rehearsal",
        world_model=WORLD_MODEL,
        rehearsal={"divert": {"mcp": ["destructive"]}},  # creating a note runs for real here
    )
    async with stdio_client(config) as client:
        created = await client.call_tool("create_note", {"title": "groceries", "body": "milk"})
        listed = await client.call_tool("list_notes", {})
        deleted = await client.call_tool("delete_note", {"note_id": 1}, raise_on_error=False)
        again = await client.call_tool("list_notes", {}, raise_on_error=False)
    assert [meta_of(r)["provenance"] for r in (created, listed)] == ["real", "real"] and listed.content[
        0
    ].text == "1. groceries"
    assert (meta_of(deleted)["route"], meta_of(deleted)["policy"], meta_of(deleted)["safety_class"]) == (
        "sim",
        "rehearsal",
        "destructive",
    )
    meta = meta_of(again)
    assert (meta["route"], meta["policy"], meta["safety_class"]) == ("sim", "rehearsal", "safe"), meta
    assert meta["provenance"] in ("sim", "none")  # the model's answer, or its error: never real
    assert json.loads(state.read_text()) == {"1": ["groceries", "milk"]}  # the real server's state is unchanged
    rows = records_of(config)
    assert [(r["tool"], r["route"], r["policy"]) for r in rows] == [
        ("create_note", "real", "mode"),
        ("list_notes", "real", "mode"),
        ("delete_note", "sim", "rehearsal"),
        ("list_notes", "sim", "rehearsal"),
    ]
    assert "diverted to sim earlier in rehearsal" in rows[-1]["reason"]


def curl(proxy_url: str, *args: str) -> tuple[dict[str, str], str]:
    out = subprocess.run(
        ["curl", "-s", "-i", "--max-time", "150", "-x", proxy_url, *args], capture_output=True, text=True, timeout=180
    )
    head, _, body = out.stdout.replace("\r\n", "\n").partition("\n\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head.split("\n")[1:])}
    return headers, body


def test_a_payment_post_through_the_proxy_never_reaches_the_upstream(tmp_path, upstream):
    proxy = start_proxy(http_config(tmp_path, mode="rehearsal", world_model=WORLD_MODEL))
    try:
        session = f"agent-{uuid.uuid4().hex[:8]}"
        before = http_upstream.Handler.served
        headers, _ = curl(proxy.url, "-H", f"X-Simroute-Session: {session}", f"{upstream}/echo")
        assert headers["x-simroute-provenance"] == "real" and headers["x-simroute-safety"] == "safe"
        assert http_upstream.Handler.served == before + 1
        headers, _ = curl(
            proxy.url,
            "-H",
            f"X-Simroute-Session: {session}",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps({"amount": 4200, "currency": "usd"}),
            f"{upstream}/v1/payments",
        )
        assert headers["x-simroute-route"] == "sim" and headers["x-simroute-safety"] == "destructive"
        assert headers["x-simroute-provenance"] in ("sim", "none")  # the model's answer, or its error: never real
        assert http_upstream.Handler.served == before + 1  # the upstream never saw the payment
    finally:
        assert proxy.stop() == 0, proxy.log.read_text()
    row = proxy.records()[-1]
    assert (row["tool"], row["policy"], row["safety_class"]) == ("POST", "rehearsal", "destructive")
    assert "payment" in row["reason"]


async def test_a_delete_account_click_is_simulated(make_config):
    with WebPages() as site:
        # The test site is on loopback: the browser opens it only when allowed.
        config = make_config(
            mode="rehearsal", world_model=WORLD_MODEL, browser={"allowed_origins": ["http://127.0.0.1:*"]}
        )
        async with stdio_client(config) as client:
            page = await client.call_tool("browser_navigate", {"url": site.url("/account")})
            assert meta_of(page)["provenance"] == "real" and meta_of(page)["safety_class"] == "safe"
            ref = re.search(r'button "Delete account" \[ref=([^\]]+)\]', page.structured_content["snapshot"]).group(1)
            click = await client.call_tool(
                "browser_click", {"ref": ref}, raise_on_error=False
            )  # no element text: named from the page
        meta = meta_of(click)
        assert (meta["route"], meta["policy"], meta["safety_class"]) == ("sim", "rehearsal", "side_effect")
        assert "delete" in meta["safety_reason"].lower()
        assert "POST /account/delete" not in site.requests  # the site never received the form
