"""The real side of the example: a small catalogue API that has the hazards of a real
one. `GET /items` answers a page of items and a `next_cursor` to pass back as
`?cursor=` (the last page's is null), and each client (its `X-Client-Id` header) may
make `limit` requests per `window_s` seconds: past that, `429` with `Retry-After`.

It counts what reached it — requests and the 429s it answered — which is how the
example shows what each way of training cost the real side. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CLIENT_HEADER = "X-Client-Id"


@dataclass
class Counters:
    """What reached the API: requests and the ones it refused with 429."""

    requests: int = 0
    limited: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self) -> tuple[int, int]:
        """(requests, limited) since the last take, and start counting again."""
        with self.lock:
            taken = (self.requests, self.limited)
            self.requests = self.limited = 0
            return taken


@dataclass
class Catalog:
    items: int = 20
    page_size: int = 5
    limit: int = 3  # requests a client may make…
    window_s: float = 1.0  # …per this many seconds (a sliding window)
    counters: Counters = field(default_factory=Counters)
    _recent: dict[str, deque[float]] = field(default_factory=dict)

    @property
    def ids(self) -> set[int]:
        return set(range(1, self.items + 1))

    def page(self, cursor: str | None) -> tuple[int, dict]:
        offset = 0
        if cursor is not None:
            if not cursor.startswith("c") or not cursor[1:].isdigit() or int(cursor[1:]) >= self.items:
                return 400, {"error": f"unknown cursor {cursor!r}"}
            offset = int(cursor[1:])
        end = min(offset + self.page_size, self.items)
        items = [{"id": n, "name": f"item {n}"} for n in range(offset + 1, end + 1)]
        return 200, {"items": items, "next_cursor": f"c{end}" if end < self.items else None}

    def admit(self, client: str) -> float | None:
        """None when the client may make a request now, else the seconds until it may."""
        now = time.monotonic()
        with self.counters.lock:
            self.counters.requests += 1
            recent = self._recent.setdefault(client, deque())
            while recent and recent[0] <= now - self.window_s:
                recent.popleft()
            if len(recent) >= self.limit:
                self.counters.limited += 1
                return recent[0] + self.window_s - now
            recent.append(now)
            return None


def _handler(catalog: Catalog) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the proxy reuses its connection

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path != "/items":
                return self._send(404, {"error": "not found"})
            wait_s = catalog.admit(self.headers.get(CLIENT_HEADER, "anonymous"))
            if wait_s is not None:
                return self._send(
                    429, {"error": "rate limit exceeded"}, {"Retry-After": str(max(1, math.ceil(wait_s)))}
                )
            cursor = parse_qs(url.query).get("cursor", [None])[0]
            self._send(*catalog.page(cursor))

        def _send(self, status: int, value: dict, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, text in (headers or {}).items():
                self.send_header(name, text)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the counters say what happened
            pass

    return Handler


@contextlib.contextmanager
def serving(catalog: Catalog) -> Iterator[str]:
    """The API on a free loopback port, in a thread; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(catalog))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="catalog-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
