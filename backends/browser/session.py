"""`BrowserSession`: one agent session's browser context and the agent's actions in it.

Every action returns a `PageState` (the page after it), never raises for what
happens in the page: an unreachable URL, an unknown ref, a page that never
finishes loading or a JavaScript dialog each become part of the observation,
and the session stays usable. Every action has a deadline: Playwright's own
timeouts answer first, an outer asyncio deadline stops anything they miss.

The current page and what happens to it on its own (tabs, dialogs, downloads)
are page_watch.py's; the snapshot the agent sees, and its refs, snapshots.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from backends.browser.driver_errors import first_line, playwright_error, playwright_timeout
from backends.browser.options import BrowserConfig
from backends.browser.page_state import (
    NO_OPEN_PAGE,
    PageState,
    blocked_message,
    host_allowed,
    is_ref,
    normalize_url,
    scheme_refusal,
    unknown_ref_message,
)
from backends.browser.page_watch import PageWatch
from backends.browser.snapshots import Snapshots

log = logging.getLogger("simroute.browser")

# After an input action, how long to watch for the navigation or requests it starts
# (a click's navigation request may come a moment after the click returns).
SETTLE_S = 0.25
# How long a page that started loading gets to finish after an action ("load").
LOAD_AFTER_ACTION_S = 5.0


class BrowserSession:
    """Created by `BrowserPool` (which owns the browser); `open()` makes the context."""

    def __init__(
        self,
        session_id: str,
        context: Any,
        config: BrowserConfig,
        egress: Any = None,
        credential: dict[str, str] | None = None,
    ) -> None:
        self.session_id = session_id
        self.context = context
        self.config = config
        self.egress = egress
        self._credential = credential
        self.lock = asyncio.Lock()  # one action at a time per session, in arrival order
        self.watch = PageWatch(context, config)
        self.snapshots = Snapshots(config)

    @property
    def page(self) -> Any:
        """The current page (None before the first navigation, or after it closed)."""
        return self.watch.page

    def note(self, event: str) -> None:
        """An event to report with the next observation."""
        self.watch.events.append(event)

    @classmethod
    async def open(
        cls,
        session_id: str,
        browser: Any,
        config: BrowserConfig,
        *,
        egress: Any = None,
        proxy_server: str | None = None,
    ) -> BrowserSession:
        """`proxy_server`: the egress's proxy as Chromium reaches it, when that is not
        the egress's own address (a contained browser's relay)."""
        options: dict[str, Any] = {"ignore_https_errors": config.ignore_https_errors, "accept_downloads": False}
        credential = None
        if egress is not None:
            # The context's own credential: the proxy knows its requests as this session's.
            credential = egress.credential(session_id)
            options["proxy"] = {"server": proxy_server or await egress.proxy_server(), **credential}
        try:
            context = await browser.new_context(**options)
        except BaseException:
            if credential is not None:
                egress.revoke(credential)
            raise
        context.set_default_timeout(config.action_timeout_s * 1000)
        context.set_default_navigation_timeout(config.navigation_timeout_s * 1000)
        session = cls(session_id, context, config, egress, credential)
        if config.allowed_domains:
            # Every request, not only the agent's navigations: a link, a redirect or a
            # script cannot take the page outside the allowlist either.
            await context.route("**/*", session.watch.enforce_allowlist)
        context.on("page", session.watch.adopt_page)
        return session

    # --- the actions ------------------------------------------------------------------

    async def navigate(self, url: str) -> PageState:
        url = normalize_url(url)

        async def go() -> PageState:
            refused = scheme_refusal(url) or (await self.egress.refusal(url) if self.egress is not None else None)
            if not refused and not host_allowed(url, self.config.allowed_domains):
                refused = blocked_message(url, self.config.allowed_domains or [])
            if refused:
                return await self._refused(refused)
            page = await self.watch.ensure_page()
            try:
                response = await page.goto(url, wait_until="domcontentloaded")
            except playwright_timeout():
                return await self._state(
                    error=f"Navigation to {url} did not finish within {self.config.navigation_timeout_s:g}s "
                    "(browser.navigation_timeout_s); the page is shown as loaded so far."
                )
            except playwright_error() as exc:
                return await self._state(error=f"Navigation to {url} failed: {first_line(exc)}")
            await self._wait_for_load(page)
            refused = await _proxy_refusal(url, response)
            return await (self._refused(refused) if refused else self._state())

        return await self._deadline(go, f"navigating to {url}")

    async def snapshot(self) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)
        return await self._deadline(self._state, "taking a snapshot")

    async def click(self, ref: str, element: str | None = None) -> PageState:
        return await self._on_element(ref, element, "clicking", lambda locator: locator.click())

    async def type(self, ref: str, text: str, submit: bool = False, element: str | None = None) -> PageState:
        async def fill(locator: Any) -> None:
            await locator.fill(text)
            if submit:
                await locator.press("Enter")

        return await self._on_element(ref, element, "typing into", fill)

    async def press_key(self, key: str) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)

        async def press() -> PageState:
            page = self.page
            if key == "Enter":  # may submit a form: wait for what it starts
                error = await self._completing(page, lambda: page.keyboard.press(key))
            else:
                try:
                    await page.keyboard.press(key)
                    error = None
                except playwright_error() as exc:
                    error = first_line(exc)
            return await self._state(error=error and f"Pressing {key!r} failed: {error}")

        return await self._deadline(press, f"pressing {key!r}")

    async def navigate_back(self) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)

        async def back() -> PageState:
            page = self.page
            try:
                await page.go_back(wait_until="commit")
            except playwright_timeout():
                self.note(f"going back did not finish within {self.config.navigation_timeout_s:g}s")
            except playwright_error() as exc:
                return await self._state(error=f"Going back failed: {first_line(exc)}")
            await self._wait_for_load(page)
            return await self._state()

        return await self._deadline(back, "going back")

    async def close(self) -> None:
        """Close the context and its pages; safe to call twice and on a dead browser."""
        self.watch.page = None
        try:
            await asyncio.wait_for(self.context.close(), timeout=10)
        except (playwright_error(), TimeoutError) as exc:  # the browser is gone or stuck: the pool's close cleans up
            log.debug("closing the browser context of a session: %r", exc)
        if self._credential is not None:
            self.egress.revoke(self._credential)
            self._credential = None

    def abandon(self) -> None:
        """The browser died with this context in it: nothing to close, the credential goes."""
        self.watch.page = None
        if self._credential is not None:
            self.egress.revoke(self._credential)
            self._credential = None

    # --- helpers ----------------------------------------------------------------------

    async def _on_element(
        self, ref: str, element: str | None, verb: str, act: Callable[[Any], Awaitable[None]]
    ) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)

        async def run() -> PageState:
            page = self.page
            if ref not in self.snapshots.current_refs(page) or not is_ref(ref):
                return PageState(None, None, None, error=unknown_ref_message(ref))
            locator = page.locator(f"aria-ref={ref}")
            try:
                found = await locator.count()
            except playwright_error() as exc:
                found = 0
                log.debug("resolving %s: %r", ref, exc)
            if not found:
                return PageState(None, None, None, error=unknown_ref_message(ref))
            what = f"{element} ({ref})" if element else ref
            error = await self._completing(page, lambda: act(locator))
            return await self._state(error=error and f"{verb.capitalize()} {what} failed: {error}")

        return await self._deadline(run, f"{verb} {ref}")

    async def _completing(self, page: Any, action: Callable[[], Awaitable[Any]]) -> str | None:
        """Run an input action and wait for what it started (a navigation, requests),
        boundedly; the action's error text, or None."""
        navigated, committed = asyncio.Event(), asyncio.Event()

        def on_request(request: Any) -> None:
            if request.is_navigation_request() and request.frame == page.main_frame:
                navigated.set()

        def on_frame_navigated(frame: Any) -> None:
            if frame == page.main_frame:
                committed.set()

        page.on("request", on_request)
        page.on("framenavigated", on_frame_navigated)
        try:
            try:
                await action()
            except playwright_timeout():
                return f"the element was not ready within {self.config.action_timeout_s:g}s (browser.action_timeout_s)"
            except playwright_error() as exc:
                return first_line(exc)
            # A navigation ends the watch at once; without one, the whole window passes.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(navigated.wait(), SETTLE_S)
            if navigated.is_set():
                # Until the new document replaces the old one: before that, "load"
                # would be the old page's.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(committed.wait(), LOAD_AFTER_ACTION_S)
        finally:
            page.remove_listener("request", on_request)
            page.remove_listener("framenavigated", on_frame_navigated)
        if navigated.is_set():
            await self._wait_for_load(self.page or page)
        return None

    async def _wait_for_load(self, page: Any) -> None:
        try:
            await page.wait_for_load_state("load", timeout=LOAD_AFTER_ACTION_S * 1000)
        except playwright_timeout():
            self.note(f"the page was still loading after {LOAD_AFTER_ACTION_S:g}s; it is shown as loaded so far")
        except playwright_error() as exc:  # the page closed or navigated away meanwhile: its state is read next
            log.debug("waiting for load: %r", exc)

    async def _state(self, *, error: str | None = None) -> PageState:
        """The current page as the agent sees it, with the events since the last one."""
        return await self.snapshots.take(self.page, error=error, events=self.watch.take_events())

    async def _refused(self, reason: str) -> PageState:
        """simroute's own refusal of the action, with the page as it stands."""
        state = await self._state(error=reason)
        state.refused = True
        return state

    def is_password_input(self, ref: str) -> bool:
        """Whether `ref` of the latest snapshot is an `<input type=password>` (known
        without I/O: asked of the DOM when the snapshot was taken)."""
        return self.snapshots.is_password_input(self.page, ref)

    async def _deadline(self, work: Callable[[], Awaitable[PageState]], what: str) -> PageState:
        # Playwright's timeouts come first; this catches a call they do not cover
        # (a renderer stuck in a script, a dead driver).
        limit = self.config.navigation_timeout_s + self.config.action_timeout_s * 2 + LOAD_AFTER_ACTION_S + 5
        try:
            async with asyncio.timeout(limit):
                return await work()
        except TimeoutError:
            log.warning("a browser session: %s did not finish within %gs", what, limit)
            page = self.page
            return PageState(
                page.url if page is not None else None,
                None,
                None,
                error=f"The browser did not finish {what} within {limit:g}s.",
                events=self.watch.take_events(),
            )


async def _proxy_refusal(url: str, response: Any) -> str | None:
    """simroute's proxy answered the navigation itself (refused, or the site was
    unreachable): said as an error, as Chromium says its own network errors."""
    if response is None or response.status < 400 or response.headers.get("x-simroute-provenance") != "none":
        return None
    try:
        answer = await response.json()
    except (playwright_error(), ValueError) as exc:  # not simroute's JSON after all
        log.debug("reading a proxy answer: %r", exc)
        answer = None
    reason = answer.get("error") if isinstance(answer, dict) else None
    return f"Navigation to {url} failed ({response.status}): {reason or response.status_text}"
