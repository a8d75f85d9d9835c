"""Every HTTP answer names the replica (host) that served it, once."""

from __future__ import annotations

import socket

import httpx2 as httpx
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from router.mcp.replica_header import ReplicaHeader


def app_with(headers: dict[str, str] | None = None) -> ReplicaHeader:
    async def hello(request):
        return PlainTextResponse("hi", status_code=403, headers=headers)

    return ReplicaHeader(Starlette(routes=[Route("/", hello)]))


async def test_an_answer_names_this_host_even_a_refusal():
    transport = httpx.ASGITransport(app=app_with())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.get("/")
    assert (answer.status_code, answer.text) == (403, "hi")
    assert answer.headers.get_list("x-simroute-replica") == [socket.gethostname()]


async def test_an_answer_passed_through_twice_is_named_once():
    transport = httpx.ASGITransport(app=ReplicaHeader(app_with()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.get("/")
    assert answer.headers.get_list("x-simroute-replica") == [socket.gethostname()]
