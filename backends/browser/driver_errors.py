"""What Playwright raises, by type, and how it is said to the agent.

Every Playwright call that fails raises `playwright.async_api.Error`; one that ran
out of its own timeout raises its subclass `playwright.async_api.TimeoutError`
(not the builtin one, which only `asyncio` deadlines raise). Playwright is
imported only once a real browser is driven (pool.py), so these are functions,
resolved when an exception reaches the `except` clause that names them: by then
the driver is loaded, and a router that never drives a browser never loads it.
"""

from __future__ import annotations

import functools


@functools.cache
def playwright_error() -> type[Exception]:
    """`playwright.async_api.Error`: any failed Playwright call (its timeouts included)."""
    from playwright.async_api import Error

    return Error


@functools.cache
def playwright_timeout() -> type[Exception]:
    """`playwright.async_api.TimeoutError`: a Playwright call past its own timeout."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    return PlaywrightTimeout


def first_line(exc: BaseException) -> str:
    """The gist of a driver error for an observation: its first line, without the
    API name Playwright puts first ("Page.goto: net::ERR_CONNECTION_REFUSED at …")."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    head, sep, rest = text.partition(": ")
    return rest if sep and "." in head and " " not in head else text
