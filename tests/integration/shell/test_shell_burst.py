"""A burst of `shell_exec` calls on a fresh streamable-HTTP session, fired at once
against `simroute serve` launched as a user launches it: every call runs in the
session's one sandbox, none fails, and the server logs no traceback.

`serve` runs mitmproxy (the HTTP channel) on its event loop, and mitmproxy makes
the loop's task factory eager: a session's sandbox taken from a full warm pool is
opened within `create_task` itself. That once failed the session's calls with "the
agent session closed while its sandbox was starting"."""

from __future__ import annotations

import asyncio
import time

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import records_of, write_config
from kit.sandboxes import sandboxes
from kit.serve import serving

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_sandbox_left_behind")]

BURST = 60


@pytest.mark.parametrize("pool_size", [0, 2])
async def test_a_burst_of_shell_calls_on_a_fresh_session_all_run_in_its_one_sandbox(tmp_path, routers, pool_size):
    config = write_config(tmp_path, mode="real", shell={"enabled": True, "pool_size": pool_size})
    log = tmp_path / "serve.log"
    with serving(config, log) as port:
        deadline = time.monotonic() + 60
        while len(sandboxes(routers.owners)) < pool_size and time.monotonic() < deadline:  # the warm pool is full
            await asyncio.sleep(0.1)
        assert len(sandboxes(routers.owners)) == pool_size
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=300) as client:
            results = await asyncio.gather(
                *(
                    client.call_tool(
                        "shell_exec", {"command": f"echo call-$((40 + {i})) $HOSTNAME"}, raise_on_error=False
                    )
                    for i in range(BURST)
                )
            )
    failures = [result.content[0].text for result in results if result.is_error]
    assert failures == [], failures[:3]
    outputs = [result.structured_content["output"].split() for result in results]
    assert [words[0] for words in outputs] == [f"call-{40 + i}" for i in range(BURST)]  # each ran, its own command
    assert len({words[1] for words in outputs}) == 1  # in the session's one sandbox
    text = log.read_text()
    assert "Traceback" not in text and "while its sandbox was starting" not in text, text[-3000:]
    rows = records_of(config, "--channel", "shell")
    assert (
        len(rows) == BURST
        and {row["provenance"] for row in rows} == {"real"}
        and len({row["session"] for row in rows}) == 1
    )
