"""`Snapshots`: the page as the agent sees it (an accessibility snapshot with refs),
and what the latest snapshot's refs are.

An action names an element by a ref of the latest snapshot of the current page;
a ref of an older page is unknown. Which of the snapshot's text boxes are
password inputs is asked of the DOM when the snapshot is taken, so the safety
checks and redaction can know it later without I/O.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backends.browser.driver_errors import first_line, playwright_error
from backends.browser.options import BrowserConfig
from backends.browser.page_state import PageState, refs_in, textbox_refs, trim_snapshot

log = logging.getLogger("simroute.browser")

# Asked of each text box in a snapshot (see `_password_inputs`).
_IS_PASSWORD = "e => e instanceof HTMLInputElement && e.type === 'password'"
_PASSWORD_QUERY_MS = 2000


class Snapshots:
    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self._refs: set[str] = set()  # refs of the latest snapshot
        self._password_refs: set[str] = set()  # those of them that are password inputs (from the DOM)
        self._page: Any = None  # the page those refs belong to

    async def take(self, page: Any, *, error: str | None, events: list[str]) -> PageState:
        """`page` as the agent sees it, with `events` (a failed snapshot adds one)."""
        if page is None:
            return PageState(None, None, None, error=error or None, events=events)
        title = None
        try:
            full = await page.aria_snapshot(mode="ai", timeout=self.config.action_timeout_s * 1000)
        except playwright_error() as exc:
            events.append(f"the accessibility snapshot failed: {first_line(exc)}")
            full = ""
        self._refs, self._page = refs_in(full), page
        self._password_refs = await self._password_inputs(page, full)
        text, truncated = trim_snapshot(full, self.config.snapshot_max_chars)
        try:
            title = await asyncio.wait_for(page.title(), timeout=self.config.action_timeout_s)
        except (playwright_error(), TimeoutError) as exc:  # a page busy in a script still has a URL
            log.debug("reading the title: %r", exc)
        return PageState(page.url, title or "", text, error=error, events=events, truncated=truncated)

    def current_refs(self, page: Any) -> set[str]:
        """The refs an action on `page` may name (none when the latest snapshot was of another page)."""
        return self._refs if self._page is page else set()

    def is_password_input(self, page: Any, ref: str) -> bool:
        """Whether `ref` of the latest snapshot of `page` is an `<input type=password>`."""
        return self._page is page and ref in self._password_refs

    async def _password_inputs(self, page: Any, snapshot: str) -> set[str]:
        """The snapshot's text boxes that are password inputs, asked of the DOM: their
        accessible name need not say so, and what is typed there must be redacted
        before any record sees it. A few per page, asked together."""

        async def is_password(ref: str) -> bool:
            try:
                return bool(await page.locator(f"aria-ref={ref}").evaluate(_IS_PASSWORD, timeout=_PASSWORD_QUERY_MS))
            except playwright_error() as exc:  # gone meanwhile, a frame that went away: not known to be one
                log.debug("asking whether %s is a password input: %r", ref, exc)
                return False

        refs = textbox_refs(snapshot)
        answers = await asyncio.gather(*(is_password(ref) for ref in refs))
        return {ref for ref, password in zip(refs, answers, strict=True) if password}
