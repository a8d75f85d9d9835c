"""`empty` and `truncate` on streamed HTTP bodies through `simroute http-proxy`: a body
over the record limit is cut at its `keep` share of bytes as it passes (Content-Length
to match), an event stream is emptied; the record holds what the agent got and the
whole real body beside it. A stream of unknown length is not truncated, and says so."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from kit.launch import records_of
from servers.http_upstream import serve_upstream

pytestmark = pytest.mark.integration

PLAN = {
    "seed": 4,
    "rules": [
        {"name": "half-big", "kind": "truncate", "keep": 0.5, "match": {"channel": "http", "path": "/big"}},
        {"name": "no-events", "kind": "empty", "match": {"channel": "http", "path": "/sse"}},
        {"name": "half-chunks", "kind": "truncate", "keep": 0.5, "match": {"channel": "http", "path": "/chunked"}},
    ],
}


def test_streamed_bodies_are_cut_as_they_pass_and_the_record_keeps_the_real_one(proxy):
    p = proxy(http={"max_body_bytes": 1000}, perturbations={"apply": "p", "plans": {"p": PLAN}})
    with serve_upstream() as upstream, httpx.Client(proxy=p.url, timeout=30) as client:
        big = client.get(f"{upstream}/big?n=5000")
        events = client.get(f"{upstream}/sse?n=3")
        chunks = client.get(f"{upstream}/chunked")
    whole = (b"0123456789abcdef" * 313)[:5000]
    assert big.status_code == 200 and big.content == whole[:2500] and big.headers["content-length"] == "2500"
    assert '"kind":"truncate"' in big.headers["x-simroute-perturbation"]
    assert events.status_code == 200 and events.content == b""
    assert chunks.content == b"".join(b"chunk %d\n" % i for i in range(4))  # unknown length: passed whole
    rows = {row["arguments"]["path"]: row for row in records_of(p.config)}
    cut = rows["/big"]
    assert cut["perturbation"]["kind"] == "truncate" and cut["provenance"] == "none"
    assert (
        cut["observation"]["structured"]["body_size"] == 2500 and cut["unperturbed"]["structured"]["body_size"] == 5000
    )
    assert cut["unperturbed"]["provenance"] == "real" and "the real answer was changed" in cut["note"]
    assert (
        rows["/sse"]["observation"]["structured"]["body_size"] == 0
        and rows["/sse"]["unperturbed"]["structured"]["body_size"] > 0
    )
    assert "perturbation" not in rows["/chunked"] and "not applied: the body streamed" in rows["/chunked"]["note"]
