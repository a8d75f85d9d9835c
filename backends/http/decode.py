"""Content-decoding (gzip, deflate, br, zstd) with a ceiling.

A 4 MB gzip of zeros inflates to 4 GB: decoding a body for the record, the
canonical form or the world model stops at `max_bytes` or at `max_ratio` times the
encoded size, whichever comes first, and says that it stopped. What goes upstream
or to the agent is never touched here.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

MAX_RATIO = 100
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Decoded:
    data: bytes
    decoded: bool  # False: `data` is the body as sent (unknown encoding, or it does not decode)
    cut: str = ""  # why decoding stopped early; empty when the whole body was decoded

    def note(self) -> str:
        return f"decoded body cut: {self.cut}" if self.cut else ""


def decode_bounded(data: bytes, encoding: str | None, *, max_bytes: int, max_ratio: int = MAX_RATIO) -> Decoded:
    encoding = (encoding or "").strip().lower()
    if not data or encoding in ("", "identity"):
        return Decoded(data, False)
    limit = min(max_bytes, max(len(data) * max_ratio, _CHUNK))
    why = (
        f"stopped at {limit} bytes (http.max_decoded_bytes {max_bytes}, or {max_ratio}x the {len(data)} encoded bytes)"
    )
    try:
        if encoding in ("gzip", "x-gzip", "deflate"):
            out, complete = _zlib(data, encoding, limit)
        elif encoding == "br":
            out, complete = _brotli(data, limit)
        elif encoding == "zstd":
            out, complete = _zstd(data, limit)
        else:
            return Decoded(data, False)
    except ValueError:  # the body does not decode: it is kept as sent
        return Decoded(data, False)
    return Decoded(out, True, "" if complete else why)


def _zlib(data: bytes, encoding: str, limit: int) -> tuple[bytes, bool]:
    gzip = encoding in ("gzip", "x-gzip")
    wbits = 16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS
    try:
        return _inflate(lambda: zlib.decompressobj(wbits), data, limit, members=gzip)
    except zlib.error as exc:
        if gzip:
            raise ValueError(str(exc)) from exc
    try:  # raw deflate, as some servers send
        return _inflate(lambda: zlib.decompressobj(-zlib.MAX_WBITS), data, limit, members=False)
    except zlib.error as exc:
        raise ValueError(str(exc)) from exc


def _inflate(new_decompressor, data: bytes, limit: int, *, members: bool) -> tuple[bytes, bool]:
    """Inflate up to `limit` bytes; gzip allows several members one after another."""
    out = bytearray()
    pending = data
    while pending and len(out) < limit:
        decompressor = new_decompressor()
        while pending and len(out) < limit and not decompressor.eof:
            out += decompressor.decompress(pending, limit - len(out))
            pending = decompressor.unconsumed_tail
        if decompressor.eof:
            pending = decompressor.unused_data if members else b""
        elif len(out) >= limit:
            return bytes(out), not pending and not decompressor.decompress(b"", 1)
        else:
            break  # a truncated stream: what decoded is kept
    return bytes(out), not pending


def _brotli(data: bytes, limit: int) -> tuple[bytes, bool]:
    import brotli

    decompressor = brotli.Decompressor()
    try:
        out = bytearray(decompressor.process(data, output_buffer_limit=limit))
        while len(out) < limit and not decompressor.is_finished() and not decompressor.can_accept_more_data():
            out += decompressor.process(b"", output_buffer_limit=limit - len(out))
    except brotli.error as exc:
        raise ValueError(str(exc)) from exc
    return bytes(out[:limit]), decompressor.is_finished() and len(out) <= limit


def _zstd(data: bytes, limit: int) -> tuple[bytes, bool]:
    import io

    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out = bytearray()
    try:
        while len(out) < limit:
            chunk = reader.read(min(_CHUNK, limit - len(out)))
            if not chunk:
                return bytes(out), True
            out += chunk
        return bytes(out), not reader.read(1)
    except zstandard.ZstdError as exc:
        raise ValueError(str(exc)) from exc
