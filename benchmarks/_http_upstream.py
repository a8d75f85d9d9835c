"""The keep-alive upstream for http_overhead.py: a small JSON answer over HTTP/1.1.
Prints its port on stdout once listening."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"ok": true, "items": [1, 2, 3], "message": "hello from the upstream"}'


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes

    def log_message(self, format, *args):
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
