"""mitmproxy's own error pages in simroute's form."""

import json

from router.http import errors, mitmproxy_patches


def page(raw: bytes) -> tuple[str, dict, dict]:
    head, _, body = raw.decode().partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, json.loads(body)


def test_error_pages_are_json_with_provenance_and_overrides_are_claimed_once():
    mitmproxy_patches.install_error_pages()
    mitmproxy_patches.install_error_pages()  # idempotent
    from mitmproxy.proxy.layers.http import _http1

    status, headers, body = page(_http1.make_error_response(502, "Connect call failed"))
    assert status.startswith("HTTP/1.1 502") and headers["x-simroute-provenance"] == "none"
    assert body == {"error": "simroute proxy: Connect call failed", "status": 502, "provenance": "none"}
    errors.replace_next("server closed connection", 504, "simroute: too slow")
    status, _, body = page(_http1.make_error_response(502, "server closed connection"))
    assert status.startswith("HTTP/1.1 504") and body["error"] == "simroute: too slow"
    status, _, _ = page(_http1.make_error_response(502, "server closed connection"))
    assert status.startswith("HTTP/1.1 502")  # claimed once
