"""An abandoned episode's browser context is freed when the episode is reaped (in
process, to watch the browser pool), in both browser isolation modes."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from kit.browser import isolation  # noqa: F401 (the test runs in both isolation modes)
from servers.web_pages import WebPages

from router.config import parse_config
from router.episodes.host import EpisodeHost
from router.mcp.server import build_server
from router.runtime.runtime import Runtime

pytestmark = pytest.mark.integration


async def test_a_reaped_episode_frees_its_browser_context(tmp_path, isolation):
    config = parse_config(
        json.dumps(
            {
                "store": {"path": str(tmp_path / "records.db")},
                "shell": {"enabled": False},
                "http": {"ca_dir": str(tmp_path / "ca")},
                "browser": {"allowed_origins": ["http://127.0.0.1:*"], "isolation": isolation},
            }
        )
    )
    runtime = Runtime(config)
    host = EpisodeHost(runtime.episode_parts, build_server(runtime.mcp_parts))
    await runtime.start()
    try:
        with WebPages() as site:
            episode = await host.reset(seed=3, options={"route": "real", "channels": ["browser"], "ttl_s": 1})
            step = await host.step(
                episode,
                {"type": "call_tool", "tool_name": "browser_navigate", "arguments": {"url": site.url("/about")}},
            )
            assert step["info"]["provenance"] == "real" and "We make widgets" in json.dumps(step["observation"])
            assert len(runtime.browser) == 1  # the episode's context
            deadline = time.monotonic() + 15
            while episode.ended is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert episode.ended == "reaped"
            assert len(runtime.browser) == 0, "the reaped episode's browser context is still open"
    finally:
        await runtime.aclose()
