"""The browser opens web pages only, through simroute's own proxy: non-web schemes
refused in every mode, metadata addresses refused, loopback and private addresses
only for `browser.allowed_origins`, and a page's own requests checked and recorded
like the agent's (`simroute mcp` over stdio with Debian's Chromium)."""

from __future__ import annotations

import asyncio
import time
import urllib.parse

import pytest
from kit.browser import isolation, make_config  # noqa: F401 (every test here runs in both isolation modes)
from kit.launch import meta_of, records_of, stdio_client
from kit.mcp import call_tool
from servers.web_pages import WebPages

pytestmark = pytest.mark.integration


@pytest.fixture
def site():
    with WebPages() as pages:
        yield pages


@pytest.fixture
def other_site():
    with WebPages() as pages:
        yield pages


def origin_of(pages: WebPages) -> str:
    return pages.url("/").rstrip("/")


@pytest.mark.parametrize("mode", ["real", "sim"])
async def test_non_web_schemes_are_refused_in_every_mode_naming_the_rule(make_config, mode):
    config = make_config(mode=mode, browser={})
    async with stdio_client(config) as client:
        for url in (
            "file:///etc/hostname",
            "view-source:http://example.com/",
            "chrome://version",
            "javascript:alert(1)",
            "devtools://devtools/",
        ):
            result, text, _ = await call_tool(client, "browser_navigate", url=url)
            assert result.is_error and "browser URL policy" in text and "web pages only" in text, url
            assert meta_of(result)["policy"] == "browser-url" and meta_of(result)["route"] == "deny"
            assert "localhost" not in text.lower() or url.startswith("view-source")  # no file content shown
    rows = records_of(config)
    assert len(rows) == 5 and {(r["policy"], r["route"]) for r in rows} == {("browser-url", "deny")}


async def test_metadata_and_unlisted_private_addresses_are_refused_and_a_pages_fetch_too(make_config, site, other_site):
    config = make_config(browser={"allowed_origins": [origin_of(site)]})
    async with stdio_client(config) as client:
        result, text, _ = await call_tool(client, "browser_navigate", url="http://169.254.169.254/latest/meta-data/")
        assert result.is_error and "metadata" in text
        assert meta_of(result)["provenance"] == "none"  # simroute's own refusal, not the web's answer
        result, text, _ = await call_tool(client, "browser_navigate", url=other_site.url("/about"))
        assert result.is_error and "browser.allowed_origins" in text and "loopback" in text
        assert meta_of(result)["provenance"] == "none" and "simroute_own_answer" not in (result.meta or {})
        result, _, page = await call_tool(client, "browser_navigate", url=site.url("/about"))
        assert not result.is_error and page["title"] == "About" and meta_of(result)["provenance"] == "real"

        # A page's own fetch to a loopback origin not in the allowlist: refused by the proxy, recorded.
        script = (
            f"fetch('{other_site.url('/secret')}')"
            ".then(r => document.title = 'status ' + r.status).catch(() => document.title = 'failed')"
        )
        result, _, page = await call_tool(
            client,
            "browser_navigate",
            url="data:text/html," + urllib.parse.quote(f"<title>start</title><script>{script}</script>"),
        )
        deadline = time.monotonic() + 10
        while page.get("title") == "start" and time.monotonic() < deadline:
            _, _, page = await call_tool(client, "browser_snapshot")
    assert other_site.requests == []  # never reached
    navigations = [r for r in records_of(config) if r["channel"] == "browser" and r["tool"] == "browser_navigate"]
    assert [r["provenance"] for r in navigations[:3]] == ["none", "none", "real"]
    refused = [r for r in records_of(config) if r["channel"] == "http" and r["policy"] == "browser-address"]
    assert [r["arguments"]["path"] for r in refused] == ["/secret"] and refused[0]["route"] == "deny"
    assert (
        refused[0]["session"] == records_of(config)[0]["session"]
    )  # the agent's session, through its context's credential


async def test_https_pages_load_through_simroutes_proxy_without_ignoring_certificate_errors(make_config, tmp_path):
    from servers.http_upstream import serve_upstream

    (tmp_path / "tls").mkdir()
    with serve_upstream(tls_dir=tmp_path / "tls") as url:
        # Chromium trusts simroute's CA by key; simroute checks the site (self-made here: ssl_insecure).
        config = make_config(http={"ssl_insecure": True}, browser={"allowed_origins": ["https://127.0.0.1:*"]})
        async with stdio_client(config) as client:
            result, text, page = await call_tool(client, "browser_navigate", url=f"{url}/json")
        assert not result.is_error and '\\"ok\\": true' in page["snapshot"], text
    [row] = [r for r in records_of(config) if r["channel"] == "http" and r["arguments"]["path"] == "/json"]
    assert row["arguments"]["url"] == f"{url}/json" and row["provenance"] == "real"


async def test_downloads_are_refused_and_reported(make_config):
    config = make_config(browser={})
    page_html = '<title>files</title><a download="notes.txt" href="data:text/plain,secret">Get the file</a>'
    async with stdio_client(config) as client:
        _, _, page = await call_tool(client, "browser_navigate", url="data:text/html," + urllib.parse.quote(page_html))
        ref = page["snapshot"].split('link "Get the file" [ref=')[1].split("]")[0]
        result, text, page = await call_tool(client, "browser_click", ref=ref)
        for _ in range(10):  # the download event may land just after the click's answer
            if "download" in text:
                break
            await asyncio.sleep(0.2)
            result, text, page = await call_tool(client, "browser_snapshot")
    assert "download (notes.txt) was refused" in text
