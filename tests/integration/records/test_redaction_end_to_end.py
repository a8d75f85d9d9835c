"""Secrets never reach the store, the spool or the logs: an MCP argument, an HTTP
header, a query parameter and a JSON body, through simroute launched as a user
launches it; then a byte search of every file simroute wrote."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from fastmcp import Client
from kit.browser import isolation, make_config  # noqa: F401 (the browser tests here run in both isolation modes)
from kit.http import http_config, start_proxy
from kit.launch import records_of, toolbox_server
from servers.http_upstream import serve_upstream

pytestmark = pytest.mark.integration

SECRETS = {
    "mcp": "MSECRETmcp0123456789",
    "key": "sk-live-KSECRETkey0123456789abcdef",
    "header": "HSECRETheader0123456789",
    "query": "QSECRETquery0123456789",
    "body": "BSECRETbody0123456789",
}


def written_files(folder):
    return [path for path in folder.rglob("*") if path.is_file() and path.suffix not in (".pem", ".p12", ".key")]


async def test_secrets_of_every_kind_are_redacted_before_storage(tmp_path, simroute_http):
    server = simroute_http(http_config(tmp_path, mcpServers={"toolbox": toolbox_server()}))
    async with Client(server.url) as client:
        result = await client.call_tool("echo", {"text": f"password={SECRETS['mcp']} and {SECRETS['key']}"})
        assert SECRETS["mcp"] in result.content[0].text  # the agent still gets the real answer
    server.process.terminate()
    server.process.wait(15)

    with serve_upstream() as upstream:
        proxy = start_proxy(tmp_path / "simroute.yaml")
        try:
            answer = httpx.Client(proxy=proxy.url, timeout=30).post(
                f"{upstream}/echo?api_key={SECRETS['query']}&page=2",
                json={"password": SECRETS["body"], "user": "ada"},
                headers={"Authorization": f"Bearer {SECRETS['header']}"},
            )
        finally:
            proxy.stop()
    assert answer.status_code == 200 and SECRETS["header"] in answer.text  # what the upstream echoed reaches the agent

    rows = records_of(tmp_path / "simroute.yaml")
    assert [row["tool"] for row in rows] == ["echo", "POST"]
    assert "[redacted:" in rows[0]["arguments"]["text"] and "redacted" in rows[1]["arguments"]["url"]
    leaks = [
        (path.name, name)
        for path in written_files(tmp_path)
        for name, secret in SECRETS.items()
        if secret.encode() in path.read_bytes()
    ]
    assert leaks == []  # store, WAL, spool and the logs of both processes


async def typed_into_a_page(make_config, path: str, field: str, secret: str, element: str | None = None) -> None:
    """Navigate the real browser to a test page and type `secret` into the text box named `field`."""
    import re

    from kit.launch import stdio_client
    from servers.web_pages import WebPages

    with WebPages() as site:
        config = make_config(browser={"allowed_origins": ["http://127.0.0.1:*"]})
        async with stdio_client(config) as client:
            page = await client.call_tool("browser_navigate", {"url": site.url(path)})
            ref = re.search(rf'textbox "{field}" \[ref=([^\]]+)\]', page.structured_content["snapshot"]).group(1)
            arguments = {"ref": ref, "text": secret, **({"element": element} if element else {})}
            typed = await client.call_tool("browser_type", arguments)
            assert not typed.is_error
    [typing] = [row for row in records_of(config) if row["tool"] == "browser_type"]
    assert typing["arguments"]["text"].startswith("[redacted:")


async def test_text_typed_into_a_password_field_is_redacted(make_config, tmp_path):
    secret = "PSECRETtyped0123456789"
    await typed_into_a_page(make_config, "/login", "Password", secret)  # no element text: named from the page
    assert [path.name for path in written_files(tmp_path) if secret.encode() in path.read_bytes()] == []


async def test_text_typed_into_a_password_input_the_name_does_not_reveal_is_redacted(make_config, tmp_path):
    """The real page says which inputs are passwords: a field labelled "Access phrase"
    is one, though no name rule would catch it."""
    secret = "PHRASEtyped0123456789"
    await typed_into_a_page(make_config, "/vault", "Access phrase", secret, element="Access phrase")
    assert [path.name for path in written_files(tmp_path) if secret.encode() in path.read_bytes()] == []
