"""The browser channel's real side through `simroute mcp` with a real MCP client and
Debian's Chromium, against pages served on loopback by the test: links, a form, a
multi-page flow, bad input, the allowlist, the proxy, and cleanup (no Chromium
process left behind). Every test runs with Chromium on the host and in its
container (browser.isolation); what only the container does is in
test_browser_isolation.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.browser import isolation, make_config  # noqa: F401 (every test here runs in both isolation modes)
from kit.http import http_config, start_proxy
from kit.launch import free_port, meta_of, records_of, simroute_executable, stdio_client
from kit.mcp import call_tool
from servers.web_pages import WebPages

pytestmark = pytest.mark.integration

# The kit turns simroute's own channels off; these tests want the browser on, and
# their pages are served on loopback (which the browser opens only when allowed).
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*"]
CONFIG_DEFAULTS = {"browser": {"allowed_origins": LOOPBACK_ORIGINS}}


TOOLS = {
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    "browser_type",
    "browser_press_key",
    "browser_navigate_back",
    "browser_close",
}


@pytest.fixture
def site():
    with WebPages() as pages:
        yield pages


@pytest.fixture
def marker():
    """A switch Chromium ignores, naming this test's browser processes."""
    value = f"--simroute-test-{uuid.uuid4().hex[:12]}"
    yield value
    deadline = time.monotonic() + 15
    while chromium_processes(value) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not chromium_processes(value), "a Chromium process was left behind"


def in_this_pid_namespace(pid: int) -> bool:
    return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")


def is_docker_client(pid: int) -> bool:
    return Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()).name == "docker"


def chromium_processes(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def browser_config(make_config, marker, **browser):
    return make_config(browser={"args": [marker], "allowed_origins": LOOPBACK_ORIGINS, **browser})


def ref_of(snapshot: str, role_and_name: str) -> str:
    """The ref of the element whose snapshot line starts with `role_and_name`, e.g. 'link "About us"'."""
    match = re.search(re.escape(role_and_name) + r"[^\n]*?\[ref=([^\]]+)\]", snapshot)
    assert match, f"{role_and_name!r} not in snapshot:\n{snapshot}"
    return match.group(1)


async def test_offered_with_playwright_mcp_shapes_and_no_upstreams(make_config):
    config = make_config()  # no mcpServers: simroute serves its own tools only
    async with stdio_client(config) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert TOOLS <= set(tools)
    assert tools["browser_navigate"].input_schema["required"] == ["url"]
    assert set(tools["browser_click"].input_schema["properties"]) == {"ref", "element"} and tools[
        "browser_click"
    ].input_schema["required"] == ["ref"]
    assert (
        set(tools["browser_type"].input_schema["required"]) == {"ref", "text"}
        and "submit" in tools["browser_type"].input_schema["properties"]
    )
    assert tools["browser_press_key"].input_schema["required"] == ["key"]
    assert tools["browser_snapshot"].annotations.read_only_hint is True

    disabled = make_config(browser={"enabled": False}, mcpServers={})
    proc = subprocess.run(
        [simroute_executable(), "mcp", "--config", str(disabled)],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "nothing to serve" in proc.stderr


async def test_links_form_and_a_multi_page_flow(make_config, site, marker, isolation):
    config = browser_config(make_config, marker)
    async with stdio_client(config) as client:
        result, text, page = await call_tool(client, "browser_navigate", url=site.url("/"))
        assert not result.is_error and meta_of(result)["provenance"] == "real"
        assert text.startswith(f"- Page URL: {site.url('/')}\n- Page Title: Home\n- Page Snapshot:\n```yaml\n")
        assert page["url"] == site.url("/") and page["title"] == "Home" and 'heading "Welcome home"' in page["snapshot"]
        running = chromium_processes(marker)
        assert running, "the marker should name the running browser"
        # Contained: not one of the host's processes (another pid namespace), nor the router's user.
        if isolation == "container":
            # Here only the `docker run` client that holds its pipe; Chromium's processes are the container's.
            contained = [pid for pid in running if not in_this_pid_namespace(pid)]
            assert contained and all(is_docker_client(pid) for pid in set(running) - set(contained))
            owners = {os.stat(f"/proc/{pid}").st_uid for pid in contained}
            assert owners == {1000} and os.getuid() not in owners  # the image's user, never the router's
        else:
            assert all(in_this_pid_namespace(pid) for pid in running)

        # A multi-page flow by links.
        _, _, page = await call_tool(
            client, "browser_click", ref=ref_of(page["snapshot"], 'link "Start the tour"'), element="Start the tour"
        )
        assert page["title"] == "Tour 1 of 3"
        for step in (2, 3):
            result, _, page = await call_tool(client, "browser_click", ref=ref_of(page["snapshot"], 'link "Next step"'))
            assert page["title"] == f"Tour {step} of 3" and page["url"] == site.url(f"/flow/{step}")
        assert 'heading "Tour finished"' in page["snapshot"]
        # Sticky: the session's browser stays real, decided once.
        assert meta_of(result)["route"] == "real" and meta_of(result)["policy"] == "sticky"
        _, _, page = await call_tool(client, "browser_navigate_back")
        assert page["title"] == "Tour 2 of 3"

        # A form.
        _, _, page = await call_tool(client, "browser_navigate", url=site.url("/form"))
        result, text, page = await call_tool(
            client, "browser_type", ref=ref_of(page["snapshot"], 'textbox "Your name"'), text="Ada", submit=True
        )
        assert (
            not result.is_error
            and page["url"] == site.url("/greet?name=Ada")
            and 'heading "Hello, Ada!"' in page["snapshot"]
        )

        # Keys, snapshot, close.
        await call_tool(client, "browser_navigate", url=site.url("/keys"))
        _, _, page = await call_tool(client, "browser_press_key", key="ArrowLeft")
        assert "pressed ArrowLeft" in page["snapshot"]
        _, _, again = await call_tool(client, "browser_snapshot")
        assert again["snapshot"] == page["snapshot"]
        result, text, _ = await call_tool(client, "browser_close")
        assert not result.is_error and text == "No open tabs. Navigate to a URL to create one."
        result, text, _ = await call_tool(client, "browser_snapshot")
        assert result.is_error and "browser_navigate" in text
        result, _, page = await call_tool(client, "browser_navigate", url=site.url("/about"))  # a new page after close
        assert not result.is_error and page["title"] == "About"

    rows = records_of(config)
    tools = [row for row in rows if row["channel"] == "browser"]
    assert {row["server"] for row in tools} == {"browser"}
    assert tools[0]["tool"] == "browser_navigate" and tools[0]["observation"]["structured"]["title"] == "Home"
    # Every request the pages made is an HTTP call of the same agent session, through simroute's proxy.
    pages = [row for row in rows if row["channel"] == "http"]
    assert {row["channel"] for row in rows} == {"browser", "http"} and {row["session"] for row in pages} == {
        tools[0]["session"]
    }
    assert {row["arguments"]["path"] for row in pages} >= {"/", "/flow/1", "/form", "/greet", "/about"}


@pytest.mark.serial
async def test_bad_input_gives_clear_observations_and_the_session_stays_usable(make_config, site, marker):
    config = browser_config(make_config, marker, navigation_timeout_s=4, snapshot_max_chars=3000)
    closed_port = free_port()
    async with stdio_client(config) as client:
        # An unknown ref, before and after a page is open.
        result, text, _ = await call_tool(client, "browser_click", ref="e1")
        assert result.is_error and "browser_navigate" in text
        _, _, page = await call_tool(client, "browser_navigate", url=site.url("/"))
        result, text, structured = await call_tool(client, "browser_click", ref="e999")
        assert (
            result.is_error
            and text == "### Error\nRef e999 not found in the current page snapshot. Try capturing new snapshot."
        )
        assert structured == {}
        # Invalid arguments are refused before routing.
        result, text, _ = await call_tool(client, "browser_click", element="no ref")
        assert result.is_error and "ref" in text and meta_of(result)["policy"] == "input-schema"

        # An unreachable URL.
        result, text, page = await call_tool(client, "browser_navigate", url=f"http://127.0.0.1:{closed_port}/")
        assert (
            result.is_error
            and "failed (502)" in text
            and "Connect call failed" in text
            and text.startswith("### Error\nNavigation to")
        )

        # A page that never finishes loading: the deadline answers with the page so far.
        started = time.monotonic()
        result, text, page = await call_tool(client, "browser_navigate", url=site.url("/never"))
        assert time.monotonic() - started < 15
        assert result.is_error and "did not finish within 4s" in text and 'heading "Still loading"' in page["snapshot"]

        # A huge page: trimmed, with a marker.
        result, text, page = await call_tool(client, "browser_navigate", url=site.url("/huge"))
        assert not result.is_error and page["truncated"] and len(page["snapshot"]) <= 3200
        assert "snapshot trimmed" in page["snapshot"].splitlines()[-1]

        # JavaScript dialogs: dismissed, reported in the observation of the action that raised them.
        _, text, page = await call_tool(client, "browser_navigate", url=site.url("/alert-on-load"))
        assert "alert dialog said 'hello from the page'" in text and page["events"]
        _, _, page = await call_tool(client, "browser_navigate", url=site.url("/dialogs"))
        _, text, page = await call_tool(client, "browser_click", ref=ref_of(page["snapshot"], 'button "Ask"'))
        assert (
            "confirm dialog said 'Really?'; it was dismissed" in text
            and "paragraph [ref=" in page["snapshot"]
            and ': "no"' in page["snapshot"]
        )

        # A link opening a new tab: the new tab becomes the current page.
        _, _, page = await call_tool(client, "browser_navigate", url=site.url("/popup"))
        _, text, page = await call_tool(
            client, "browser_click", ref=ref_of(page["snapshot"], 'link "Open about in a new tab"')
        )
        assert (
            "new tab opened" in text
            and "replaced the current page, which was closed" in text
            and page["title"] == "About"
        )

        # Still usable after all of it.
        result, _, page = await call_tool(client, "browser_navigate", url=site.url("/about"))
        assert not result.is_error and page["title"] == "About"


async def test_allowlist_blocks_other_hosts_and_their_subrequests(make_config, site, marker):
    config = browser_config(make_config, marker, allowed_domains=["127.0.0.1"])
    async with stdio_client(config) as client:
        result, _, page = await call_tool(client, "browser_navigate", url=site.url("/about"))
        assert not result.is_error and page["title"] == "About"
        result, text, _ = await call_tool(
            client, "browser_navigate", url=f"http://localhost:{site.server.server_address[1]}/"
        )
        assert result.is_error and "blocked" in text and "allowed_domains" in text
        assert meta_of(result)["provenance"] == "none"  # simroute's refusal: never replayed or learned as the web's
        # A page's own requests and links to other hosts are blocked too.
        _, _, page = await call_tool(client, "browser_navigate", url=site.url("/outside"))
        _, text, page = await call_tool(client, "browser_click", ref=ref_of(page["snapshot"], 'link "Elsewhere"'))
        assert (
            "Access to http://localhost:" in text
            and page["url"] != f"http://localhost:{site.server.server_address[1]}/about"
        )
    assert "/" not in site.requests and "/pixel" not in site.requests  # never requested
    assert site.requests.count("/about") == 1


async def test_browser_traffic_goes_through_the_configured_proxy(make_config, site, marker):
    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # a plain-HTTP forward proxy: the request line holds the absolute URL
            seen.append(self.path)
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(self.path, timeout=10) as upstream:
                body = upstream.read()
                self.send_response(upstream.status)
                self.send_header("Content-Type", upstream.headers.get("Content-Type", "text/html"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        config = browser_config(make_config, marker, proxy=f"http://127.0.0.1:{proxy.server_address[1]}")
        async with stdio_client(config) as client:
            result, _, page = await call_tool(client, "browser_navigate", url=site.url("/about"))
        assert not result.is_error and page["title"] == "About"
        assert site.url("/about") in seen
    finally:
        proxy.shutdown()
        proxy.server_close()


async def test_the_pages_own_requests_are_routed_by_simroutes_http_channel(make_config, site, marker, tmp_path):
    # browser.proxy -> `simroute http-proxy`: the page and the API it fetches are calls
    # of the HTTP channel, and an HTTP rule decides the sub-request the agent never made.
    proxy_dir = tmp_path / "http-channel"
    proxy_dir.mkdir()
    deny_api = {"name": "no-stock-api", "match": {"channel": "http", "arguments": {"path": "/api/*"}}, "route": "deny"}
    proxy = start_proxy(http_config(proxy_dir, rules=[deny_api]))
    try:
        async with stdio_client(browser_config(make_config, marker, proxy=proxy.url)) as client:
            result, _, page = await call_tool(client, "browser_navigate", url=site.url("/widgets"))
            assert not result.is_error and page["title"] == "Widgets"
            deadline = time.monotonic() + 10
            while "loading" in page["snapshot"] and time.monotonic() < deadline:  # the fetch settles
                await asyncio.sleep(0.1)
                _, _, page = await call_tool(client, "browser_snapshot")
        assert "stock unavailable (403)" in page["snapshot"], page["snapshot"]
    finally:
        proxy.stop()
    routes = {row["arguments"]["path"]: (row["channel"], row["route"], row["provenance"]) for row in proxy.records()}
    assert routes["/widgets"] == ("http", "real", "real")
    assert routes["/api/stock"] == ("http", "deny", "none")
    assert "/widgets" in site.requests and "/api/stock" not in site.requests  # denied before the site saw it


async def test_each_http_agent_session_has_its_own_browser(make_config, site, marker, simroute_http):
    server = simroute_http(browser_config(make_config, marker))
    a = Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": "agent-a"}))
    b = Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": "agent-b"}))
    async with a, b:
        _, _, page_a = await call_tool(a, "browser_navigate", url=site.url("/about"))
        result, text, _ = await call_tool(b, "browser_snapshot")
        assert page_a["title"] == "About" and result.is_error and "browser_navigate" in text
        await asyncio.gather(
            call_tool(a, "browser_navigate", url=site.url("/flow/1")),
            call_tool(b, "browser_navigate", url=site.url("/form")),
        )
        (_, _, page_a), (_, _, page_b) = await asyncio.gather(
            call_tool(a, "browser_snapshot"), call_tool(b, "browser_snapshot")
        )
        assert 'heading "Step one"' in page_a["snapshot"] and 'heading "Contact"' in page_b["snapshot"]
    server.process.terminate()
    assert server.process.wait(20) == 0
    assert not chromium_processes(marker)


async def test_without_chromium_the_real_route_names_what_is_missing(make_config, site, isolation):
    if isolation == "host":
        config, missing, remedy = (
            make_config(browser={"executable_path": "/nonexistent/chromium"}),
            "/nonexistent/chromium",
            "apt-get install chromium",
        )
    else:
        config, missing, remedy = (
            make_config(browser={"image": "simroute-browser:missing"}),
            "simroute-browser:missing",
            "scripts/build-images.sh",
        )
    async with stdio_client(config) as client:
        result, text, _ = await call_tool(client, "browser_navigate", url=site.url("/"))
        assert result.is_error and missing in text and remedy in text
        assert meta_of(result)["provenance"] == "none"
        result, text, _ = await call_tool(client, "browser_snapshot")  # still answers, still clearly
        assert result.is_error and "Chromium" in text


async def test_contexts_close_with_their_session_and_chromium_at_shutdown(tmp_path, site, marker, isolation):
    # In process, to watch the pool: idle sessions are reaped, shutdown stops Chromium.
    from router.config import parse_config
    from router.runtime.runtime import Runtime

    config = parse_config(
        json.dumps(
            {
                "store": {"path": str(tmp_path / "r.db")},
                "shell": {"enabled": False},
                "sessions": {"idle_ttl_s": 0.5},
                "http": {"ca_dir": str(tmp_path / "ca")},
                "browser": {"args": [marker], "allowed_origins": LOOPBACK_ORIGINS, "isolation": isolation},
            }
        )
    )
    runtime = await Runtime(config).start()
    try:
        # As the engine does for a browser call (router/engine/engine.py): the session counts the action
        # in flight, so the reaper cannot take it mid-action. The page's requests go through
        # simroute's proxy as the session's HTTP calls: they open it in the registry, and
        # without the count a slow action would outlive the 0.5 s TTL they started.
        session = runtime.sessions.get("one")
        session.in_flight += 1
        try:
            page = await runtime.browser.act("one", "navigate", url=site.url("/about"))
        finally:
            session.in_flight -= 1
        assert page.title == "About" and len(runtime.browser) == 1
        # The registry knows the session; nothing touches it again.
        deadline = time.monotonic() + 10
        while len(runtime.browser) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert len(runtime.browser) == 0, "the idle session's browser context was not closed"
        assert chromium_processes(marker)  # the browser itself stays for the next session
    finally:
        await runtime.aclose()
    assert not chromium_processes(marker)


def test_no_chromium_left_when_the_router_is_killed(tmp_path, marker, isolation, request):
    # SIGKILL gives simroute no chance to close anything: Playwright's driver sees its
    # pipe close and takes Chromium down with it (contained: `docker run` goes, the
    # container's stdin closes, Chromium exits on its closed pipe, the container is removed).
    script = tmp_path / "killed.py"
    script.write_text(
        "import asyncio, os, sys\n"
        "from router.config import BrowserConfig\n"
        "from backends.browser.pool import BrowserPool\n"
        "async def main():\n"
        f"    pool = BrowserPool(BrowserConfig(args=[{marker!r}], isolation={isolation!r}))\n"
        "    page = await pool.act('a', 'navigate', url='data:text/html,<title>up</title>')\n"
        "    from records.owners import this_process_owner\n"
        "    print(page.title, this_process_owner(), flush=True)\n"
        "    os.kill(os.getpid(), 9)\n"
        "asyncio.run(main())\n"
    )
    # A temporary folder of this test's own: a router started by a parallel test reaps
    # the killed router's folder from the shared one before this test can look.
    # Short: a Unix socket's path has at most 107 bytes (Chromium's singleton socket lives here).
    private_tmp = Path(tempfile.mkdtemp(prefix="sr-"))
    request.addfinalizer(lambda: shutil.rmtree(private_tmp, ignore_errors=True))
    env = {
        **os.environ,
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parents[3])),
        "TMPDIR": str(private_tmp),
    }
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert len(out.stdout.split()) == 2, out.stderr[-3000:]
    title, owner = out.stdout.split()
    assert out.returncode == -9 and title == "up", out.stderr
    # The `marker` fixture asserts that no process of this browser is left; no container either.
    deadline = time.monotonic() + 15
    while browser_containers(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not browser_containers(marker)
    if isolation == "container":
        # The killed router's folder (launcher) is left; the next router's start removes it.
        assert owner in workdir_owners(private_tmp)
        next_start = tmp_path / "next_start.py"
        next_start.write_text(
            "import asyncio\n"
            "from router.config import BrowserConfig\n"
            "from backends.browser.pool import BrowserPool\n"
            "async def main():\n"
            "    pool = BrowserPool(BrowserConfig(isolation='container'))\n"
            "    assert await pool.prepare() == 'container'\n"
            "    await pool.aclose()\n"
            "asyncio.run(main())\n"
        )
        started = subprocess.run([sys.executable, str(next_start)], capture_output=True, text=True, timeout=60, env=env)
        assert started.returncode == 0, started.stderr
        assert owner not in workdir_owners(private_tmp)


def workdir_owners(folder: Path) -> set[str]:
    return {p.read_text() for p in folder.glob("simroute-browser-*/owner")}


def browser_containers(marker: str) -> list[str]:
    """simroute's browser containers (any state) whose Chromium was given `marker`."""
    listed = subprocess.run(
        [
            "docker",
            "ps",
            "--all",
            "--no-trunc",
            "--filter",
            "label=org.simroute.role=browser",
            "--format",
            "{{.Names}} {{.Command}}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return [line.split()[0] for line in listed.splitlines() if marker in line]
