"""`BrowserSession`: one agent session's browser context and its current page.

Every action returns a `PageState` (the page after it), never raises for what
happens in the page: an unreachable URL, an unknown ref, a page that never
finishes loading or a JavaScript dialog each become part of the observation,
and the session stays usable. Every action has a deadline: Playwright's own
timeouts answer first, an outer asyncio deadline stops anything they miss.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from backends.browser.page_state import (
    NO_OPEN_PAGE,
    PageState,
    blocked_message,
    host_allowed,
    scheme_refusal,
    is_ref,
    normalize_url,
    refs_in,
    textbox_refs,
    trim_snapshot,
    unknown_ref_message,
)
from backends.browser.options import BrowserConfig

log = logging.getLogger("simroute.browser")

# After an input action, how long to watch for the navigation or requests it starts
# (a click's navigation request may come a moment after the click returns).
SETTLE_S = 0.25
# How long a page that started loading gets to finish after an action ("load").
LOAD_AFTER_ACTION_S = 5.0
# Asked of each text box in a snapshot (see `_password_inputs`).
_IS_PASSWORD = "e => e instanceof HTMLInputElement && e.type === 'password'"
_PASSWORD_QUERY_MS = 2000


class BrowserSession:
    """Created by `BrowserPool` (which owns the browser); `open()` makes the context."""

    def __init__(self, session_id: str, context: Any, config: BrowserConfig, egress: Any = None, credential: dict[str, str] | None = None) -> None:
        self.session_id = session_id
        self.context = context
        self.config = config
        self.egress = egress
        self._credential = credential
        self.page: Any = None
        self.lock = asyncio.Lock()  # one action at a time per session, in arrival order
        self._events: list[str] = []  # reported with the next observation
        self._refs: set[str] = set()  # refs of the current page's latest snapshot
        self._password_refs: set[str] = set()  # those of them that are password inputs (from the DOM)
        self._ref_page: Any = None  # the page those refs belong to
        self._watched: set[int] = set()  # pages with our dialog and close handlers (ids)
        self._closing: set[int] = set()  # pages replaced by a popup, closed by us (ids)
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, session_id: str, browser: Any, config: BrowserConfig, *, egress: Any = None, proxy_server: str | None = None) -> BrowserSession:
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
            await context.route("**/*", session._enforce_allowlist)
        context.on("page", session._adopt_page)
        return session

    # --- the actions ------------------------------------------------------------------

    async def navigate(self, url: str) -> PageState:
        url = normalize_url(url)

        async def go() -> PageState:
            refused = scheme_refusal(url) or (await self.egress.refusal(url) if self.egress is not None else None)
            if refused:
                return await self._state(error=refused)
            if not host_allowed(url, self.config.allowed_domains):
                return await self._state(error=blocked_message(url, self.config.allowed_domains or []))
            page = await self._ensure_page()
            try:
                response = await page.goto(url, wait_until="domcontentloaded")
            except Exception as exc:
                if _is_timeout(exc):
                    return await self._state(
                        error=f"Navigation to {url} did not finish within {self.config.navigation_timeout_s:g}s "
                        "(browser.navigation_timeout_s); the page is shown as loaded so far."
                    )
                return await self._state(error=f"Navigation to {url} failed: {_first_line(exc)}")
            await self._wait_for_load(page)
            return await self._state(error=await _proxy_refusal(url, response))

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
                except Exception as exc:
                    error = _first_line(exc)
            return await self._state(error=error and f"Pressing {key!r} failed: {error}")

        return await self._deadline(press, f"pressing {key!r}")

    async def navigate_back(self) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)

        async def back() -> PageState:
            page = self.page
            try:
                await page.go_back(wait_until="commit")
            except Exception as exc:
                if not _is_timeout(exc):
                    return await self._state(error=f"Going back failed: {_first_line(exc)}")
                self._events.append(f"going back did not finish within {self.config.navigation_timeout_s:g}s")
            await self._wait_for_load(page)
            return await self._state()

        return await self._deadline(back, "going back")

    async def close(self) -> None:
        """Close the context and its pages; safe to call twice and on a dead browser."""
        self.page = None
        try:
            await asyncio.wait_for(self.context.close(), timeout=10)
        except Exception as exc:  # the browser is gone or stuck: the pool's close cleans up
            log.debug("closing the browser context of a session: %r", exc)
        if self._credential is not None:
            self.egress.revoke(self._credential)
            self._credential = None

    def abandon(self) -> None:
        """The browser died with this context in it: nothing to close, the credential goes."""
        self.page = None
        if self._credential is not None:
            self.egress.revoke(self._credential)
            self._credential = None

    # --- helpers ----------------------------------------------------------------------

    async def _on_element(self, ref: str, element: str | None, verb: str, act: Callable[[Any], Awaitable[None]]) -> PageState:
        if self.page is None:
            return PageState(None, None, None, error=NO_OPEN_PAGE)

        async def run() -> PageState:
            page = self.page
            if ref not in self._current_refs() or not is_ref(ref):
                return PageState(None, None, None, error=unknown_ref_message(ref))
            locator = page.locator(f"aria-ref={ref}")
            try:
                found = await locator.count()
            except Exception as exc:
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
            except Exception as exc:
                if _is_timeout(exc):
                    return f"the element was not ready within {self.config.action_timeout_s:g}s (browser.action_timeout_s)"
                return _first_line(exc)
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
        except Exception as exc:
            if _is_timeout(exc):
                self._events.append(f"the page was still loading after {LOAD_AFTER_ACTION_S:g}s; it is shown as loaded so far")
            else:
                log.debug("waiting for load: %r", exc)

    async def _state(self, *, error: str | None = None) -> PageState:
        """The current page as the agent sees it, with the events since the last one."""
        page = self.page
        events, self._events = self._events, []
        if page is None:
            return PageState(None, None, None, error=error or None, events=events)
        title = None
        try:
            full = await page.aria_snapshot(mode="ai", timeout=self.config.action_timeout_s * 1000)
        except Exception as exc:
            events.append(f"the accessibility snapshot failed: {_first_line(exc)}")
            full = ""
        self._refs, self._ref_page = refs_in(full), page
        self._password_refs = await self._password_inputs(page, full)
        text, truncated = trim_snapshot(full, self.config.snapshot_max_chars)
        try:
            title = await asyncio.wait_for(page.title(), timeout=self.config.action_timeout_s)
        except Exception as exc:  # a page busy in a script still has a URL
            log.debug("reading the title: %r", exc)
        return PageState(page.url, title or "", text, error=error, events=events, truncated=truncated)

    def _current_refs(self) -> set[str]:
        return self._refs if self._ref_page is self.page else set()

    def is_password_input(self, ref: str) -> bool:
        """Whether `ref` of the latest snapshot is an `<input type=password>` (known
        without I/O: asked of the DOM when the snapshot was taken)."""
        return self._ref_page is self.page and ref in self._password_refs

    async def _password_inputs(self, page: Any, snapshot: str) -> set[str]:
        """The snapshot's text boxes that are password inputs, asked of the DOM: their
        accessible name need not say so, and what is typed there must be redacted
        before any record sees it. A few per page, asked together."""

        async def is_password(ref: str) -> bool:
            try:
                return bool(await page.locator(f"aria-ref={ref}").evaluate(_IS_PASSWORD, timeout=_PASSWORD_QUERY_MS))
            except Exception as exc:  # gone meanwhile, a frame that went away: not known to be one
                log.debug("asking whether %s is a password input: %r", ref, exc)
                return False

        refs = textbox_refs(snapshot)
        answers = await asyncio.gather(*(is_password(ref) for ref in refs))
        return {ref for ref, password in zip(refs, answers) if password}

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
                page.url if page is not None else None, None, None,
                error=f"The browser did not finish {what} within {limit:g}s.",
                events=self._take_events(),
            )

    def _take_events(self) -> list[str]:
        events, self._events = self._events, []
        return events

    async def _ensure_page(self) -> Any:
        if self.page is None or self.page.is_closed():
            self.page = await self.context.new_page()
            self._watch(self.page)
        return self.page

    def _adopt_page(self, page: Any) -> None:
        """A page the site opened (a link with target=_blank, window.open) replaces the
        current one: the old one is closed, so a page cannot pile up tabs."""
        if page is self.page:
            return
        previous, self.page = self.page, page
        self._watch(page)
        if previous is not None and not previous.is_closed():  # not the page _ensure_page is opening
            self._events.append(f"a new tab opened ({page.url}) and replaced the current page, which was closed")
            self._closing.add(id(previous))
            task = asyncio.get_running_loop().create_task(previous.close(), name="simroute-browser-close-replaced-page")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _watch(self, page: Any) -> None:
        if id(page) in self._watched:
            return
        self._watched.add(id(page))
        page.on("dialog", self._dismiss_dialog)
        page.on("close", self._closed)
        page.on("download", self._refuse_download)

    async def _dismiss_dialog(self, dialog: Any) -> None:
        # A dialog blocks the page's scripts until answered: answer at once, report later.
        kind, message = dialog.type, dialog.message
        try:
            if kind == "beforeunload":
                await dialog.accept()  # leaving was the agent's action: let it happen
                self._events.append("a beforeunload dialog asked to confirm leaving the page; it was accepted")
            else:
                await dialog.dismiss()
                self._events.append(f"a JavaScript {kind} dialog said {message!r}; it was dismissed")
        except Exception as exc:
            log.debug("answering a %s dialog: %r", kind, exc)

    async def _refuse_download(self, download: Any) -> None:
        # Downloads are off for the context (accept_downloads=False); the agent hears of it.
        self._events.append(f"a download ({download.suggested_filename or download.url}) was refused: the browser does not download files")
        try:
            await download.cancel()
        except Exception as exc:  # already cancelled by Chromium
            log.debug("cancelling a download: %r", exc)

    def _closed(self, page: Any) -> None:
        if id(page) in self._closing:
            self._closing.discard(id(page))
            return
        if page is not self.page:
            return
        others = [p for p in self.context.pages if p is not page and not p.is_closed()]
        self.page = others[-1] if others else None
        self._events.append("the page closed itself" + (f"; the current page is now {self.page.url}" if self.page else ""))

    async def _enforce_allowlist(self, route: Any) -> None:
        url = route.request.url
        if host_allowed(url, self.config.allowed_domains):
            await route.continue_()
        else:
            if route.request.is_navigation_request():
                self._events.append(blocked_message(url, self.config.allowed_domains or []))
            await route.abort("blockedbyclient")


async def _proxy_refusal(url: str, response: Any) -> str | None:
    """simroute's proxy answered the navigation itself (refused, or the site was
    unreachable): said as an error, as Chromium says its own network errors."""
    if response is None or response.status < 400 or response.headers.get("x-simroute-provenance") != "none":
        return None
    try:
        reason = (await response.json()).get("error")
    except Exception as exc:  # not simroute's JSON after all
        log.debug("reading a proxy answer: %r", exc)
        reason = None
    return f"Navigation to {url} failed ({response.status}): {reason or response.status_text}"


def _is_timeout(exc: BaseException) -> bool:
    return type(exc).__name__ == "TimeoutError"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # "Page.goto: net::ERR_CONNECTION_REFUSED at http://…" -> the part after the API name
    head, sep, rest = text.partition(": ")
    return rest if sep and "." in head and " " not in head else text
