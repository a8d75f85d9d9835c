"""The contained browser (browser.isolation: container) with the real Docker engine
and the image scripts/build-images.sh builds: hardened, no way out but simroute's
proxy, restarted when it dies, gone after stop and after its router is killed; and
`auto` without the image falls back to the host, saying what is lost.

Other engineers may run containers on the same engine: every assertion is about
containers this test's router owns (owner label) or named by this test's marker."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from kit.launch import records_of
from servers.web_pages import WebPages

pytestmark = pytest.mark.integration

OWNER_LABEL = "org.simroute.owner"
ROLE_FILTER = "label=org.simroute.role=browser"


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=check)


def containers_of(owner: str) -> list[str]:
    listed = docker(
        "ps", "--all", "--filter", ROLE_FILTER, "--filter", f"label={OWNER_LABEL}={owner}", "--format", "{{.Names}}"
    ).stdout
    return listed.split()


def runtime_config(tmp_path, **browser):
    """A router's config (also written to tmp_path/simroute.yaml, for `simroute records`)."""
    from router.config import parse_config

    text = json.dumps(
        {
            "store": {"path": str(tmp_path / "records.db")},
            "shell": {"enabled": False},
            "http": {"ca_dir": str(tmp_path / "ca")},
            "browser": {"isolation": "container", **browser},
        }
    )
    (tmp_path / "simroute.yaml").write_text(text)
    return parse_config(text)


class HostService:
    """A service of the host on loopback that any page could read (CORS open) if it reached it."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                body = b"secret of the host"
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def fetched(runtime, session: str, page_url: str) -> str:
    """What the page at `page_url` (/fetch?to=…) says its fetch gave."""
    page = await runtime.browser.act(session, "navigate", url=page_url)
    deadline = time.monotonic() + 15
    while "fetching" in page.snapshot and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        page = await runtime.browser.act(session, "snapshot")
    return page.snapshot


async def test_the_container_is_hardened_and_its_only_way_out_is_simroutes_proxy(tmp_path):
    from records.owners import this_process_owner
    from router.runtime.runtime import Runtime

    service = HostService()
    with WebPages() as site:
        site_port = site.server.server_address[1]
        # The test's pages are allowed; the host's other loopback services are not.
        runtime = await Runtime(runtime_config(tmp_path, allowed_origins=[f"http://127.0.0.1:{site_port}"])).start()
        try:
            assert (
                await runtime.browser.prepare() == "container" and containers_of(this_process_owner()) == []
            )  # started on first use
            page = await runtime.browser.act("agent", "navigate", url=site.url("/about"))
            assert page.title == "About", page.text()
            name = runtime.browser.container_name
            assert containers_of(this_process_owner()) == [name]

            info = json.loads(docker("inspect", name).stdout)[0]
            host = info["HostConfig"]
            assert info["Config"]["User"] == "1000:1000" and host["CapDrop"] == ["ALL"] and host["ReadonlyRootfs"]
            assert "no-new-privileges" in host["SecurityOpt"] and host["NetworkMode"] == "none"
            assert host["Memory"] == 2 * 1024**3 and host["PidsLimit"] == 1024 and host["ShmSize"] == 256 * 1024**2
            assert not host["Privileged"] and not host["PortBindings"] and not info["Config"].get("Volumes")
            mounts = info["Mounts"]
            assert [(m["Type"], m["Destination"], m["RW"]) for m in mounts] == [("bind", "/run/simroute", False)]
            assert os.listdir(mounts[0]["Source"]) == ["proxy.sock"]  # the one thing it can reach
            assert set(host["Tmpfs"]) == {"/tmp", "/home/browser"}

            # Inside: no interface but loopback, no route to the host's services or anywhere else.
            inside = docker("exec", name, "ls", "/sys/class/net").stdout.split()
            assert inside == ["lo"]
            for address, port in (("127.0.0.1", service.port), ("172.17.0.1", service.port), ("10.0.0.1", 80)):
                probe = docker("exec", name, "bash", "-c", f"exec 3<>/dev/tcp/{address}/{port}", check=False)
                assert probe.returncode != 0, f"the container reached {address}:{port}"

            # From inside the page: the host's other loopback service and a metadata address are refused.
            to_host = await fetched(runtime, "agent", site.url(f"/fetch?to=http://127.0.0.1:{service.port}/secret"))
            to_metadata = await fetched(
                runtime, "agent", site.url("/fetch?to=http://169.254.169.254/latest/meta-data/")
            )
            to_own_site = await fetched(runtime, "agent", site.url("/fetch?to=/open"))
            assert "secret of the host" not in to_host and "secret of the host" not in to_metadata
            assert "answered 200: secret of the host" in to_own_site  # the same page reaches an allowed origin
            assert service.requests == []
        finally:
            await runtime.aclose()
        assert containers_of(this_process_owner()) == [], "the browser's container outlived stop"
        rows = refused_rows(tmp_path)
    service.close()
    assert {(host, port, policy) for host, port, policy in rows} >= {
        ("127.0.0.1", service.port, "browser-address"),
        ("169.254.169.254", 80, "browser-address"),
    }


def refused_rows(tmp_path) -> list[tuple[str, int, str]]:
    """(host, port, policy) of the HTTP calls the browser's proxy refused."""
    rows = records_of(tmp_path / "simroute.yaml")
    return [
        (urlsplit(row["arguments"]["url"]).hostname, urlsplit(row["arguments"]["url"]).port or 80, row["policy"])
        for row in rows
        if row["channel"] == "http" and row["route"] == "deny"
    ]


async def test_a_dead_browser_gives_a_clear_error_then_a_fresh_one(tmp_path):
    from router.runtime.runtime import Runtime

    with WebPages() as site:
        runtime = await Runtime(runtime_config(tmp_path, allowed_origins=["http://127.0.0.1:*"])).start()
        try:
            page = await runtime.browser.act("a", "navigate", url=site.url("/about"))
            assert page.title == "About"
            first = runtime.browser.container_name
            docker("kill", first)  # out of memory, a crash, someone's `docker kill`
            deadline = time.monotonic() + 15
            while runtime.browser.running and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert not runtime.browser.running
            page = await runtime.browser.act("a", "snapshot")
            assert (
                page.is_error
                and "The browser stopped" in page.error
                and "next call opens a fresh browser" in page.error
            )
            page = await runtime.browser.act("a", "navigate", url=site.url("/form"))
            assert not page.is_error and page.title == "Contact"
            assert runtime.browser.container_name not in (None, first)
        finally:
            await runtime.aclose()


def test_leftovers_of_a_killed_router_are_reaped_at_the_next_start(tmp_path):
    # A router killed between `docker create` and the attach leaves a container no
    # process holds; the next start removes it (never a live router's).
    from records.owners import process_identity

    probe = subprocess.Popen(["sleep", "30"])
    owner = process_identity(probe.pid)
    probe.kill()
    probe.wait()
    leftover = f"simroute-browser-leftover-{uuid.uuid4().hex[:8]}"
    docker(
        "create",
        "--name",
        leftover,
        "--label",
        f"{OWNER_LABEL}={owner}",
        "--label",
        "org.simroute.role=browser",
        "simroute-browser:latest",
    )
    live = f"simroute-browser-live-{uuid.uuid4().hex[:8]}"
    from records.owners import this_process_owner

    docker(
        "create",
        "--name",
        live,
        "--label",
        f"{OWNER_LABEL}={this_process_owner()}",
        "--label",
        "org.simroute.role=browser",
        "simroute-browser:latest",
    )
    try:
        from backends.browser.pool import BrowserPool
        from router.config import BrowserConfig

        async def start() -> str | None:
            pool = BrowserPool(BrowserConfig(isolation="container"))
            try:
                return await pool.prepare()
            finally:
                await pool.aclose()

        assert asyncio.run(start()) == "container"
        assert containers_of(owner) == []
        assert containers_of(this_process_owner()) == [live]  # a live router's container stays
    finally:
        docker("rm", "-f", leftover, live, check=False)


async def test_auto_with_an_engine_and_the_image_contains_the_browser(tmp_path, caplog):
    """The default (`auto`) on a machine set up by scripts/setup.sh: Docker answers and
    the image is there, so Chromium runs contained, without a warning."""
    from backends.browser.pool import BrowserPool
    from router.config import BrowserConfig

    assert BrowserConfig().isolation == "auto"
    with caplog.at_level("WARNING", logger="simroute.browser"):
        pool = BrowserPool(BrowserConfig())
        try:
            assert await pool.prepare() == "container"
        finally:
            await pool.aclose()
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


async def test_auto_without_the_image_runs_on_the_host_and_says_what_is_lost(tmp_path, caplog):
    from backends.browser.pool import BrowserPool
    from router.config import BrowserConfig

    with caplog.at_level("WARNING", logger="simroute.browser"):
        pool = BrowserPool(BrowserConfig(isolation="auto", image="simroute-browser:missing"))
        try:
            assert await pool.prepare() == "host"
        finally:
            await pool.aclose()
    warning = " ".join(record.getMessage() for record in caplog.records)
    assert "simroute-browser:missing" in warning and "scripts/build-images.sh" in warning
    assert "Chromium runs on the host as this user" in warning and "files" in warning

    contained = BrowserPool(BrowserConfig(isolation="container", image="simroute-browser:missing"))
    try:
        assert await contained.prepare() is None
        with pytest.raises(Exception) as info:
            await contained.act("a", "navigate", url="data:text/html,<title>x</title>")
        assert "browser.isolation is container" in str(info.value) and "scripts/build-images.sh" in str(info.value)
    finally:
        await contained.aclose()
