"""Web pages for the browser tests, served on loopback from a thread of the test
process: links, a form, a multi-page flow, a huge page, a page that never
finishes loading, JavaScript dialogs, a new tab.

    with WebPages() as site:
        site.url("/form")
"""

from __future__ import annotations

import html
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
        f"<body>{body}</body></html>"
    )


PAGES = {
    "/": page(
        "Home",
        "<h1>Welcome home</h1><nav><ul>"
        '<li><a href="/about">About us</a></li>'
        '<li><a href="/form">Contact form</a></li>'
        '<li><a href="/flow/1">Start the tour</a></li>'
        "</ul></nav>",
    ),
    "/about": page("About", '<h1>About us</h1><p>We make widgets since 1999.</p><a href="/">Back home</a>'),
    "/form": page(
        "Contact",
        '<h1>Contact</h1><form action="/greet" method="get">'
        '<label>Your name <input name="name"></label>'
        '<button type="submit">Send</button></form>',
    ),
    "/flow/1": page("Tour 1 of 3", '<h1>Step one</h1><p>Widgets are round.</p><a href="/flow/2">Next step</a>'),
    "/flow/2": page("Tour 2 of 3", '<h1>Step two</h1><p>Widgets are blue.</p><a href="/flow/3">Next step</a>'),
    "/flow/3": page("Tour 3 of 3", '<h1>Tour finished</h1><p>That is all about widgets.</p><a href="/">Home</a>'),
    "/dialogs": page(
        "Dialogs",
        "<h1>Dialogs</h1>"
        "<button onclick=\"alert('Widgets are sold out')\">Show alert</button>"
        "<button onclick=\"document.getElementById('answer').textContent = "
        "confirm('Really?') ? 'yes' : 'no'\">Ask</button>"
        '<p id="answer">unasked</p>',
    ),
    "/alert-on-load": page("Alerting", "<h1>Alerting</h1><script>alert('hello from the page')</script>"),
    "/popup": page("Popup opener", '<a href="/about" target="_blank">Open about in a new tab</a>'),
    "/keys": page(
        "Keys",
        '<h1>Keys</h1><p id="last">none</p>'
        "<script>document.addEventListener('keydown', "
        "e => document.getElementById('last').textContent = 'pressed ' + e.key)</script>",
    ),
    # The page's own request (fetch) of an API on the same server: routed too when the
    # browser's traffic goes through an HTTP router.
    "/widgets": page(
        "Widgets",
        '<h1>Widgets</h1><p id="stock">loading</p>'
        "<script>fetch('/api/stock')"
        ".then(r => r.ok ? r.json().then(j => 'in stock: ' + j.count) : 'stock unavailable (' + r.status + ')')"
        ".catch(e => 'stock failed').then(t => document.getElementById('stock').textContent = t)</script>",
    ),
    "/account": page(
        "Your account",
        "<h1>Your account</h1><p>Signed in as widget-fan.</p>"
        '<form action="/account/delete" method="post"><button type="submit">Delete account</button></form>'
        '<a href="/">Home</a>',
    ),
    "/login": page(
        "Sign in",
        '<h1>Sign in</h1><form action="/" method="get">'
        '<label>User <input name="user"></label><label>Password <input type="password" name="pw"></label></form>',
    ),
    "/vault": page(
        "Vault",
        '<h1>Vault</h1><form action="/" method="get">'
        '<label>Access phrase <input type="password" name="phrase"></label></form>',
    ),
    "/huge": page("Huge", "<h1>Huge</h1><ul>" + "".join(f"<li>Item number {i}</li>" for i in range(20000)) + "</ul>"),
}


class WebPages:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                outer.requests.append(parts.path)
                if parts.path == "/greet":
                    name = parse_qs(parts.query).get("name", ["stranger"])[0]
                    return self._send(page("Greeting", f'<h1>Hello, {html.escape(name)}!</h1><a href="/">Home</a>'))
                if parts.path == "/outside":  # links and an image on another host name of this server
                    other = f"http://localhost:{self.server.server_address[1]}"
                    return self._send(
                        page(
                            "Outside",
                            f'<h1>Outside</h1><img src="{other}/pixel" alt="pixel">'
                            f'<a href="{other}/about">Elsewhere</a>',
                        )
                    )
                if parts.path == "/fetch":  # the page fetches ?to=URL and shows what came back
                    target = parse_qs(parts.query).get("to", [""])[0]
                    return self._send(
                        page(
                            "Fetch",
                            '<h1>Fetch</h1><p id="outcome">fetching</p>'
                            f"<script>fetch({json.dumps(target)})"
                            ".then(r => r.text().then(t => 'answered ' + r.status + ': ' + t))"
                            ".catch(e => 'fetch failed')"
                            ".then(t => document.getElementById('outcome').textContent = t)</script>",
                        )
                    )
                if parts.path == "/open":  # a service any origin may read (CORS): reached, a fetch succeeds
                    return self._send(
                        "secret of the host", content_type="text/plain", headers={"Access-Control-Allow-Origin": "*"}
                    )
                if parts.path == "/api/stock":
                    return self._send('{"count": 42}', content_type="application/json")
                if parts.path == "/never":
                    return self._never()
                body = PAGES.get(parts.path)
                if body is None:
                    return self._send(page("Not found", "<h1>404 Not found</h1>"), status=404)
                self._send(body)

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                outer.requests.append(f"POST {parts.path}")
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._send(page("Done", "<h1>Account deleted</h1>"))

            def _send(
                self,
                body: str,
                status: int = 200,
                content_type: str = "text/html; charset=utf-8",
                headers: dict[str, str] | None = None,
            ) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _never(self) -> None:
                # Headers and the start of the page, then nothing: the load never finishes.
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(
                    b"<!doctype html><html><head><title>Forever</title></head><body><h1>Still loading</h1>"
                )
                self.wfile.flush()
                outer._stop.wait(120)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="web-pages", daemon=True)

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def __enter__(self) -> WebPages:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
