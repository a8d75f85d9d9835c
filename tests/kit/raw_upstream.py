"""An HTTP/1.1 upstream on a raw socket that keeps the exact bytes it received.

Request smuggling is a disagreement about where one request ends: to judge it, the
test needs what the proxy actually wrote to the wire, not what a forgiving server
library made of it. This upstream frames requests itself, strictly (RFC 9112: a
chunked `Transfer-Encoding` wins over `Content-Length`; anything it cannot frame ends
the connection), logs every request line it framed and all raw bytes, and answers
each request `200` with its target as the body.
"""

from __future__ import annotations

import re
import socket
import threading
from dataclasses import dataclass, field

_HEAD_END = b"\r\n\r\n"
_MAX_HEAD = 256 * 1024


class FramingError(ValueError):
    """The bytes are not an HTTP/1.1 request this upstream can frame."""


class HeadTooLarge(FramingError):
    """A head past `_MAX_HEAD`: answered 431, as servers do."""


@dataclass
class RawUpstream:
    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))
    targets: list[str] = field(default_factory=list)  # the request targets framed, in order
    raw: list[bytes] = field(default_factory=list)  # each connection's bytes
    unframed: int = 0  # connections that sent bytes this upstream could not frame
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> RawUpstream:
        threading.Thread(target=self._accept, name="raw-upstream", daemon=True).start()
        return self

    def close(self) -> None:
        self.sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        with self.lock:
            index = len(self.raw)
            self.raw.append(b"")
        conn.settimeout(30)
        with conn:
            try:
                while True:
                    target, rest = _frame(bytes(buffer), lambda: _read(conn, buffer, index, self))
                    with self.lock:
                        self.targets.append(target)
                    body = target.encode("utf-8", "replace")
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(body), body)
                    )
                    buffer[:] = rest
            except HeadTooLarge:
                conn.sendall(
                    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            except FramingError:
                with self.lock:
                    self.unframed += 1
            except (EOFError, OSError):
                return


def _read(conn: socket.socket, buffer: bytearray, index: int, upstream: RawUpstream) -> bytes:
    data = conn.recv(65536)
    if not data:
        raise EOFError
    buffer += data
    with upstream.lock:
        upstream.raw[index] += data
    return bytes(buffer)


def _frame(data: bytes, more) -> tuple[str, bytes]:
    """The next request's target and the bytes after it (`more()` reads on)."""
    while _HEAD_END not in data:
        if len(data) > _MAX_HEAD:
            raise HeadTooLarge("head too long")
        data = more()
    head, _, rest = data.partition(_HEAD_END)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise FramingError(f"request line {lines[0]!r}")
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or "\0" in value:
            raise FramingError(f"header line {line!r}")
        headers.setdefault(name.lower(), []).append(value.strip())
    consumed = len(head) + len(_HEAD_END)
    if "transfer-encoding" in headers:
        if headers["transfer-encoding"][-1].split(",")[-1].strip().lower() != "chunked":
            raise FramingError("a request transfer coding other than chunked last")
        end, data = _chunked_end(data, consumed, more)
        return parts[1], data[end:]
    lengths = set(headers.get("content-length", []))
    if len(lengths) > 1 or any(not v.isdigit() for v in lengths):
        raise FramingError(f"content-length {sorted(lengths)}")
    length = int(lengths.pop()) if lengths else 0
    while len(data) < consumed + length:
        data = more()
    return parts[1], data[consumed + length :]


def _chunked_end(data: bytes, at: int, more) -> tuple[int, bytes]:
    """Where a chunked body that starts at `at` ends (after its trailer), and the bytes read so far."""
    while True:
        while b"\r\n" not in data[at:]:
            data = more()
        line_end = data.index(b"\r\n", at)
        size_text = data[at:line_end].split(b";")[0].strip()
        if not re.fullmatch(rb"[0-9a-fA-F]{1,16}", size_text):
            raise FramingError(f"chunk size {size_text!r}")
        size = int(size_text, 16)
        at = line_end + 2
        if size == 0:
            while True:  # trailer lines, then an empty line
                while b"\r\n" not in data[at:]:
                    data = more()
                line_end = data.index(b"\r\n", at)
                empty = line_end == at
                at = line_end + 2
                if empty:
                    return at, data
        while len(data) < at + size + 2:
            data = more()
        if data[at + size : at + size + 2] != b"\r\n":
            raise FramingError("chunk not followed by CRLF")
        at += size + 2
