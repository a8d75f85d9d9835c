"""A page as the agent sees it: URL, title and an accessibility snapshot with
element refs, in playwright-mcp's text form.

Both sides of the browser channel produce a `PageState`: the real browser from
Chromium, the Web world-model domain from a prediction (parsed leniently: a
small model may give only snapshot text). Pure functions, no Playwright.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

NO_PAGE = "No open tabs. Navigate to a URL to create one."
NO_OPEN_PAGE = 'No open pages available. Use the "browser_navigate" tool to navigate to a page first.'
_REF = re.compile(r"\[ref=((?:f\d+)?e\d+)\]")
_REF_ARGUMENT = re.compile(r"^(?:f\d+)?e\d+$")
# Lenient: small models write "- pageURL:", "Page title :", a ```json fence, no fence.
_URL_LINE = re.compile(r"^[ \t]*-?[ \t]*\**Page[ _]?URL\**[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_TITLE_LINE = re.compile(r"^[ \t]*-?[ \t]*\**Page[ _]?Title\**[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_SNAPSHOT_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:\n```|\Z)", re.DOTALL)
_SNAPSHOT_HEAD = re.compile(r"^[ \t]*-?[ \t]*\**Page[ _]?Snapshot\**[ \t]*:?[ \t]*$", re.MULTILINE | re.IGNORECASE)
_SECTION = re.compile(r"^### (Error|Events)\s*\n(.*?)(?=^### |^- Page URL:|\Z)", re.MULTILINE | re.DOTALL)


@dataclass(slots=True)
class PageState:
    """What one browser action shows: the page after it, and what happened on the way."""

    url: str | None
    title: str | None
    snapshot: str | None  # accessibility snapshot (YAML-like, with [ref=eN]); None: no page
    error: str | None = None  # the action failed (the page state is still shown when there is one)
    events: list[str] = field(default_factory=list)  # dialogs dismissed, tabs opened, deadlines hit
    truncated: bool = False  # the snapshot was cut to browser.snapshot_max_chars
    # simroute refused the action itself (a URL or address policy, its proxy's refusal):
    # the answer is simroute's own (provenance `none`), not the web's.
    refused: bool = False

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def text(self) -> str:
        parts = []
        if self.error:
            parts.append(f"### Error\n{self.error}")
        if self.events:
            parts.append("### Events\n" + "\n".join(f"- {event}" for event in self.events))
        if self.snapshot is None and self.url is None:
            if not self.error:
                parts.append(NO_PAGE)
        else:
            lines = [f"- Page URL: {self.url or 'unknown'}", f"- Page Title: {self.title or ''}"]
            lines.append("- Page Snapshot:\n```yaml\n" + (self.snapshot or "").rstrip("\n") + "\n```")
            parts.append("\n".join(lines))
        return "\n\n".join(parts)

    def structured(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "snapshot": self.snapshot,
            "truncated": self.truncated,
            **({"error": self.error} if self.error else {}),
            **({"events": list(self.events)} if self.events else {}),
        }

    @classmethod
    def from_structured(cls, data: dict[str, Any]) -> PageState:
        return cls(
            url=data.get("url"),
            title=data.get("title"),
            snapshot=data.get("snapshot"),
            error=data.get("error"),
            events=list(data.get("events") or []),
            truncated=bool(data.get("truncated")),
        )


def trim_snapshot(snapshot: str, max_chars: int) -> tuple[str, bool]:
    """The snapshot cut at a line boundary to at most `max_chars`, with a marker
    line saying how much went (refs past the cut are not shown, so not usable)."""
    if len(snapshot) <= max_chars:
        return snapshot, False
    cut = snapshot.rfind("\n", 0, max_chars)
    cut = cut if cut > 0 else max_chars
    left = snapshot[cut:].count("\n") + 1
    return snapshot[
        :cut
    ] + f"\n- note: snapshot trimmed: {left} more lines ({len(snapshot) - cut} characters) not shown", True


def refs_in(snapshot: str | None) -> set[str]:
    return set(_REF.findall(snapshot or ""))


_TEXTBOX_REF = re.compile(r"^\s*- textbox\b.*\[ref=((?:f\d+)?e\d+)\]", re.MULTILINE)


def textbox_refs(snapshot: str | None, limit: int = 32) -> list[str]:
    """The refs of a snapshot's text boxes (the elements text can be typed into), at most `limit`."""
    return _TEXTBOX_REF.findall(snapshot or "")[:limit]


def is_ref(value: str) -> bool:
    return bool(_REF_ARGUMENT.match(value))


def unknown_ref_message(ref: str) -> str:
    """The error for an element ref the page's latest snapshot does not contain
    (the same text on the real and simulated sides)."""
    return f"Ref {ref} not found in the current page snapshot. Try capturing new snapshot."


def parse_page_text(text: str, *, previous: PageState | None = None) -> PageState:
    """A `PageState` from text in (roughly) the form `PageState.text()` writes.
    Missing parts are kept from `previous` (URL, title) or left unknown; never raises."""
    url_match = _URL_LINE.search(text)
    title_match = _TITLE_LINE.search(text)
    error = events = None
    for name, body in _SECTION.findall(text):
        if name == "Error":
            error = body.strip() or None
        else:
            events = [line.strip()[2:].strip() for line in body.splitlines() if line.strip().startswith("- ")]
    head = _SNAPSHOT_HEAD.search(text)
    rest = text[head.end() :] if head else text
    fence = _SNAPSHOT_FENCE.search(rest)
    if fence:
        snapshot = fence.group(1)
    elif head:
        snapshot = rest
    else:
        # No structure at all: whatever is not a header line is the snapshot.
        snapshot = "\n".join(
            line
            for line in text.splitlines()
            if not (_URL_LINE.match(line) or _TITLE_LINE.match(line) or line.startswith("### "))
        )
        if error and snapshot.strip() == error:
            snapshot = ""
    snapshot = snapshot.strip("\n")
    url = url_match.group(1) if url_match else (previous.url if previous else None)
    title = title_match.group(1) if title_match else (previous.title if previous else None)
    if url_match is None and NO_PAGE in text and snapshot.strip() in ("", NO_PAGE):
        return PageState(None, None, None, error=error, events=events or [])
    return PageState(url=url or None, title=title, snapshot=snapshot, error=error, events=events or [])


# --- URLs -----------------------------------------------------------------------------

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_SCHEMELESS_OK = re.compile(r"^(about|data|blob|javascript):", re.IGNORECASE)
_LOCAL = ("localhost", "127.0.0.1", "0.0.0.0", "[::1]")


def normalize_url(url: str) -> str:
    """As playwright-mcp does: a URL without a scheme gets http:// for local hosts, else https://."""
    url = url.strip()
    if _SCHEME.match(url) or _SCHEMELESS_OK.match(url):
        return url
    return ("http://" if url.startswith(_LOCAL) else "https://") + url


def host_allowed(url: str, allowed_domains: list[str] | None) -> bool:
    """Whether `url` may be loaded: no allowlist, a non-network URL (about:, data:),
    or a host equal to an allowed domain or below it (`example.com` allows
    `www.example.com`; `*.example.com` only the subdomains)."""
    if not allowed_domains:
        return True
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss", "ftp"):
        return parts.scheme in ("about", "data", "blob")
    host = (parts.hostname or "").lower().rstrip(".")
    for domain in allowed_domains:
        domain = domain.lower().strip().rstrip(".")
        if domain.startswith("*."):
            if host.endswith(domain[1:]):
                return True
        elif host == domain or host.endswith("." + domain):
            return True
    return False


def blocked_message(url: str, allowed_domains: list[str]) -> str:
    return f"Access to {url} is blocked: its host is not in browser.allowed_domains ({', '.join(allowed_domains)})."


# The browser opens web pages: http(s), and the two schemes that reach nothing
# (about:blank, an inline data: document; their requests go through the proxy too).
WEB_SCHEMES = frozenset({"http", "https"})


_EXPLICIT_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(?!\d)")  # `host:8080` is a port, not a scheme


def scheme_refusal(url: str) -> str | None:
    """Why `url` is not a web page the browser may open (file:, chrome:, view-source:,
    javascript:, devtools:, …), naming the rule; None for a web URL. A URL without a
    scheme is judged as `normalize_url` completes it."""
    text = url.strip()
    explicit = _EXPLICIT_SCHEME.match(text)
    scheme = explicit.group(1).lower() if explicit else ""
    if scheme == "data" or text.lower() == "about:blank":
        return None
    if not explicit or scheme in WEB_SCHEMES:
        try:
            if urlsplit(normalize_url(text)).hostname:
                return None
        except ValueError:
            pass
        return f"simroute browser URL policy: {text[:200]!r} is not a valid web URL (http:, https:)"
    return (
        f"simroute browser URL policy: the browser opens web pages only (http:, https:); {scheme}: URLs are refused "
        f"in every mode: {text[:200]}"
    )
