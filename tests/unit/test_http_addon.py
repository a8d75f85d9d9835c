"""The routing addon's hooks on mitmproxy test flows, with a real runtime and store."""

import base64

import pytest
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from router.app import Runtime
from router.config import parse_config
from router.http.addon import HttpRouting


@pytest.fixture
def make_addon(tmp_path):
    runtimes = []

    def make(text=""):
        config = parse_config(f"store: {{path: {tmp_path}/r.db}}\nshell: {{enabled: false}}\nbrowser: {{enabled: false}}\n{text}", base_dir=tmp_path)
        runtime = Runtime(config)
        runtimes.append(runtime)
        return HttpRouting(runtime, config.http), runtime

    yield make
    for runtime in runtimes:
        runtime.store.close()


def flow(method="GET", url="http://api.test/v1/items?b=2&a=1", headers=(), body=b""):
    request = http.Request.make(method, url, body, dict(headers))
    return tflow.tflow(req=request)


async def test_deny_answers_403_json_and_records(make_addon):
    addon, runtime = make_addon("rules: [{match: {channel: http, tool: DELETE}, route: deny, reason: read only}]")
    f = flow("DELETE")
    await addon.request(f)
    assert f.response.status_code == 403 and f.response.headers["X-Simroute-Provenance"] == "none"
    assert "read only" in f.response.json()["error"]
    [row] = runtime.store.recent()
    assert row["id"] == f.response.headers["X-Simroute-Record"] and row["route"] == "deny"


async def test_real_route_records_the_response_before_it_is_sent(make_addon):
    addon, runtime = make_addon()
    f = flow(headers={"X-Simroute-Session": "s1", "Accept": "application/json"})
    await addon.request(f)
    assert f.response is None and "X-Simroute-Session" not in f.request.headers  # goes upstream
    f.response = tutils.tresp(content=b'{"ok": true}', headers=http.Headers(content_type="application/json", content_length="12"))
    addon.responseheaders(f)
    assert f.response.stream is False and f.response.headers["X-Simroute-Provenance"] == "real"
    addon.response(f)
    [row] = runtime.store.recent()
    assert row["session"] == "s1" and row["arguments"]["headers"] == {"accept": "application/json"}
    assert row["observation"]["structured"]["body"] == '{"ok": true}'
    assert f.response.headers["X-Simroute-Record"] == row["id"]


async def test_event_streams_pass_through_a_capture(make_addon):
    addon, runtime = make_addon()
    f = flow()
    await addon.request(f)
    f.response = tutils.tresp(content=None, headers=http.Headers(content_type="text/event-stream"))
    addon.responseheaders(f)
    assert f.response.stream(b"data: 1\n\n") == b"data: 1\n\n"
    addon.response(f)
    row = runtime.store.recent()[0]
    assert row["note"] == "streamed" and row["observation"]["structured"]["body"] == "data: 1\n\n"


async def test_sessions_from_proxy_credentials_and_routing_failures_fail_closed(make_addon, monkeypatch):
    addon, runtime = make_addon()
    token = base64.b64encode(b"carol:pw").decode()
    f = flow(headers={"Proxy-Authorization": f"Basic {token}"})
    assert addon.session_id(f) == "carol" and "Proxy-Authorization" not in f.request.headers

    def broken(*args, **kwargs):
        raise RuntimeError("policy exploded")

    monkeypatch.setattr(runtime.engine, "begin", broken)
    f = flow()
    await addon.request(f)
    assert f.response.status_code == 500 and "policy exploded" in f.response.json()["error"]  # never forwarded unrouted
