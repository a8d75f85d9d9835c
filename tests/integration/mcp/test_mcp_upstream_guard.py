"""The upstream guard on the MCP channel, through `simroute mcp` over stdio in front of
a real MCP server process (tests/servers/toolbox.py): a tool's own errors leave the
breaker closed; an upstream that dies on every call opens it; the refusal is an
`isError` result of provenance `none` that starts no upstream; after the cool-down a
trial call closes it."""

from __future__ import annotations

import asyncio
import sys

import pytest
from kit.launch import TOOLBOX, meta_of, records_of, stdio_client

pytestmark = pytest.mark.integration


async def test_a_dying_upstream_opens_the_breaker_and_a_trial_closes_it(make_config, tmp_path):
    starts = tmp_path / "starts.txt"
    starts.touch()
    toolbox = {
        "command": "sh",
        "args": ["-c", f'echo started >> "{starts}"; exec "$0" "$1"', sys.executable, str(TOOLBOX)],
    }
    config = make_config(
        mcpServers={"toolbox": toolbox}, upstream_guard={"defaults": {"breaker_failures": 2, "breaker_cooldown_s": 2}}
    )
    async with stdio_client(config) as client:
        for _ in range(3):  # the tool's own error: the upstream answered
            own = await client.call_tool("fail", {"message": "no"}, raise_on_error=False)
            assert own.is_error and meta_of(own)["provenance"] == "real"
        assert (await client.call_tool("echo", {"text": "up"})).content[0].text == "up"
        for _ in range(2):
            crashed = await client.call_tool("crash", {}, raise_on_error=False)
            assert crashed.is_error and meta_of(crashed)["provenance"] == "none"
        started = len(starts.read_text().split())
        refused = await client.call_tool("echo", {"text": "refused"}, raise_on_error=False)
        assert refused.is_error and meta_of(refused)["provenance"] == "none" and meta_of(refused)["route"] == "real"
        assert "circuit breaker is open after 2 consecutive failures" in refused.content[0].text
        assert "upstream guard refused the real call (breaker_open)" in meta_of(refused)["note"]
        assert len(starts.read_text().split()) == started  # the refused call started no upstream
        await asyncio.sleep(2.1)  # the cool-down
        trial = await client.call_tool("echo", {"text": "trial"})
        assert trial.content[0].text == "trial" and meta_of(trial)["provenance"] == "real"
        assert (await client.call_tool("echo", {"text": "closed"})).content[0].text == "closed"
    records = records_of(config)
    refused_record = next(r for r in records if r["id"] == meta_of(refused)["record_id"])
    assert refused_record["observation"]["provenance"] == "none" and refused_record["observation"]["is_error"]
