"""A real HTTP(S) upstream for the HTTP channel's tests and benchmark: keep-alive
HTTP/1.1 on loopback, in a thread, plain or TLS with a certificate made here.

/json             a small JSON document (Content-Length)
/echo             the request (method, path, query, headers, body) as JSON, plus a
                  fresh `nonce` and `served` counter (noise for replay tests)
/slow?s=N         answers after N seconds
/stall?s=N        headers and the start of the body, then N seconds of nothing
/sse?n=N          N server-sent events 0.05 s apart, then the stream ends
/chunked?n=N      N chunks (Transfer-Encoding: chunked)
/big?n=N          N bytes of text
/binary?n=N       N bytes 0..255 repeating (application/octet-stream)
/gzip             gzip-encoded JSON
/status?code=N    an empty answer with that status
/items            a small JSON API (POST creates with the next integer id, GET lists;
/items/{id}       GET, PUT, PATCH, DELETE; 404 {"detail": "Item not found"}), as an
                  agent's REST tool sees one; its items live as long as the server
"""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import json
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes
    served = 0

    def log_message(self, format, *args):  # quiet
        pass

    def _send(
        self, status: int, body: bytes, content_type: str = "application/json", extra: dict | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _query(self) -> dict:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def do_DELETE(self) -> None:
        self._route()

    def do_PATCH(self) -> None:
        self._route()

    def _route(self) -> None:
        path = urlsplit(self.path).path
        query = self._query()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Handler.served += 1
        if path == "/json":
            self._send(200, b'{"ok": true, "items": [1, 2, 3]}')
        elif path.startswith("/echo"):
            echo = {
                "method": self.command,
                "path": path,
                "query": query,
                "body": body.decode("utf-8", "replace"),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "nonce": uuid.uuid4().hex,
                "served": Handler.served,
            }
            self._send(200, json.dumps(echo).encode())
        elif path == "/slow":
            time.sleep(float(query.get("s", "5")))
            self._send(200, b'{"slow": true}')
        elif path == "/stall":  # headers and a part of the body, then nothing for s seconds
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"partial": ')
            self.wfile.flush()
            time.sleep(float(query.get("s", "5")))
            self.close_connection = True
        elif path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(int(query.get("n", "5"))):
                self.wfile.write(f'id: {i}\nevent: tick\ndata: {{"n": {i}}}\n\n'.encode())
                self.wfile.flush()
                time.sleep(0.05)
            self.close_connection = True
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(query.get("n", "4"))):
                data = f"chunk {i}\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/big":
            n = int(query.get("n", "100000"))
            self._send(200, (b"0123456789abcdef" * (n // 16 + 1))[:n], "text/plain")
        elif path == "/binary":
            n = int(query.get("n", "1024"))
            self._send(200, bytes(i % 256 for i in range(n)), "application/octet-stream")
        elif path == "/gzip":
            self._send(200, gzip.compress(b'{"zipped": true}'), extra={"Content-Encoding": "gzip"})
        elif path == "/status":
            self._send(int(query.get("code", "200")), b"")
        elif path == "/items" or path.startswith("/items/"):
            self._items(path.removeprefix("/items").strip("/"), json.loads(body or b"{}"))
        else:
            self._send(404, b'{"error": "not found"}')

    def _items(self, key: str, sent: dict) -> None:
        items: dict[str, dict] = self.server.__dict__.setdefault("items", {})  # type: ignore[attr-defined]
        if not key and self.command == "POST":
            self.server.item_ids = getattr(self.server, "item_ids", 0) + 1  # type: ignore[attr-defined]
            item = items[str(self.server.item_ids)] = {"id": self.server.item_ids, **sent}  # type: ignore[attr-defined]
            item.setdefault("done", False)
            self._send(201, json.dumps(item).encode())
        elif not key and self.command == "GET":
            self._send(200, json.dumps(list(items.values())).encode())
        elif key not in items:
            self._send(404, b'{"detail": "Item not found"}')
        elif self.command == "DELETE":
            del items[key]
            self._send(204, b"")
        else:
            if self.command in ("PUT", "PATCH"):
                kept = items[key] if self.command == "PATCH" else {"id": items[key]["id"]}
                items[key] = {**kept, **sent}
            self._send(200, json.dumps(items[key]).encode())


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (cert, key) PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "upstream-cert.pem", directory / "upstream-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@contextmanager
def serve_upstream(*, tls_dir: Path | None = None, server_names: list[str] | None = None) -> Iterator[str]:
    """Serve on a free loopback port; yields the base URL. With `tls_dir`, HTTPS with a
    certificate made there; `server_names` then gets the name (SNI) each client asked for."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    scheme = "http"
    if tls_dir is not None:
        cert, key = make_certificate(tls_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        if server_names is not None:
            context.sni_callback = lambda _socket, name, _context: server_names.append(name)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, name="http-upstream", daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
