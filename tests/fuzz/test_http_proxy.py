"""`simroute serve`'s HTTP(S) proxy under fuzzed bytes on a raw socket: malformed
request lines and headers, smuggling-shaped `Content-Length`/`Transfer-Encoding`
pairs, absurd chunk sizes, CONNECT to odd targets, slow clients.

Every answer is a clear one: a 4xx of simroute's own (provenance `none`; 505 for an
HTTP version it does not forward), a request
forwarded whole (the upstream's 200, provenance `real`), or a closed connection;
never a 5xx for bytes the client sent, never a crash or a traceback in the log.
Smuggling is judged by the raw bytes the upstream received (tests/kit/raw_upstream.py):
no request the proxy did not route reaches it, and a request hidden in an
ambiguous body never does. Every request the proxy forwarded is on record."""

from __future__ import annotations

import itertools
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from kit.launch import free_port, records_of, write_config
from kit.raw_upstream import RawUpstream
from kit.serve import serve_process

pytestmark = pytest.mark.integration

SMUGGLED = "/smuggled"


@dataclass
class Proxy:
    process: subprocess.Popen
    port: int
    log: Path
    config: Path
    upstream: RawUpstream
    forwarded: set[str] = field(default_factory=set)  # targets answered 200 through the proxy
    markers: Iterator[int] = field(default_factory=itertools.count)

    def target(self, kind: str) -> str:
        return f"/fz/{kind}-{next(self.markers)}"

    def url(self, path: str) -> str:
        return f"http://{self.upstream.host}{path}"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory) -> Iterator[Proxy]:
    folder = tmp_path_factory.mktemp("fuzz-http")
    upstream = RawUpstream().start()
    # A silent tunnel is decided fast (the default waits 2.5 s for a client's first bytes).
    config = write_config(folder, http={"ca_dir": str(folder / "ca"), "tunnel_first_bytes_s": 0.3, "timeout_s": 5})
    log = folder / "serve.log"
    port = free_port()
    try:
        with serve_process(config, log, http_port=port) as (process, _):
            yield Proxy(process, port, log, config, upstream)
    finally:
        upstream.close()


def exchange(port: int, data: bytes, *, wait_s: float = 1.5) -> bytes:
    """Send `data`, then read what comes back: until the proxy closes, or (nothing more
    arriving) after the client stops writing, as a client that gave up would."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        try:
            sock.sendall(data)
            received = _read(sock)
            if not received:
                sock.shutdown(socket.SHUT_WR)
                received = _read(sock)
        except (ConnectionResetError, BrokenPipeError):
            pass  # a clean refusal: the proxy closed on bytes it would not read
    return received


def _read(sock: socket.socket) -> bytes:
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return received
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
        if received.count(b"HTTP/1.1 ") and _complete(received):
            return received


def _complete(received: bytes) -> bool:
    """One whole answer read (its head, and a body of its Content-Length)."""
    head, sep, body = received.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(sep) and length is not None and len(body) >= int(length.group(1))


def answers(received: bytes) -> list[tuple[int, str, bytes]]:
    """(status, head, body) of each answer in `received`."""
    found = []
    for match in re.finditer(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n(.*?)\r\n\r\n", received, re.S):
        head = match.group(2).decode("latin-1").lower()
        length = re.search(r"(?m)^content-length:\s*(\d+)", head)
        body = received[match.end() : match.end() + int(length.group(1))] if length else b""
        found.append((int(match.group(1)), head, body))
    return found


# --- what the fuzzer sends ---------------------------------------------------------------

TOKEN_CHARS = st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":")
ODD_TEXT = st.text(st.characters(codec="latin-1"), max_size=40).map(lambda t: t.encode("latin-1"))
METHODS = st.sampled_from(
    [b"GET", b"POST", b"PUT", b"DELETE", b"HEAD", b"OPTIONS", b"PATCH", b"TRACE", b"get", b"G ET", b""]
)
VERSIONS = st.sampled_from(
    [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/0.9", b"HTTP/1.1 extra", b"http/1.1", b"HTTP/9", b""]
)


@st.composite
def request_lines(draw, proxy: Proxy) -> bytes:
    method = draw(METHODS | st.text(TOKEN_CHARS, max_size=12).map(str.encode))
    target = draw(
        st.sampled_from(
            [
                proxy.url(proxy.target("line")).encode(),
                b"*",
                b"/",
                b"http://",
                b"http://:0/",
                b"http://[::1/",
                b"ftp://x/y",
                b"//x",
            ]
        )
        | ODD_TEXT
    )
    version = draw(VERSIONS)
    separator = draw(st.sampled_from([b" ", b" ", b"  ", b"\t"]))
    line = separator.join(p for p in (method, target, version) if p or draw(st.booleans()))
    ending = draw(st.sampled_from([b"\r\n", b"\n", b"\r"]))
    return line + ending + f"Host: {proxy.upstream.host}".encode() + ending + ending


@st.composite
def header_blocks(draw, proxy: Proxy) -> bytes:
    lines = [f"GET {proxy.url(proxy.target('head'))} HTTP/1.1".encode(), f"Host: {proxy.upstream.host}".encode()]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["odd", "fold", "nocolon", "space-name", "nul", "long", "many-host"]))
        if kind == "odd":
            lines.append(draw(st.text(TOKEN_CHARS, min_size=1, max_size=20)).encode() + b": " + draw(ODD_TEXT))
        elif kind == "fold":
            lines += [b"X-Folded: one", b" two"]
        elif kind == "nocolon":
            lines.append(draw(ODD_TEXT) or b"nocolon")
        elif kind == "space-name":
            lines.append(b"X-Space : value")
        elif kind == "nul":
            lines.append(b"X-Nul: a\x00b")
        elif kind == "long":
            lines.append(b"X-Long: " + b"a" * draw(st.integers(1_000, 300_000)))
        else:
            lines.append(b"Host: other.example")
    return b"\r\n".join(lines) + b"\r\n\r\n"


@st.composite
def smuggling_shaped(draw, proxy: Proxy) -> bytes:
    """A POST whose framing headers disagree, with a second request hidden where one
    reading of the framing ends the body and another does not."""
    hidden = f"GET {SMUGGLED}-{next(proxy.markers)} HTTP/1.1\r\nHost: {proxy.upstream.host}\r\n\r\n".encode()
    body = b"0\r\n\r\n" + hidden
    framing = draw(
        st.lists(
            st.sampled_from(
                [b"Content-Length: 5", b"Content-Length: %d" % len(body), b"Content-Length: 0", b"Content-Length: +5",
                 b"Content-Length: 5, 5", b"Content-Length: -1", b"Content-Length: 0x10", b"Content-Length:5",
                 b"Content-Length : 5", b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked",
                 b"Transfer-Encoding:  chunked", b"Transfer-Encoding: xchunked",
                 b"Transfer-Encoding: chunked, identity", b"Transfer-Encoding: identity, chunked",
                 b"Transfer-Encoding: CHUNKED", b"Transfer-Encoding: \tchunked", b"Transfer-Encoding\t: chunked",
                 b"Transfer-Encoding: chunked\r\n ", b"X: y\nTransfer-Encoding: chunked", b"Transfer-Encoding: gzip"]
            ),
            min_size=2,
            max_size=4,
        )
    )  # fmt: skip
    lines = [
        f"POST {proxy.url(proxy.target('smuggle'))} HTTP/1.1".encode(),
        f"Host: {proxy.upstream.host}".encode(),
        *framing,
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@st.composite
def absurd_chunks(draw, proxy: Proxy) -> bytes:
    head = (
        f"POST {proxy.url(proxy.target('chunks'))} HTTP/1.1\r\n"
        f"Host: {proxy.upstream.host}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunks = b""
    for _ in range(draw(st.integers(1, 4))):
        size = draw(
            st.sampled_from(
                [
                    b"ffffffffffffffffffff",
                    b"7fffffffffffffff",
                    b"-1",
                    b"0x10",
                    b"1;ext=" + b"e" * 5000,
                    b" 5",
                    b"5 ",
                    b"g",
                    b"",
                ]
            )
            | st.integers(0, 2**70).map(lambda n: b"%x" % n)
        )
        chunks += size + b"\r\n" + draw(st.binary(max_size=64)) + draw(st.sampled_from([b"\r\n", b"", b"\n"]))
    if draw(st.booleans()):
        chunks += b"0\r\n\r\n"
    return head.encode() + chunks


@st.composite
def connects(draw, proxy: Proxy) -> bytes:
    target = draw(
        st.sampled_from(
            [b"127.0.0.1:0", b"127.0.0.1:65536", b"[::1]:99999", b"169.254.169.254:80", b"[::ffff:169.254.169.254]:443",
             b"0.0.0.0:80", b"localhost", b":443", b"a..b:443", b"%00:80", b"[:::443", proxy.upstream.host.encode(),
             b"127.0.0.1:1", b"example.invalid:443", b"10.0.0.1:22", b"host:-1", b"user@host:80"]
        )
        | ODD_TEXT
    )  # fmt: skip
    after = draw(
        st.sampled_from([b"", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x00\x05hello", b"SSH-2.0-fuzz\r\n"])
        | st.binary(max_size=64)
    )
    return b"CONNECT " + target + b" HTTP/1.1\r\nHost: " + target + b"\r\n\r\n" + after


def valid(proxy: Proxy) -> bytes:
    return f"GET {proxy.url(proxy.target('valid'))} HTTP/1.1\r\nHost: {proxy.upstream.host}\r\n\r\n".encode()


@fuzz
@given(data=st.data())
@example(data=None)  # a valid request: the suite's own check that forwarded requests are recorded
def test_fuzzed_bytes_get_a_clear_answer_or_a_clean_close(proxy: Proxy, data) -> None:
    tally("HTTP(S) proxy")
    if data is None:
        kind, sent = "valid", valid(proxy)
    else:
        kind = data.draw(st.sampled_from(["line", "headers", "smuggle", "chunks", "connect", "valid", "bytes"]))
        sent = {
            "line": lambda: data.draw(request_lines(proxy)),
            "headers": lambda: data.draw(header_blocks(proxy)),
            "smuggle": lambda: data.draw(smuggling_shaped(proxy)),
            "chunks": lambda: data.draw(absurd_chunks(proxy)),
            "connect": lambda: data.draw(connects(proxy)),
            "valid": lambda: valid(proxy),
            "bytes": lambda: data.draw(st.binary(min_size=1, max_size=300)),
        }[kind]()
    received = exchange(proxy.port, sent)
    for status, head, body in answers(received):
        if kind == "connect" and status == 200 and "connection established" in received.decode("latin-1").lower():
            continue  # the tunnel opened; what answers inside it is checked below
        if status < 400:
            assert "x-simroute-provenance: real" in head, (sent[:300], received[:500])
            if body.startswith(b"/"):  # the upstream's answer names the target (a HEAD's answer has no body)
                proxy.forwarded.add(body.decode("utf-8", "replace"))
        elif kind == "connect" and status in (502, 504):
            assert "x-simroute-provenance: none" in head, (sent[:300], received[:500])  # the tunnel's target is down
        elif "x-simroute-provenance: real" in head:
            assert status == 431, (sent[:300], received[:500])  # the upstream's own refusal of a huge head, passed on
        else:  # simroute's own refusal: a 4xx, or 505 for an HTTP version it does not forward
            assert status < 500 or status == 505, (sent[:300], received[:500])
            assert "x-simroute-provenance: none" in head, (sent[:300], received[:500])
    assert proxy.process.poll() is None, "the proxy died"


def test_a_folded_header_or_a_nul_is_refused_not_forwarded(proxy: Proxy) -> None:
    """Found by the fuzzer: mitmproxy kept an obs-folded header's line break, and a NUL,
    and wrote them upstream as they came (a strict upstream closed, the agent got a 502)."""
    tally("HTTP(S) proxy")
    for header, reason in ((b"X-Folded: one\r\n two", b"folded"), (b"X-Nul: a\x00b", b"NUL")):
        target = proxy.target("unsafe")
        sent = f"GET {proxy.url(target)} HTTP/1.1\r\nHost: {proxy.upstream.host}\r\n".encode() + header + b"\r\n\r\n"
        [(status, head, body)] = answers(exchange(proxy.port, sent))
        assert status == 400 and "x-simroute-provenance: none" in head and reason in body
        assert target not in proxy.upstream.targets


def test_an_asterisk_target_is_a_400_not_a_routing_failure(proxy: Proxy) -> None:
    """Found by the fuzzer: `GET *` with a Host header made the URL `http://host:port*`,
    and routing failed (a 500, fail-closed)."""
    tally("HTTP(S) proxy")
    sent = f"GET * HTTP/1.1\r\nHost: {proxy.upstream.host}\r\n\r\n".encode()
    [(status, head, body)] = answers(exchange(proxy.port, sent))
    assert status == 400 and "x-simroute-provenance: none" in head and b"names no path" in body


def test_a_request_line_of_another_http_version_is_a_505_not_forwarded(proxy: Proxy) -> None:
    """Found by the fuzzer: mitmproxy took `HTTP/0.9` (any `HTTP/d.d`) on a request line and
    wrote it upstream as it came (a strict upstream closed, the agent got a 502)."""
    tally("HTTP(S) proxy")
    for version in ("HTTP/0.9", "HTTP/2.0", "HTTP/9.9"):
        target = proxy.target("version")
        sent = f"GET {proxy.url(target)} {version}\r\nHost: {proxy.upstream.host}\r\n\r\n".encode()
        [(status, head, body)] = answers(exchange(proxy.port, sent))
        assert status == 505 and "x-simroute-provenance: none" in head and version.encode() in body
        assert target not in proxy.upstream.targets


def test_slow_clients_do_not_hold_up_others(proxy: Proxy) -> None:
    """A few clients trickling their requests a byte at a time: a valid request on its
    own connection is answered meanwhile, and each trickled request is answered too."""
    tally("HTTP(S) proxy")
    slow = [socket.create_connection(("127.0.0.1", proxy.port), timeout=10) for _ in range(4)]
    requests = [valid(proxy) for _ in slow]
    try:
        for position in range(0, 40):
            for sock, request in zip(slow, requests, strict=True):
                sock.sendall(request[position : position + 1])
            time.sleep(0.02)
        started = time.monotonic()
        fast = answers(exchange(proxy.port, valid(proxy)))
        assert fast and fast[0][0] == 200 and time.monotonic() - started < 5
        proxy.forwarded.add(fast[0][2].decode())
        for sock, request in zip(slow, requests, strict=True):
            sock.sendall(request[40:])
            [(status, head, body)] = answers(_read(sock))
            assert status == 200 and "x-simroute-provenance: real" in head
            proxy.forwarded.add(body.decode())
    finally:
        for sock in slow:
            sock.close()


def test_after_the_fuzzing_the_proxy_forwards_and_nothing_was_smuggled(proxy: Proxy) -> None:
    """Runs after the fuzz tests of this module (pytest keeps the file's order)."""
    assert proxy.process.poll() is None, "the proxy died"
    with httpx.Client(proxy=f"http://127.0.0.1:{proxy.port}", timeout=20, trust_env=False) as client:
        after = client.get(proxy.url("/fz/after"))
    assert after.status_code == 200 and after.text == "/fz/after" and after.headers["x-simroute-provenance"] == "real"
    reached = list(proxy.upstream.targets)
    smuggled = [t for t in reached if SMUGGLED in t]
    assert not smuggled, f"requests hidden in ambiguous bodies reached the upstream: {smuggled[:3]}"
    assert proxy.forwarded, "no fuzzed request was forwarded: the fuzzer never reached routing"
    recorded = {
        r["arguments"].get("path")
        for r in records_of(proxy.config)
        if r.get("channel") == "http" and r.get("route") == "real"
    }
    unrouted = [t for t in reached if t not in recorded]
    assert not unrouted, f"{len(unrouted)} requests reached the upstream with no record, e.g. {unrouted[:3]}"
    missing = proxy.forwarded - recorded
    assert not missing, f"{len(missing)} forwarded requests have no record, e.g. {sorted(missing)[:3]}"
    log = proxy.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 : log.index("Traceback") + 3000]
