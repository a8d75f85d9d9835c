"""Perturbations on the dashboard and /metrics of `simroute serve`, launched as a user
launches it: the records API and the records view (real headless Chromium) mark each
perturbed call with its kind and rule, the overview counts them by kind, and /metrics
counts them by channel and kind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import toolbox_server, write_config
from kit.serve import parsed, serving

from backends.browser.pool import BASE_ARGS

pytestmark = pytest.mark.integration

PLAN = {"seed": 2, "rules": [{"name": "flaky-echo", "kind": "error", "every": 2, "match": {"tool": "echo"}}]}


async def calls(port: int) -> list[bool]:
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=60) as client:
        return [
            (await client.call_tool("echo", {"text": f"hello {n}"}, raise_on_error=False)).is_error for n in range(4)
        ]


def test_perturbed_calls_are_marked_in_the_records_counted_in_the_overview_and_in_metrics(tmp_path: Path):
    from playwright.sync_api import sync_playwright

    config = write_config(
        tmp_path, mcpServers={"toolbox": toolbox_server()}, perturbations={"apply": "p", "plans": {"p": PLAN}}
    )
    with serving(config, tmp_path / "serve.log") as port:
        assert asyncio.run(calls(port)) == [False, True, False, True]
        base = f"http://127.0.0.1:{port}"
        samples = parsed(httpx.get(f"{base}/metrics", timeout=10).text)
        rows = httpx.get(f"{base}/dashboard/api/records", timeout=10).json()["rows"]
        overview = httpx.get(f"{base}/dashboard/api/overview", timeout=10).json()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
            try:
                page = browser.new_page()
                page.goto(f"{base}/dashboard?view=records")
                page.wait_for_selector("#main[data-ready='1']", timeout=15_000)
                marked = page.locator("#records tr.perturbed td.perturbation").all_inner_texts()
                page.goto(f"{base}/dashboard?view=overview")
                page.wait_for_selector("#main[data-ready='1']", timeout=15_000)
                counted = page.inner_text("#perturbed-calls")
            finally:
                browser.close()
    assert samples[("simroute_perturbations_total", (("channel", "mcp"), ("kind", "error")))] == 2.0
    perturbed = [row["perturbation"] for row in rows if row.get("perturbation")]
    assert len(rows) == 4 and perturbed == [
        {"kind": "error", "rule": "p:flaky-echo", "seed": 2, "n": n} for n in (4, 2)
    ]  # newest first
    assert overview["perturbations"] == {"error": 2}
    assert marked == ["error (p:flaky-echo, call 4)", "error (p:flaky-echo, call 2)"]
    assert counted == "perturbed: 2 (error 2)"
