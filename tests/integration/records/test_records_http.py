"""Records and replay keys on the HTTP channel: `simroute http-proxy` launched as a
user launches it, real clients through it to local upstreams."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from kit.http import http_config, start_proxy
from servers.http_upstream import serve_upstream

pytestmark = pytest.mark.integration


@contextmanager
def proxy_of(directory: Path, **sections):
    directory.mkdir(parents=True, exist_ok=True)
    process = start_proxy(http_config(directory, **sections))
    try:
        yield process
    finally:
        if process.process.poll() is None:
            assert process.stop() == 0, process.log.read_text()


@contextmanager
def store_reading_upstream(database: Path):
    """An upstream that, while it handles a request, reads the proxy's record store
    (read-only, as another process would) and answers with the records it found."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
            try:
                rows = db.execute("SELECT id, status, tool FROM records ORDER BY ts").fetchall()
            finally:
                db.close()
            body = json.dumps([{"id": i, "status": s, "tool": t} for i, s, t in rows]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_post_is_on_record_as_started_before_it_is_forwarded_and_a_get_is_not(tmp_path):
    with store_reading_upstream(tmp_path / "records.db") as upstream, proxy_of(tmp_path) as proxy:
        proxies = {"http": proxy.url}
        got = requests.get(f"{upstream}/items", proxies=proxies, timeout=20)
        posted = requests.post(f"{upstream}/items", json={"name": "x"}, proxies=proxies, timeout=20)
        rows = proxy.records()
    assert got.status_code == posted.status_code == 200
    get_id, post_id = got.headers["X-Simroute-Record"], posted.headers["X-Simroute-Record"]
    assert get_id not in {row["id"] for row in got.json()}  # a GET reads only: not written ahead
    seen_by_upstream = {row["id"]: row for row in posted.json()}
    assert seen_by_upstream[post_id] == {
        "id": post_id,
        "status": "started",
        "tool": "POST",
    }  # on record before it was forwarded
    assert seen_by_upstream[get_id]["status"] == "complete"
    assert [(r["id"], r["tool"], r["status"], r["provenance"]) for r in rows] == [
        (get_id, "GET", "complete", "real"),
        (post_id, "POST", "complete", "real"),
    ]


def test_the_credential_headers_of_the_replay_key_are_configurable(tmp_path):
    replay_rule = {"match": {"channel": "http"}, "route": "replay"}

    def fetch(proxy, upstream, session, tenant, trace):
        headers = {"X-Simroute-Session": session, "X-Tenant": tenant, "X-Trace": trace}
        answer = requests.get(f"{upstream}/echo?q=1", headers=headers, proxies={"http": proxy.url}, timeout=20)
        assert answer.status_code == 200
        return answer.headers["X-Simroute-Provenance"], answer.json()

    with serve_upstream() as upstream:
        listed = {"on_miss": "real", "credential_headers": ["authorization", "x-tenant"]}
        with proxy_of(tmp_path / "listed", rules=[replay_rule], replay=listed) as proxy:
            recorded = fetch(proxy, upstream, "recording", "acme", "t-1")
            same_tenant = fetch(proxy, upstream, "same-tenant", "acme", "t-2")
            other_tenant = fetch(proxy, upstream, "other-tenant", "globex", "t-1")
            rows = proxy.records()
        with proxy_of(tmp_path / "default", rules=[replay_rule], replay={"on_miss": "real"}) as proxy:
            unlisted = [
                fetch(proxy, upstream, s, tenant, "t-1")
                for s, tenant in (("recording", "acme"), ("other-tenant", "globex"))
            ]
    assert recorded[0] == "real"
    assert same_tenant == ("replay", recorded[1])  # X-Trace is not in the list: no part of the key
    assert other_tenant[0] == "real" and other_tenant[1] != recorded[1]  # X-Tenant is: another tenant's call is a miss
    assert "replay miss" in rows[2]["note"]
    assert (
        rows[0]["arguments"]["credentials"]
        == rows[1]["arguments"]["credentials"]
        != rows[2]["arguments"]["credentials"]
    )
    assert all(
        "acme" not in json.dumps(row["arguments"]) and "globex" not in json.dumps(row["arguments"]) for row in rows
    )
    assert [provenance for provenance, _ in unlisted] == ["real", "replay"]  # not listed by default: the same key
