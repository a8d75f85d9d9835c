import pytest

from router.http.normalize import (
    NormalizationError,
    host_header_contradicts,
    normalize_host,
    normalize_path,
    unsafe_header,
    unsupported_version,
)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("API.Example.COM.", "api.example.com"),
        ("api.example.com", "api.example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("FD00:EC2::254", "fd00:ec2::254"),
    ],
)
def test_hosts(host, expected):
    assert normalize_host(host) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/%61dmin/x", "/admin/x"),
        ("/public/../admin/x", "/admin/x"),
        ("/a/./b/", "/a/b/"),
        ("/a/b/..", "/a/"),
        ("/%2fsecret%2F", "/%2Fsecret%2F"),
        ("/x?q=%7euser&r=%2f", "/x?q=~user&r=%2F"),
        ("/", "/"),
        ("*", "*"),
    ],
)
def test_paths(path, expected):
    assert normalize_path(path) == expected


def test_dot_dot_above_the_root_is_refused():
    with pytest.raises(NormalizationError, match="climbs above the root"):
        normalize_path("/../etc/passwd")
    with pytest.raises(NormalizationError):
        normalize_path("/a/%2e%2e/../../x")


@pytest.mark.parametrize(
    ("header", "contradicts"),
    [
        (None, False),
        ("api.test", False),
        ("API.test.", False),
        ("api.test:80", False),
        ("api.test:8080", True),
        ("evil.example", True),
        ("api.test:x", True),
    ],
)
def test_host_header(header, contradicts):
    assert host_header_contradicts(header, "api.test", 80, "http") is contradicts
    assert host_header_contradicts("[::1]:8080", "::1", 8080, "http") is False


def test_a_header_folded_over_lines_or_holding_a_nul_is_named():
    # mitmproxy keeps `X-Folded: one\r\n two` as one value with its line break, and a NUL
    # as it came, and forwards both (found by tests/fuzz/test_http_proxy.py)
    assert "'X-Folded' is folded" in unsafe_header([(b"Host", b"a"), (b"X-Folded", b"one\r\n two")])
    assert "'X' is folded" in unsafe_header([(b"X", b"a\nb")])
    assert "'X-Nul' holds a NUL" in unsafe_header([(b"X-Nul", b"a\x00b")])
    assert unsafe_header([(b"Host", b"a"), (b"X", b"one two")]) is None


@pytest.mark.parametrize(
    ("version", "alpn", "refused"),
    [("HTTP/1.1", None, False), ("HTTP/1.0", None, False), ("HTTP/2.0", b"h2", False), ("HTTP/2.0", None, True),
     ("HTTP/0.9", None, True), ("HTTP/9.9", b"h2", True)],
)  # fmt: skip
def test_versions_other_than_http_1_and_negotiated_http_2_are_refused(version, alpn, refused):
    # mitmproxy forwards any HTTP/d.d of a request line as it came (found by tests/fuzz/test_http_proxy.py)
    assert (unsupported_version(version, alpn) is not None) == refused
