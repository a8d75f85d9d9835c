import gzip
import zlib

import brotli
import zstandard

from backends.http.decode import decode_bounded


def test_small_bodies_decode_whole():
    for data, encoding in (
        (gzip.compress(b"hello"), "gzip"),
        (zlib.compress(b"hello"), "deflate"),
        (zlib.compress(b"hello")[2:-4], "deflate"),
        (brotli.compress(b"hello"), "br"),
        (zstandard.compress(b"hello"), "zstd"),
        (gzip.compress(b"he") + gzip.compress(b"llo"), "gzip"),
    ):
        decoded = decode_bounded(data, encoding, max_bytes=1 << 20)
        assert decoded == decoded.__class__(b"hello", True), encoding


def test_bombs_stop_at_the_ceiling_and_say_so():
    member = gzip.compress(bytes(8 << 20))
    for data, encoding in (
        (member * 16, "gzip"),
        (brotli.compress(bytes(64 << 20)), "br"),
        (zstandard.compress(bytes(64 << 20)), "zstd"),
    ):
        decoded = decode_bounded(data, encoding, max_bytes=4 << 20)
        assert decoded.decoded and len(decoded.data) <= 4 << 20 and "stopped at" in decoded.note(), encoding
        assert len(decoded.data) <= max(len(data) * 100, 64 * 1024)


def test_unknown_or_broken_encodings_are_kept_as_sent():
    assert decode_bounded(b"raw", None, max_bytes=10) == decode_bounded(b"raw", "identity", max_bytes=10)
    assert not decode_bounded(b"not gzip", "gzip", max_bytes=100).decoded
    assert not decode_bounded(b"x", "compress", max_bytes=100).decoded
