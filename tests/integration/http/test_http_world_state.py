"""A simulated JSON API keeps its resources: through simroute's HTTP channel (the
routing addon on mitmproxy flows, a real runtime and store), a session recorded
against a real upstream teaches the API's shape, and a simulated session then gets
from the resource state what the API would give it — no model call — while a real
answer after a simulated one wins."""

from __future__ import annotations

import json

import httpx2 as httpx
import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from calls import Observation, Provenance, Route
from policies.chain import default_policies
from router.config import parse_config
from router.http.addon import HttpRouting
from router.runtime.runtime import Runtime

pytestmark = pytest.mark.integration


class NoModel:
    """The world model's place: every answer here must come from the state."""

    calls = 0

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        NoModel.calls += 1
        return Observation.error("the model was asked", Provenance.SIM)


async def send(addon: HttpRouting, method: str, url: str, body=None, *, session: str) -> http.Response:
    """One request through the routing addon, as mitmproxy runs its hooks; a request
    routed real is sent to the upstream here, in mitmproxy's place."""
    content = json.dumps(body).encode() if body is not None else b""
    headers = {"X-Simroute-Session": session, **({"Content-Type": "application/json"} if body is not None else {})}
    flow = tflow.tflow(req=http.Request.make(method, url, content, headers))
    await addon.request(flow)
    if flow.response is None:
        request = flow.request
        async with httpx.AsyncClient(trust_env=False) as client:
            real = await client.request(
                request.method, request.url, content=request.raw_content, headers=dict(request.headers)
            )
        flow.response = http.Response.make(real.status_code, real.content, dict(real.headers))
        addon.responseheaders(flow)
        await addon.response(flow)
    assert flow.response is not None
    return flow.response


async def test_a_simulated_json_api_creates_reads_changes_lists_and_deletes_from_state(tmp_path, upstream):
    config = parse_config(
        f"store: {{path: {tmp_path}/r.db}}\nshell: {{enabled: false}}\nbrowser: {{enabled: false}}\n", base_dir=tmp_path
    )
    runtime = Runtime(config, http_channel_port=0)
    await runtime.open_store()
    runtime.simulator.inner = NoModel()
    addon = HttpRouting(runtime.proxy.parts, config.http, listeners=runtime.proxy.listeners)
    try:
        # Recorded against the real API by another session: its shape, its items, its own 404.
        assert (await send(addon, "POST", f"{upstream}/items", {"name": "milk"}, session="recorder")).status_code == 201
        await send(addon, "GET", f"{upstream}/items", session="recorder")
        assert (await send(addon, "GET", f"{upstream}/items/99", session="recorder")).status_code == 404

        runtime.engine.policies = default_policies(rules=[], mode=Route.SIM)
        created = await send(addon, "POST", f"{upstream}/items", {"name": "eggs"}, session="agent")
        assert (created.status_code, created.json()) == (201, {"id": 2, "name": "eggs", "done": False})
        assert (
            created.headers["X-Simroute-Provenance"] == "sim"
            and json.loads(created.headers["X-Simroute-Source"])["sub"] == "state"
        )
        read = await send(addon, "GET", f"{upstream}/items/2", session="agent")
        assert (read.status_code, read.json()) == (200, {"id": 2, "name": "eggs", "done": False})
        changed = await send(addon, "PATCH", f"{upstream}/items/2", {"done": True}, session="agent")
        assert (changed.status_code, changed.json()) == (200, {"id": 2, "name": "eggs", "done": True})
        listed = await send(addon, "GET", f"{upstream}/items", session="agent")
        assert listed.json() == [{"id": 1, "name": "milk", "done": False}, {"id": 2, "name": "eggs", "done": True}]
        assert (await send(addon, "DELETE", f"{upstream}/items/2", session="agent")).status_code == 204
        gone = await send(addon, "GET", f"{upstream}/items/2", session="agent")
        assert (gone.status_code, gone.json()) == (404, {"detail": "Item not found"})  # the API's own 404
        assert [item["id"] for item in (await send(addon, "GET", f"{upstream}/items", session="agent")).json()] == [1]

        # The simulated item 3 never reached the real API: a real read of it wins over the state.
        assert (await send(addon, "POST", f"{upstream}/items", {"name": "tea"}, session="agent")).json()["id"] == 3
        runtime.engine.policies = default_policies(rules=[], mode=Route.REAL)
        assert (await send(addon, "GET", f"{upstream}/items/3", session="agent")).status_code == 404
        runtime.engine.policies = default_policies(rules=[], mode=Route.SIM)
        again = await send(addon, "GET", f"{upstream}/items/3", session="agent")
        assert again.status_code == 404 and json.loads(again.headers["X-Simroute-Source"])["sub"] == "state"
        assert NoModel.calls == 0
        rows = [row for row in await runtime.store.recent() if row["session"] == "agent"]
        assert {row["observation"]["source"]["sub"] for row in rows if row["provenance"] == "sim"} == {"state"}
    finally:
        await runtime.records.aclose()
        await runtime.store.aclose()
