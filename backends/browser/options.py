"""The browser channel's options (the `browser` section of the config file)."""

from __future__ import annotations

from typing import Literal

from pydantic import PositiveFloat, PositiveInt, field_validator, model_validator

from backends.options import Strict


class BrowserLimits(Strict):
    """The contained browser's container (browser.isolation: container), sized for Chromium."""

    memory: str = "2g"  # Docker memory limit (swap included)
    cpus: PositiveFloat = 2.0
    pids: PositiveInt = 1024  # Chromium runs a process per renderer, each with many threads
    shm: str = "256m"  # /dev/shm: Chromium's shared memory between its processes
    tmp_size: str = "512m"  # tmpfs over /tmp, where the profile of each launch lives


class BrowserConfig(Strict):
    """The browser channel: playwright-mcp's browser tools on simroute's MCP endpoint,
    backed by Chromium (one context per agent session, real) or the Web world model (sim)."""

    enabled: bool = True
    # Where Chromium runs. container: in a hardened container per router, with no network
    # but a socket to simroute's proxy; host: as the router's user; auto: container when a
    # Docker engine answers and browser.image is built, else host (with a warning at start).
    isolation: Literal["auto", "container", "host"] = "auto"
    image: str = "simroute-browser:latest"  # built by scripts/build-images.sh
    limits: BrowserLimits = BrowserLimits()
    executable_path: str = "/usr/bin/chromium"  # host isolation: Debian's Chromium; Playwright's download is not used
    headless: bool = True
    navigation_timeout_s: PositiveFloat = 15.0  # per navigation; the page is shown as loaded so far
    action_timeout_s: PositiveFloat = 5.0  # per click, type, key press, snapshot
    snapshot_max_chars: PositiveInt = 20000  # longer snapshots are cut with a marker
    allowed_domains: list[str] | None = None  # hosts the browser may load (and their subdomains); None: any
    proxy: str | None = None  # HTTP proxy for all the browser's traffic, e.g. simroute's HTTP channel
    ignore_https_errors: bool = False  # e.g. behind an intercepting proxy whose CA Chromium does not trust
    args: list[str] = []  # extra Chromium command-line switches
    # Loopback and private-network origins the browser may reach (`http://127.0.0.1:8000`,
    # `https://intranet.local`, `http://10.0.0.5:*`); public addresses need no entry.
    allowed_origins: list[str] = []

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest.rstrip("/"):
                raise ValueError(f"an origin is scheme://host[:port] (http or https; port may be *), got {origin!r}")
        return [origin.rstrip("/").lower() for origin in origins]

    @model_validator(mode="after")
    def _proxy_is_a_url(self) -> BrowserConfig:
        if self.proxy is not None and "://" not in self.proxy:
            raise ValueError(f"proxy must be a URL such as http://127.0.0.1:8081, got {self.proxy!r}")
        return self
