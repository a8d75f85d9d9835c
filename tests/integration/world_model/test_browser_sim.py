"""Browser calls simulated by the Web world model (the real SmolLM2 GGUF) through
`simroute mcp`: the same observation shape as the real browser, refusals without
the model, no Chromium needed, and stickiness with a rule overriding it."""

from __future__ import annotations

import re

import pytest
from kit.launch import meta_of, model_path, stdio_client
from kit.mcp import call_tool
from servers.web_pages import WebPages

# The bundled GGUF model runs in these tests, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

# The kit turns simroute's own channels off; these tests want the browser on, and
# open the pages they serve on loopback.
CONFIG_DEFAULTS = {"browser": {"allowed_origins": ["http://127.0.0.1:*"]}}


def world_model():
    return {"model_path": str(model_path()), "deadline_s": 120, "max_tokens": 160}


async def call(client, tool, **arguments):
    """The kit's tool call, and simroute's meta of the answer (every check here reads it)."""
    result, text, structured = await call_tool(client, tool, **arguments)
    return result, text, structured, meta_of(result)


async def test_simulated_browser_without_chromium_answers_like_the_real_one(make_config):
    with WebPages() as site:
        # A real session first: its recorded page is the demonstration the small model copies.
        real_config = make_config(world_model=world_model())
        async with stdio_client(real_config) as client:
            _, real_text, real_page, meta = await call(client, "browser_navigate", url=site.url("/about"))
        assert meta["provenance"] == "real" and real_page["title"] == "About"

        # Same record store, simulated, and no Chromium at all.
        sim_config = make_config(
            mode="sim", world_model=world_model(), browser={"executable_path": "/nonexistent/chromium"}
        )
        async with stdio_client(sim_config) as client:
            # Refused without the model, as the real browser refuses: no page yet.
            result, text, _, meta = await call(client, "browser_snapshot")
            assert result.is_error and "browser_navigate" in text and meta["provenance"] == "sim"

            result, text, page, meta = await call(client, "browser_navigate", url=site.url("/about"))
            assert meta["provenance"] == "sim" and meta["route"] == "sim", text
            assert not result.is_error, text
            # The real shape: text with the page header, structured {url, title, snapshot, truncated}.
            assert text.startswith("- Page URL: ") and "- Page Snapshot:\n```yaml\n" in text
            assert {"url", "title", "snapshot", "truncated"} <= set(page)
            assert isinstance(page["snapshot"], str) and page["snapshot"].strip()
            assert (
                page["url"] == real_page["url"] == site.url("/about")
            )  # where the agent navigated, as the real browser says

            # An element the simulated page did not show: an error naming the ref, no model call.
            result, text, _, meta = await call(client, "browser_click", ref="e999")
            assert result.is_error and "Ref e999 not found" in text and meta["provenance"] == "sim"
            assert meta["policy"] == "sticky"  # the session was pinned to sim at its first call

            refs = re.findall(r"\[ref=((?:f\d+)?e\d+)\]", page["snapshot"])
            if refs:  # a ref the simulated page did show is simulated, not refused
                result, text, _, meta = await call(client, "browser_click", ref=refs[-1])
                assert meta["provenance"] == "sim" and "not found in the current page snapshot" not in text
        assert (
            "/about" in site.requests and site.requests.count("/about") == 1
        )  # the simulated session never hit the site


async def test_a_rule_overrides_the_sessions_pinned_route(make_config):
    with WebPages() as site:
        config = make_config(
            world_model=world_model(),
            rules=[
                {"name": "sim-snapshots", "match": {"channel": "browser", "tool": "browser_snapshot"}, "route": "sim"}
            ],
        )
        async with stdio_client(config) as client:
            _, _, page, first = await call(client, "browser_navigate", url=site.url("/"))
            _, _, _, simulated = await call(client, "browser_snapshot")
            link = re.search(r'link "About us" \[ref=([^\]]+)\]', page["snapshot"]).group(1)
            result, _, after, last = await call(client, "browser_click", ref=link)
    assert (first["provenance"], first["policy"]) == ("real", "mode")
    assert (simulated["provenance"], simulated["policy"]) == ("sim", "rules:sim-snapshots")
    # Back to the session's own route: the real browser, still on its real page.
    assert (last["provenance"], last["policy"]) == ("real", "sticky")
    assert not result.is_error and after["title"] == "About"
