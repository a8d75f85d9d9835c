"""`PageWatch`: a session's current page, and what happens to it without the agent
asking: a site opening a tab, a JavaScript dialog, a download, a page closing
itself, a request outside the allowed domains.

None of these stops the session. Each is handled at once (a dialog blocks the
page's scripts until answered) and noted as an event the next observation
reports, so the agent learns what happened.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backends.browser.driver_errors import first_line, playwright_error
from backends.browser.options import BrowserConfig
from backends.browser.page_state import blocked_message, host_allowed
from backends.errors import BackendBroken

log = logging.getLogger("simroute.browser")


class PageWatch:
    def __init__(self, context: Any, config: BrowserConfig) -> None:
        self.context = context
        self.config = config
        self.page: Any = None
        self.events: list[str] = []  # reported with the next observation
        self._watched: set[int] = set()  # pages with our dialog and close handlers (ids)
        self._closing: set[int] = set()  # pages replaced by a popup, closed by us (ids)
        self._tasks: set[asyncio.Task[None]] = set()

    def take_events(self) -> list[str]:
        events, self.events = self.events, []
        return events

    async def ensure_page(self) -> Any:
        """The current page, or a new one. Raises BackendBroken when the context
        cannot open one (the browser went away under it)."""
        if self.page is None or self.page.is_closed():
            try:
                self.page = await self.context.new_page()
            except playwright_error() as exc:
                raise BackendBroken(f"the browser could not open a page: {first_line(exc)}") from exc
            self._watch(self.page)
        return self.page

    def adopt_page(self, page: Any) -> None:
        """A page the site opened (a link with target=_blank, window.open) replaces the
        current one: the old one is closed, so a page cannot pile up tabs."""
        if page is self.page:
            return
        previous, self.page = self.page, page
        self._watch(page)
        if previous is not None and not previous.is_closed():  # not the page ensure_page is opening
            self.events.append(f"a new tab opened ({page.url}) and replaced the current page, which was closed")
            self._closing.add(id(previous))
            task = asyncio.get_running_loop().create_task(
                self._close_replaced(previous), name="simroute-browser-close-replaced-page"
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def enforce_allowlist(self, route: Any) -> None:
        """Every request, not only the agent's navigations: a link, a redirect or a
        script cannot take the page outside the allowed domains either."""
        url = route.request.url
        if host_allowed(url, self.config.allowed_domains):
            await route.continue_()
        else:
            if route.request.is_navigation_request():
                self.events.append(blocked_message(url, self.config.allowed_domains or []))
            await route.abort("blockedbyclient")

    def _watch(self, page: Any) -> None:
        if id(page) in self._watched:
            return
        self._watched.add(id(page))
        page.on("dialog", self._dismiss_dialog)
        page.on("close", self._closed)
        page.on("download", self._refuse_download)

    @staticmethod
    async def _close_replaced(page: Any) -> None:
        try:
            await page.close()
        except playwright_error() as exc:  # closed meanwhile (by the site, or the browser went)
            log.debug("closing a replaced page: %r", exc)

    async def _dismiss_dialog(self, dialog: Any) -> None:
        # A dialog blocks the page's scripts until answered: answer at once, report later.
        kind, message = dialog.type, dialog.message
        try:
            if kind == "beforeunload":
                await dialog.accept()  # leaving was the agent's action: let it happen
                self.events.append("a beforeunload dialog asked to confirm leaving the page; it was accepted")
            else:
                await dialog.dismiss()
                self.events.append(f"a JavaScript {kind} dialog said {message!r}; it was dismissed")
        except playwright_error() as exc:  # the page closed with its dialog open
            log.debug("answering a %s dialog: %r", kind, exc)

    async def _refuse_download(self, download: Any) -> None:
        # Downloads are off for the context (accept_downloads=False); the agent hears of it.
        self.events.append(
            f"a download ({download.suggested_filename or download.url}) "
            "was refused: the browser does not download files"
        )
        try:
            await download.cancel()
        except playwright_error() as exc:  # already cancelled by Chromium
            log.debug("cancelling a download: %r", exc)

    def _closed(self, page: Any) -> None:
        if id(page) in self._closing:
            self._closing.discard(id(page))
            return
        if page is not self.page:
            return
        others = [p for p in self.context.pages if p is not page and not p.is_closed()]
        self.page = others[-1] if others else None
        self.events.append(
            "the page closed itself" + (f"; the current page is now {self.page.url}" if self.page else "")
        )
