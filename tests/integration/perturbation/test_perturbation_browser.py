"""A perturbed browser navigation through `simroute serve`: the agent sees a
navigation error, and the page is never requested (the site's own log shows it)."""

from __future__ import annotations

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of
from kit.mcp import call_tool
from kit.serve import serving
from servers.web_pages import WebPages

pytestmark = pytest.mark.integration

PLAN = {"rules": [{"name": "about-down", "kind": "error", "match": {"channel": "browser", "path": "/about"}}]}


async def test_a_faulted_navigation_is_a_navigation_error_and_never_reaches_the_site(make_config, tmp_path):
    config = make_config(
        browser={"enabled": True, "isolation": "host", "allowed_origins": ["http://127.0.0.1:*"]},
        perturbations={"apply": "p", "plans": {"p": PLAN}},
    )
    with WebPages() as site, serving(config, tmp_path / "serve.log") as port:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180) as client:
            home, text, _ = await call_tool(client, "browser_navigate", url=site.url("/"))
            assert not home.is_error and "Welcome home" in text
            failed, text, _ = await call_tool(client, "browser_navigate", url=site.url("/about"))
            assert failed.is_error and f"page.goto: net::ERR_CONNECTION_RESET at {site.url('/about')}" in text
            assert meta_of(failed)["perturbation"]["rule"] == "p:about-down" and meta_of(failed)["provenance"] == "none"
    assert "/" in site.requests and "/about" not in site.requests
