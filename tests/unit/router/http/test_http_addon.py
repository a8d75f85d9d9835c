"""The routing addon's hooks on mitmproxy test flows, with a real runtime and store."""

import base64
import json

import pytest
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from router.config import parse_config
from router.http.addon import HttpRouting
from router.runtime.runtime import Runtime


@pytest.fixture
async def make_addon(tmp_path):
    runtimes = []

    async def make(text=""):
        config = parse_config(
            f"store: {{path: {tmp_path}/r.db}}\nshell: {{enabled: false}}\nbrowser: {{enabled: false}}\n{text}",
            base_dir=tmp_path,
        )
        runtime = Runtime(config, http_channel_port=0)
        await runtime.open_store()
        runtimes.append(runtime)
        return HttpRouting(runtime.proxy.parts, config.http, listeners=runtime.proxy.listeners), runtime

    yield make
    for runtime in runtimes:
        await runtime.records.aclose()
        await runtime.store.aclose()


def flow(method="GET", url="http://127.0.0.1:9/v1/items?b=2&a=1", headers=(), body=b""):
    request = http.Request.make(method, url, body, dict(headers))
    return tflow.tflow(req=request)


async def test_deny_answers_403_json_and_records(make_addon):
    addon, runtime = await make_addon("rules: [{match: {channel: http, tool: DELETE}, route: deny, reason: read only}]")
    f = flow("DELETE")
    await addon.request(f)
    assert f.response.status_code == 403 and f.response.headers["X-Simroute-Provenance"] == "none"
    assert "read only" in f.response.json()["error"]
    [row] = await runtime.store.recent()
    assert row["id"] == f.response.headers["X-Simroute-Record"] and row["route"] == "deny"
    assert f.response.headers["X-Simroute-Safety"] == row["safety_class"] == "destructive"
    assert row["safety_reason"] == "DELETE 127.0.0.1/v1/items deletes"


async def test_rehearsal_keeps_a_payment_post_from_the_upstream(make_addon):
    addon, runtime = await make_addon("mode: rehearsal\nrehearsal: {on_divert: deny}")
    f = flow(
        "POST", "http://shop.test/api/payments", headers={"Content-Type": "application/json"}, body=b'{"amount": 5}'
    )
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403  # answered here: never forwarded
    assert f.response.headers["X-Simroute-Safety"] == "destructive"
    [row] = await runtime.store.recent()
    assert (row["route"], row["policy"], row["safety_class"]) == ("deny", "rehearsal", "destructive")
    assert "looks like a payment" in row["reason"]


async def test_real_route_records_the_response_before_it_is_sent(make_addon):
    addon, runtime = await make_addon()
    f = flow(headers={"X-Simroute-Session": "s1", "Accept": "application/json"})
    await addon.request(f)
    assert f.response is None and "X-Simroute-Session" not in f.request.headers  # goes upstream
    f.response = tutils.tresp(
        content=b'{"ok": true}', headers=http.Headers(content_type="application/json", content_length="12")
    )
    addon.responseheaders(f)
    assert f.response.stream is False and f.response.headers["X-Simroute-Provenance"] == "real"
    assert f.response.headers["X-Simroute-Safety"] == "safe"
    await addon.response(f)
    [row] = await runtime.store.recent()
    assert row["session"] == "s1" and row["arguments"]["headers"] == {"accept": "application/json"}
    assert row["observation"]["structured"]["body"] == '{"ok": true}'
    assert f.response.headers["X-Simroute-Record"] == row["id"]
    assert (row["safety_class"], row["safety_reason"]) == ("safe", "GET reads")


async def test_event_streams_pass_through_a_capture(make_addon):
    addon, runtime = await make_addon()
    f = flow()
    await addon.request(f)
    f.response = tutils.tresp(content=None, headers=http.Headers(content_type="text/event-stream"))
    addon.responseheaders(f)
    assert f.response.stream(b"data: 1\n\n") == b"data: 1\n\n"
    await addon.response(f)
    row = (await runtime.store.recent())[0]
    assert row["note"] == "streamed" and row["observation"]["structured"]["body"] == "data: 1\n\n"


async def test_sessions_from_proxy_credentials_and_routing_failures_fail_closed(make_addon, monkeypatch):
    addon, runtime = await make_addon()
    token = base64.b64encode(b"carol:pw").decode()
    f = flow(headers={"Proxy-Authorization": f"Basic {token}"})
    assert addon.front_door.listener(f.client_conn).gate.session_of(f.client_conn.id, f.request.headers) == "carol"
    assert "Proxy-Authorization" not in f.request.headers

    def broken(*args, **kwargs):
        raise RuntimeError("policy exploded")

    monkeypatch.setattr(runtime.engine, "begin", broken)
    f = flow()
    await addon.request(f)
    assert f.response.status_code == 500 and "policy exploded" in f.response.json()["error"]  # never forwarded unrouted
    [row] = await runtime.store.recent()  # and recorded, like any refusal
    assert (
        row["policy"] == "http-routing"
        and row["route"] == "deny"
        and f.response.headers["X-Simroute-Record"] == row["id"]
    )


async def test_credentials_enter_the_key_as_a_keyed_digest_only(make_addon):
    addon, runtime = await make_addon("rules: [{match: {channel: http}, route: deny}]")
    for user in ("alice", "bob", "alice"):
        await addon.request(flow(headers={"Authorization": f"Bearer secret-of-{user}", "X-Simroute-Session": user}))
    rows = await runtime.store.recent()
    digests = [row["arguments"]["credentials"] for row in rows]
    assert digests[0] == digests[2] != digests[1]  # one user's recorded answer is never replayed to another
    assert rows[0]["call_key"] == rows[2]["call_key"] != rows[1]["call_key"]
    assert all("secret-of" not in json.dumps(row) for row in rows)
