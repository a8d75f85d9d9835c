"""`BrowserPool`: the browser channel's real side. One Chromium process, shared,
launched on the first real browser action; one browser context per agent
session, closed when the session closes (explicitly, on idle TTL, at shutdown).

Playwright is imported here, lazily: a router that never drives a real browser
never loads it. Chromium is Debian's (`/usr/bin/chromium`); Playwright's own
browser download is not used.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from backends.browser.page_state import PageState
from backends.browser.session import BrowserSession
from backends.errors import BackendUnavailable
from router.config import BrowserConfig

log = logging.getLogger("simroute.browser")

# Chromium on a server: no sandbox (containers, root), no GPU, and none of the
# background traffic (updates, sync, QUIC probes) a closed network would refuse.
BASE_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
_LAUNCH_TIMEOUT_S = 30.0


class BrowserPool:
    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self._playwright: Any = None
        self._browser: Any = None
        self._launching = asyncio.Lock()
        self._sessions: dict[str, BrowserSession] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def launched(self) -> bool:
        return self._browser is not None

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
            browser = await self._ensure_browser()
            try:
                opened = await asyncio.wait_for(BrowserSession.open(session_id, browser, self.config), _LAUNCH_TIMEOUT_S)
            except Exception as exc:
                raise BackendUnavailable(f"Chromium did not open a browser context: {exc}") from exc
            if restarted:
                opened._events.append("the browser had stopped and was restarted; earlier pages are gone")
            self._sessions[session_id] = opened
            return opened

    async def act(self, session_id: str, action: str, **arguments: Any) -> PageState:
        """Run one browser tool action in the session's browser, one at a time per session."""
        if action == "close":
            await self.close_session(session_id)
            return PageState(None, None, None)
        browser_session = await self.session(session_id)
        async with browser_session.lock:
            return await getattr(browser_session, action)(**arguments)

    async def close_session(self, session_id: str) -> None:
        self._opening.pop(session_id, None)
        browser_session = self._sessions.pop(session_id, None)
        if browser_session is not None:
            await browser_session.close()
            log.info("browser context of session %s closed", session_id)

    # --- the browser process ------------------------------------------------------------

    async def _ensure_browser(self) -> Any:
        async with self._launching:
            if self._closed:
                raise BackendUnavailable("the router is stopping")
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._browser is not None:
                log.warning("Chromium stopped; launching it again")
                self._sessions.clear()  # their contexts died with the process
                self._browser = None
            executable = self.config.executable_path
            if not (os.path.isfile(executable) and os.access(executable, os.X_OK)):
                raise BackendUnavailable(
                    f"the real browser needs Chromium, and {executable} is missing or not executable: "
                    "install it (Debian: `apt-get install chromium`, or run scripts/setup.sh) or set browser.executable_path; "
                    "simulated browser calls still work"
                )
            try:
                from playwright.async_api import async_playwright
            except ImportError as exc:
                raise BackendUnavailable("the real browser needs the `playwright` Python package: pip install playwright==1.65.2") from exc
            try:
                if self._playwright is None:
                    self._playwright = await asyncio.wait_for(async_playwright().start(), _LAUNCH_TIMEOUT_S)
                self._browser = await self._playwright.chromium.launch(**self._launch_options())
            except Exception as exc:
                await self._stop_playwright()
                raise BackendUnavailable(f"Chromium ({executable}) did not start: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc
            log.info("Chromium %s started", self._browser.version)
            return self._browser

    def _launch_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "executable_path": self.config.executable_path,
            "headless": self.config.headless,
            "args": [*BASE_ARGS, *self.config.args],
            "timeout": _LAUNCH_TIMEOUT_S * 1000,
            # simroute closes the browser itself at shutdown (see aclose); the driver
            # must not race it on the signal that starts the shutdown.
            "handle_sigint": False,
            "handle_sigterm": False,
            "handle_sighup": False,
        }
        if self.config.proxy:
            # Playwright adds Chromium's "<-loopback>" rule: loopback hosts go through the proxy too.
            options["proxy"] = {"server": self.config.proxy}
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
            except Exception as exc:
                log.warning("closing Chromium: %r", exc)
        await self._stop_playwright()

    async def _stop_playwright(self) -> None:
        if self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            try:
                await asyncio.wait_for(playwright.stop(), timeout=10)
            except Exception as exc:
                log.warning("stopping the Playwright driver: %r", exc)
