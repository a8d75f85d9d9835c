"""SessionCloseGuard puts an MCP session's close after its requests in flight (the race
tests/fuzz/test_mcp_session_race.py found: a POST racing a DELETE hung forever or
left a traceback)."""

from __future__ import annotations

import json

import anyio

from router.mcp.session_close import SessionCloseGuard


def scope(method: str, session: str = "s1") -> dict:
    return {"type": "http", "method": method, "path": "/mcp", "headers": [(b"mcp-session-id", session.encode())]}


class Transport:
    """The inner app: a POST answers after `post_s` (streamed in two parts); a DELETE is noted."""

    def __init__(self, post_s: float) -> None:
        self.post_s = post_s
        self.events: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] == "DELETE":
            self.events.append("closed")
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"event: ", "more_body": True})
        await anyio.sleep(self.post_s)
        self.events.append("answered")
        await send({"type": "http.response.body", "body": b"answer"})


async def call(app, method: str, session: str = "s1") -> list[dict]:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(scope(method, session), receive, send)
    return sent


async def test_a_close_waits_for_the_requests_in_flight():
    inner = Transport(post_s=0.2)
    guard = SessionCloseGuard(inner, grace_s=5)
    async with anyio.create_task_group() as tg:
        answers: list = []
        tg.start_soon(lambda: _into(answers, call(guard, "POST")))
        await anyio.sleep(0.05)
        await call(guard, "DELETE")
    assert inner.events == ["answered", "closed"]
    assert answers[0][-1] == {"type": "http.response.body", "body": b"answer"}


async def test_past_the_grace_a_request_in_flight_is_ended_cleanly_then_the_session_closes():
    inner = Transport(post_s=30)
    guard = SessionCloseGuard(inner, grace_s=0.1)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            answers: list = []
            tg.start_soon(lambda: _into(answers, call(guard, "POST")))
            await anyio.sleep(0.05)
            await call(guard, "DELETE")
    assert inner.events == ["closed"]
    assert answers[0][-1] == {"type": "http.response.body", "body": b"", "more_body": False}  # the stream ends, no hang


async def test_a_request_arriving_while_its_session_closes_gets_a_clear_404_and_others_pass():
    inner = Transport(post_s=0.3)
    guard = SessionCloseGuard(inner, grace_s=5)
    async with anyio.create_task_group() as tg:
        first: list = []
        tg.start_soon(lambda: _into(first, call(guard, "POST")))
        await anyio.sleep(0.05)
        tg.start_soon(call, guard, "DELETE")
        await anyio.sleep(0.05)
        late = await call(guard, "POST")
        other = await call(guard, "POST", session="s2")
    assert late[0]["status"] == 404 and "closed while this request was in flight" in json.loads(late[1]["body"])["error"]["message"]
    assert other[-1]["body"] == b"answer"
    assert inner.events == ["answered", "answered", "closed"] or inner.events == ["answered", "closed", "answered"]


async def _into(box: list, awaitable) -> None:
    box.append(await awaitable)
