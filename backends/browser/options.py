"""The browser channel's options (the `browser` section of the config file)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from backends.options import Strict


class BrowserLimits(Strict):
    """The contained browser's container (browser.isolation: container), sized for Chromium."""

    memory: str = Field(default="2g", description="Docker memory limit (swap included).")
    cpus: PositiveFloat = Field(default=2.0, description="CPUs the contained browser may use.")
    pids: PositiveInt = Field(
        default=1024, description="Process limit (Chromium runs a process per renderer, each with many threads)."
    )
    shm: str = Field(default="256m", description="`/dev/shm`: Chromium's shared memory between its processes.")
    tmp_size: str = Field(default="512m", description="tmpfs over `/tmp`, where the profile of each launch lives.")


class BrowserConfig(Strict):
    """The browser channel: playwright-mcp's browser tools on simroute's MCP endpoint,
    backed by Chromium (one context per agent session, real) or the Web world model (sim)."""

    enabled: bool = Field(default=True, description="Serve the browser tools.")
    isolation: Literal["auto", "container", "host"] = Field(
        default="auto",
        description=(
            "Where Chromium runs: `container`, `host`, or `auto` (container when Docker and the image are there)."
        ),
    )
    image: str = Field(
        default="simroute-browser:latest",
        description="The contained browser's image (built by `scripts/build-images.sh`).",
    )
    limits: BrowserLimits = Field(default=BrowserLimits(), description="The contained browser's limits.")
    executable_path: str = Field(
        default="/usr/bin/chromium",
        description="`host` isolation: the Chromium binary (Debian's; Playwright's download is not used).",
    )
    headless: bool = Field(default=True, description="Run Chromium without a window.")
    navigation_timeout_s: PositiveFloat = Field(
        default=15.0, description="A navigation's deadline; past it the page is shown as loaded so far."
    )
    action_timeout_s: PositiveFloat = Field(
        default=5.0, description="Deadline of a click, typing, a key press, a snapshot."
    )
    snapshot_max_chars: PositiveInt = Field(
        default=20000, description="Longer accessibility snapshots are cut at a line, with a marker."
    )
    allowed_domains: list[str] | None = Field(
        default=None, description="Hosts the browser may load (and their subdomains); unset: any."
    )
    proxy: str | None = Field(
        default=None, description="An HTTP proxy the browser's traffic takes after simroute's own."
    )
    ignore_https_errors: bool = Field(
        default=False, description="Accept any certificate in Chromium (not needed for simroute's own proxy)."
    )
    args: list[str] = Field(default=[], description="Extra Chromium command-line switches.")
    allowed_origins: list[str] = Field(
        default=[], description="Loopback and private-network origins the browser may reach (`http://10.0.0.5:*`)."
    )

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
