"""`BrowserPool`: the browser channel's real side. One Chromium, shared, launched
on the first real browser action; one browser context per agent session, closed
when the session closes (explicitly, on idle TTL, at shutdown).

Chromium runs on the host or in a hardened container (`browser.isolation`, see
isolation.py and container.py); Playwright drives it the same way in both, so
the sessions do not know which. A Chromium that dies (crashed, out of memory,
its container killed) is launched again on the next call; each session that had
pages in it gets a clear error once, then a fresh context.

Playwright is imported here, lazily: a router that never drives a real browser
never loads it. Chromium is Debian's (`/usr/bin/chromium` on the host, the
image's in a container); Playwright's own browser download is not used.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from backends.browser import container, isolation
from backends.browser.driver_errors import first_line, playwright_error
from backends.browser.options import BrowserConfig
from backends.browser.page_state import PageState
from backends.browser.proxy_socket import INSIDE_PROXY, ProxySocket
from backends.browser.session import BrowserSession
from backends.docker_engine import ENGINE_ERRORS
from backends.errors import BackendError, BackendUnavailable
from records.owners import this_process_owner

log = logging.getLogger("simroute.browser")

# Chromium on a server: no sandbox (containers, root), no GPU, and none of the
# background traffic (updates, sync, QUIC probes) a closed network would refuse.
# WebRTC opens UDP sockets of its own, past the proxy (on the host, straight to the
# network): its IP handling policy keeps it to the proxy. Debian's Chromium reads
# `--webrtc-ip-handling-policy`; the older `--force-...` form is ignored there.
BASE_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)
_LAUNCH_TIMEOUT_S = 30.0
_RESOLVE_TIMEOUT_S = 60.0  # Docker: ping, image, reaping leftovers


class Egress(Protocol):
    """Where the browser's traffic goes: a proxy that routes and records every request,
    one credential per context (simroute's HTTP channel, see router/http/browser_egress.py)."""

    async def proxy_server(self) -> str: ...

    def credential(self, session_id: str) -> dict[str, str]: ...

    def revoke(self, credential: dict[str, str]) -> None: ...

    def chromium_args(self) -> list[str]: ...

    async def refusal(self, url: str) -> str | None: ...


class BrowserPool:
    def __init__(self, config: BrowserConfig, *, egress: Egress | None = None) -> None:
        self.config = config
        self.egress = egress
        self._playwright: Any = None
        self._browser: Any = None
        self._launching = asyncio.Lock()
        self._sessions: dict[str, BrowserSession] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._closed = False
        self._resolving = asyncio.Lock()
        self._resolved = False
        self._engine: isolation.ContainerEngine | None = None  # None: host isolation
        self._unavailable: BackendUnavailable | None = None  # container isolation asked for, not possible
        self._workdir: Path | None = None  # a container's launcher and proxy socket (container.py)
        self._container: str | None = None  # the running container's name
        self._proxy_socket: ProxySocket | None = None  # the container's way to simroute's proxy
        self._lost: dict[str, str] = {}  # session -> why its pages are gone (told on its next call)
        # Asked before a session's first browser context opens here (with several replicas:
        # is the session's browser on another one?); raises BackendUnavailable to refuse it.
        self.before_open: Callable[[str], Awaitable[None]] | None = None
        self.after_close: Callable[[str], Awaitable[None]] | None = None  # told when a session's context closed

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def launched(self) -> bool:
        return self._browser is not None

    @property
    def isolation(self) -> str | None:
        """ "container" or "host" once resolved (`prepare`), else None."""
        if not self._resolved or self._unavailable is not None:
            return None
        return "container" if self._engine is not None else "host"

    @property
    def running(self) -> bool:
        """Chromium is launched and connected (False once it died, until relaunched)."""
        return self._browser is not None and self._browser.is_connected()

    @property
    def container_name(self) -> str | None:
        return self._container if self._browser is not None else None

    async def prepare(self) -> str | None:
        """Decide where Chromium runs (Docker is asked once, with a deadline). Called
        at router start (where `auto` warns when it falls back to the host), else on
        first use. Never raises: a `container` isolation that cannot be had is
        reported by each real call."""
        async with self._resolving:
            if not self._resolved:
                try:
                    self._engine = await asyncio.wait_for(
                        asyncio.to_thread(isolation.resolve, self.config), _RESOLVE_TIMEOUT_S
                    )
                except BackendUnavailable as exc:
                    self._unavailable = BackendUnavailable(
                        f"browser.isolation is container and Chromium cannot be contained: {exc}"
                    )
                    log.error("%s", self._unavailable)
                except TimeoutError:
                    stuck = f"the Docker engine did not answer within {_RESOLVE_TIMEOUT_S:g}s"
                    if self.config.isolation == "container":
                        self._unavailable = BackendUnavailable(
                            f"browser.isolation is container and Chromium cannot be contained: {stuck}"
                        )
                        log.error("%s", self._unavailable)
                    else:
                        log.warning(
                            "browser.isolation is auto and Chromium cannot be contained (%s): %s",
                            stuck,
                            isolation.HOST_RISK,
                        )
                self._resolved = True
                if self.isolation is not None:
                    log.info("browser isolation: %s", self.isolation)
        return self.isolation

    # --- per session --------------------------------------------------------------------

    async def session(self, session_id: str) -> BrowserSession:
        """This agent session's browser, opened (and Chromium launched) on first use.
        Raises BackendUnavailable when Chromium or Playwright is missing."""
        existing = self._sessions.get(session_id)
        if existing is not None and self._browser is not None and self._browser.is_connected():
            return existing
        lock = self._opening.setdefault(session_id, asyncio.Lock())
        async with lock:
            existing = self._sessions.get(session_id)
            if existing is not None and self._browser is not None and self._browser.is_connected():
                return existing
            restarted = existing is not None
            if not restarted and self.before_open is not None:
                await self.before_open(session_id)
            browser = await self._ensure_browser()
            try:
                opened = await asyncio.wait_for(
                    BrowserSession.open(
                        session_id, browser, self.config, egress=self.egress, proxy_server=self._inside_proxy()
                    ),
                    _LAUNCH_TIMEOUT_S,
                )
            except (playwright_error(), TimeoutError) as exc:
                raise BackendUnavailable(
                    "Chromium did not open a browser context: "
                    f"{first_line(exc) if str(exc) else 'no answer within the deadline'}"
                ) from exc
            if restarted:
                opened.note("the browser had stopped and was restarted; earlier pages are gone")
            self._sessions[session_id] = opened
            return opened

    async def act(self, session_id: str, action: str, **arguments: Any) -> PageState:
        """Run one browser tool action in the session's browser, one at a time per session."""
        if action == "close":
            self._lost.pop(session_id, None)
            await self.close_session(session_id)
            return PageState(None, None, None)
        lost = self._lost.pop(session_id, None)
        if lost is not None:
            return PageState(
                None, None, None, error=f"{lost}; this session's pages are gone. The next call opens a fresh browser."
            )
        browser_session = await self.session(session_id)
        async with browser_session.lock:
            state = await getattr(browser_session, action)(**arguments)
        lost = self._lost.pop(session_id, None)
        if lost is not None:  # the browser died during this action
            return PageState(
                None,
                None,
                None,
                error=f"{lost} during this call; this session's pages are gone. The next call opens a fresh browser.",
            )
        return state

    def is_password_input(self, session_id: str, ref: str) -> bool:
        """Whether `ref` in the session's latest real snapshot is a password input (no I/O)."""
        browser_session = self._sessions.get(session_id)
        return browser_session is not None and browser_session.is_password_input(ref)

    async def close_session(self, session_id: str) -> None:
        self._opening.pop(session_id, None)
        browser_session = self._sessions.pop(session_id, None)
        if browser_session is not None:
            try:
                await browser_session.close()
            finally:
                if self.after_close is not None:
                    await self.after_close(session_id)
            log.debug("browser context of session %s closed", session_id)

    # --- the browser process ------------------------------------------------------------

    async def _ensure_browser(self) -> Any:
        async with self._launching:
            if self._closed:
                raise BackendUnavailable("the router is stopping")
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._browser is not None:
                log.warning("Chromium stopped; launching it again")
                for stale in self._sessions.values():  # their contexts died with the process
                    stale.abandon()
                self._sessions.clear()
                self._browser = None
                await self._remove_container()
            await self.prepare()
            if self._unavailable is not None:
                raise self._unavailable
            executable = self.config.executable_path
            if self._engine is None and not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
                raise BackendUnavailable(
                    f"the real browser needs Chromium, and {executable} is missing or not executable: "
                    "install it (Debian: `apt-get install chromium`, or run scripts/setup.sh) or set "
                    "browser.executable_path; "
                    "simulated browser calls still work"
                )
            try:
                from playwright.async_api import async_playwright
            except ImportError as exc:
                raise BackendUnavailable(
                    "the real browser needs the `playwright` Python package: pip install playwright==1.65.2"
                ) from exc
            try:
                if self._playwright is None:
                    self._playwright = await asyncio.wait_for(async_playwright().start(), _LAUNCH_TIMEOUT_S)
                proxy = await self.egress.proxy_server() if self.egress is not None else self.config.proxy
                extra = self.egress.chromium_args() if self.egress is not None else []
                if self._engine is not None:
                    proxy = await self._relay_proxy(proxy)
                options = self._launch_options(proxy, extra)
                if self._engine is not None:
                    options["executable_path"] = str(self._contained_launcher())
                browser = await self._playwright.chromium.launch(**options)
            # The driver failed or timed out, the proxy relay or the launcher could not be made.
            except (playwright_error(), TimeoutError, OSError, BackendError) as exc:
                await self._stop_playwright()
                await self._remove_container()
                await self._close_proxy_socket()
                where = f"in a container ({self.config.image})" if self._engine is not None else f"({executable})"
                raise BackendUnavailable(
                    f"Chromium {where} did not start: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                ) from exc
            self._browser = browser
            browser.on("disconnected", lambda _browser: self._on_disconnected(browser))
            where = f"in container {self._container}" if self._engine is not None else "on the host"
            log.info("Chromium %s started %s", browser.version, where)
            return browser

    async def _relay_proxy(self, proxy: str | None) -> str | None:
        """The contained Chromium's proxy: the socket relayed to `proxy` (started
        once), as the container sees it. None: no proxy, and no way out at all."""
        if proxy is None:
            return None
        if self._proxy_socket is None:
            target = urlsplit(proxy)
            if target.scheme != "http" or not target.hostname:
                raise BackendUnavailable(f"a contained browser's proxy is an http:// address, got {proxy!r}")
            self._proxy_socket = await ProxySocket(
                target.hostname, target.port or 80, self._ensure_workdir() / "proxy"
            ).start()
        return INSIDE_PROXY

    def _inside_proxy(self) -> str | None:
        return INSIDE_PROXY if self._proxy_socket is not None else None

    async def _close_proxy_socket(self) -> None:
        if self._proxy_socket is not None:
            proxy_socket, self._proxy_socket = self._proxy_socket, None
            await proxy_socket.aclose()

    def _ensure_workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = container.make_workdir(this_process_owner())
        return self._workdir

    def _contained_launcher(self) -> Path:
        """A fresh container name and the launcher that runs it (container.py)."""
        assert self._engine is not None
        self._container = container.container_name()
        folder = self._proxy_socket.folder if self._proxy_socket is not None else None
        run_args = container.run_arguments(
            self.config, owner=this_process_owner(), name=self._container, proxy_folder=folder
        )
        return container.write_launcher(
            container.launcher_script(self._engine.docker, run_args, self.config.image), self._ensure_workdir()
        )

    def _on_disconnected(self, browser: Any) -> None:
        """Chromium went away. At shutdown that is expected; otherwise every session
        with a context in it hears of it once (see `act`), and the next call launches
        a new one."""
        if self._closed or browser is not self._browser:
            return
        what = "the browser's container stopped" if self._engine is not None else "Chromium stopped"
        log.warning("%s (crashed, out of memory or killed); it is launched again on the next call", what)
        for session_id, stale in self._sessions.items():
            self._lost[session_id] = f"The browser stopped ({what}: crashed, out of memory or killed)"
            stale.abandon()
        self._sessions.clear()

    async def _remove_container(self) -> None:
        """Remove this pool's container, if one ran, and wait until it is gone."""
        name, self._container = self._container, None
        if name is None or self._engine is None:
            return
        try:
            await asyncio.wait_for(
                asyncio.to_thread(
                    isolation.remove_containers, self._engine.client, owner=this_process_owner(), name=name
                ),
                30,
            )
        except ENGINE_ERRORS + (TimeoutError,) as exc:
            # The engine is stuck or gone: the next router's reaper removes it.
            log.warning("removing the browser's container %s: %r", name, exc)

    def _launch_options(self, proxy: str | None, extra_args: list[str]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "executable_path": self.config.executable_path,
            "headless": self.config.headless,
            "args": [*BASE_ARGS, *extra_args, *self.config.args],
            "timeout": _LAUNCH_TIMEOUT_S * 1000,
            # simroute closes the browser itself at shutdown (see aclose); the driver
            # must not race it on the signal that starts the shutdown.
            "handle_sigint": False,
            "handle_sigterm": False,
            "handle_sighup": False,
        }
        if proxy:
            # Playwright adds Chromium's "<-loopback>" rule: loopback hosts go through the proxy too.
            options["proxy"] = {"server": proxy}
        return options

    async def aclose(self) -> None:
        """Close every context and the browser process. Idempotent."""
        self._closed = True
        for session_id in list(self._sessions):
            await self.close_session(session_id)
        if self._browser is not None:
            browser, self._browser = self._browser, None
            try:
                await asyncio.wait_for(browser.close(), timeout=10)
            except (playwright_error(), TimeoutError) as exc:  # gone or stuck: the driver's stop ends it
                log.warning("closing Chromium: %r", exc)
        await self._stop_playwright()
        await self._remove_container()
        await self._close_proxy_socket()
        workdir, self._workdir = self._workdir, None
        container.remove_workdir(workdir)

    async def _stop_playwright(self) -> None:
        if self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            try:
                await asyncio.wait_for(playwright.stop(), timeout=10)
            except (playwright_error(), TimeoutError, OSError) as exc:  # the driver process is gone or stuck
                log.warning("stopping the Playwright driver: %r", exc)
