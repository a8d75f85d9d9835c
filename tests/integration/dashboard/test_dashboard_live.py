"""The dashboard and /metrics as a user meets them, beyond the generated-store tests
of test_dashboard.py: `simroute dashboard` on its default port, and `simroute serve`'s
live figures (the spool while the store is locked, the shadow queue and its skips)
read back from /metrics, from the store and from the page in headless Chromium."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.dashboard import fill_store
from kit.launch import records_of, simroute_executable, toolbox_server, write_config
from kit.serve import parsed, serving

from backends.browser.pool import BASE_ARGS
from router.cli.launch import stop, wait_for_port

pytestmark = pytest.mark.integration

DEFAULT_PORT = 8766  # `simroute dashboard` without --port (README: http://127.0.0.1:8766/dashboard)


@contextlib.contextmanager
def browsing(url: str) -> Iterator:
    """A headless Chromium page on `url`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            yield page
        finally:
            browser.close()


def ready(page) -> None:
    page.wait_for_selector("#main[data-ready='1']", timeout=15_000)


def shot(page, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0


@pytest.mark.serial
def test_dashboard_without_a_port_listens_on_8766(tmp_path: Path):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", DEFAULT_PORT))
        except OSError as exc:
            pytest.fail(
                f"port {DEFAULT_PORT}, the dashboard's default, is taken on this machine ({exc}): "
                f"stop what listens there (`ss -ltnp 'sport = :{DEFAULT_PORT}'`) and run this test again"
            )
    config = write_config(tmp_path)
    asyncio.run(fill_store(tmp_path / "records.db", 50, now=time.time()))
    log = tmp_path / "dashboard.log"
    process = subprocess.Popen(
        [simroute_executable(), "dashboard", "--config", str(config)],  # no --port, as a user starts it
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(DEFAULT_PORT, process, describe=log.read_text)
        assert process.poll() is None, log.read_text()  # ours listens there, not something that came meanwhile
        page = httpx.get(f"http://127.0.0.1:{DEFAULT_PORT}/dashboard", timeout=10)
        assert page.status_code == 200 and "simroute dashboard" in page.text
        overview = httpx.get(
            f"http://127.0.0.1:{DEFAULT_PORT}/dashboard/api/overview", params={"since": "0"}, timeout=10
        ).json()
        assert (
            sum(row["calls"] for row in overview["rows"]) == 52
        )  # this store's records: the 50 generated, the known and the diverted one
        with browsing(f"http://127.0.0.1:{DEFAULT_PORT}/dashboard?view=overview") as browser_page:
            ready(browser_page)
            assert browser_page.inner_text("#total-calls") == "52 calls"
            shot(browser_page, tmp_path, "default-port-overview")
    finally:
        stop(process)
    assert f"http://127.0.0.1:{DEFAULT_PORT}/dashboard" in log.read_text()  # and says so


# Holds the store's write lock until a line (or the end) comes on its stdin: a loaded
# machine may take longer than any fixed hold to make the calls.
_HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
"""


async def echo(port: int, *texts: str) -> None:
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=60) as client:
        for text in texts:
            assert (await client.call_tool("echo", {"text": text})).content[0].text == text


async def test_metrics_show_the_spool_while_the_store_is_locked_and_empty_once_flushed(tmp_path: Path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    spool = tmp_path / "records.spool.jsonl"  # beside the SQLite file (Config.spool_path)
    with serving(config, tmp_path / "serve.log") as port:
        await echo(port, "warm")  # the store exists and is open
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "records.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout.readline().strip() == "locked"
        await echo(port, "spooled 1", "spooled 2")
        async with httpx.AsyncClient(timeout=10) as http:
            deadline = time.monotonic() + 30
            while True:  # each record is spooled once the store's busy wait gives up on the lock
                locked = parsed((await http.get(f"http://127.0.0.1:{port}/metrics")).text)
                spool_size = spool.stat().st_size if spool.exists() else 0
                settled = locked[("simroute_spool_bytes", ())] == spool_size
                if (locked[("simroute_spooled_records_total", ())] >= 2 and settled) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
        holder.communicate("release\n", timeout=10)
        assert holder.returncode == 0
        assert (
            locked[("simroute_spooled_records_total", ())] >= 2
        )  # each record of both calls (a call may write more than one)
        assert locked[("simroute_spool_bytes", ())] == spool_size > 0
        async with httpx.AsyncClient(timeout=10) as http:
            deadline = time.monotonic() + 15
            while True:  # the lock is gone: the spool flushes into the store
                flushed = parsed((await http.get(f"http://127.0.0.1:{port}/metrics")).text)
                if flushed[("simroute_spool_bytes", ())] == 0 or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
        assert flushed[("simroute_spool_bytes", ())] == 0 == spool.stat().st_size
        assert (
            flushed[("simroute_spooled_records_total", ())] == locked[("simroute_spooled_records_total", ())]
        )  # a count, kept
    assert [r["arguments"]["text"] for r in records_of(config)] == ["warm", "spooled 1", "spooled 2"]


@contextlib.contextmanager
def silent_world_model() -> Iterator[str]:
    """An OpenAI-compatible address that accepts connections and never answers: a
    shadow simulation sent there runs until its deadline, holding its place in the queue."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)  # never accepted: the kernel completes the handshakes, nobody reads
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def test_overview_shows_the_shadow_queue_and_skips_that_metrics_and_the_store_report(tmp_path: Path):
    """`simroute serve` in shadow mode with a queue of one and a world model that does not
    answer: of four calls, the first's shadow work runs, the second's waits in the queue,
    the other two are skipped. The overview says so, as /metrics and the store do."""
    with silent_world_model() as url:
        config = write_config(
            tmp_path,
            mcpServers={"toolbox": toolbox_server()},
            mode="shadow",
            shadow={"queue_size": 1, "stop_grace_s": 0, "drain_on_start": False},
            world_model={"engine": "openai", "url": url, "deadline_s": 300},
        )
        with serving(config, tmp_path / "serve.log") as port:
            asyncio.run(echo(port, "one", "two", "three", "four"))
            metrics = parsed(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
            statuses = [r["status"] for r in records_of(config)]
            with browsing(f"http://127.0.0.1:{port}/dashboard?view=overview") as page:
                ready(page)
                stats = page.inner_text("#main p.stats")
                shot(page, tmp_path, "serve-overview-shadow-queue")
            after = parsed(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
    shown_queue = int(re.search(r"shadow queue: (\d+)", stats).group(1))
    shown_skipped = int(re.search(r"shadow skipped: (\d+)", stats).group(1))
    assert statuses == ["pending", "pending", "skipped", "skipped"], statuses
    assert (
        metrics[("simroute_shadow_queue_depth", ())] == 2 == after[("simroute_shadow_queue_depth", ())]
    )  # one running, one waiting
    assert metrics[("simroute_shadow_skipped_total", ())] == 2 == after[("simroute_shadow_skipped_total", ())]
    assert (shown_queue, shown_skipped) == (2, 2), (
        stats
    )  # what the page shows: the metrics' figures, the store's skipped records
    assert "4 calls" in stats
