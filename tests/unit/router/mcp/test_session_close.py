"""SessionCloseGuard puts an MCP session's close after its requests in flight, and a
request after another in flight with the same id (both found by
tests/fuzz/test_mcp_session_race.py: a POST racing a DELETE hung forever or left a
traceback; a POST reusing an id in flight left the first waiting forever)."""

from __future__ import annotations

import json

import anyio

from router.mcp.session_close import SessionCloseGuard


def scope(method: str, session: str = "s1", path: str = "/mcp") -> dict:
    return {"type": "http", "method": method, "path": path, "headers": [(b"mcp-session-id", session.encode())]}


class Transport:
    """The inner app: a POST answers after `post_s` (streamed in two parts) and notes the
    body it read; a DELETE is noted."""

    def __init__(self, post_s: float) -> None:
        self.post_s = post_s
        self.events: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] == "DELETE":
            self.events.append("closed")
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.events.append(f"read {body.decode()}" if body else "read")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"event: ", "more_body": True})
        await anyio.sleep(self.post_s)
        self.events.append(f"answered {body.decode()}" if body else "answered")
        await send({"type": "http.response.body", "body": b"answer"})


async def call(
    app, method: str, session: str = "s1", body: bytes = b"", *, path: str = "/mcp", body_after_s: float = 0
) -> list[dict]:
    """One request through `app`; what it sent back. Its body arrives `body_after_s` late."""
    sent: list[dict] = []
    parts = [body[:5], body[5:]] if body else [b""]  # a body in two messages, as a server may hand it over

    async def send(message):
        sent.append(message)

    delays = [body_after_s]  # before the first message only

    async def receive():
        if delays:
            await anyio.sleep(delays.pop())
        return (
            {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}
            if parts
            else {"type": "http.disconnect"}
        )

    await app(scope(method, session, path), receive, send)
    return sent


def request(id_, method: str = "tools/call") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method}).encode()


async def posts_then_close(guard, *bodies: bytes, **options) -> list[list[dict]]:
    """POSTs of `bodies` started 0.05 s apart, then the session's DELETE; what each POST
    was sent back, in the order they finished."""
    answers: list = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for body in bodies:
                tg.start_soon(lambda body=body: _into(answers, call(guard, "POST", body=body, **options)))
                await anyio.sleep(0.05)
            await call(guard, "DELETE")
    return answers


async def test_a_close_waits_for_the_requests_in_flight():
    inner = Transport(post_s=0.2)
    answers = await posts_then_close(SessionCloseGuard(inner, grace_s=5), b"")
    assert inner.events == ["read", "answered", "closed"]
    assert answers[0][-1] == {"type": "http.response.body", "body": b"answer"}


async def test_past_the_grace_a_request_in_flight_is_ended_cleanly_then_the_session_closes():
    inner = Transport(post_s=30)
    answers = await posts_then_close(SessionCloseGuard(inner, grace_s=0.1), b"")
    assert inner.events == ["read", "closed"]
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
    assert (
        late[0]["status"] == 404
        and "closed while this request was in flight" in json.loads(late[1]["body"])["error"]["message"]
    )
    assert other[-1]["body"] == b"answer"
    assert [e for e in inner.events if e != "read"] in (
        ["answered", "answered", "closed"],
        ["answered", "closed", "answered"],
    )


async def test_a_request_reusing_an_id_in_flight_waits_for_its_answer_and_both_are_answered_whole():
    inner = Transport(post_s=0.2)
    guard = SessionCloseGuard(inner, grace_s=5)
    first, second = request(1), request(1)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            answers: list = []
            tg.start_soon(lambda: _into(answers, call(guard, "POST", body=first)))
            await anyio.sleep(0.05)
            tg.start_soon(lambda: _into(answers, call(guard, "POST", body=second)))
    body = first.decode()
    assert inner.events == [
        f"read {body}",
        f"answered {body}",
        f"read {body}",
        f"answered {body}",
    ]  # in turn, each body whole
    assert [sent[-1]["body"] for sent in answers] == [b"answer", b"answer"]


async def test_other_ids_notifications_and_other_sessions_do_not_wait():
    inner = Transport(post_s=0.3)
    guard = SessionCloseGuard(inner, grace_s=5)
    notification = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled"}).encode()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: call(guard, "POST", body=request(1)))
            await anyio.sleep(0.05)
            tg.start_soon(lambda: call(guard, "POST", body=request("1")))  # a string id is another id
            tg.start_soon(lambda: call(guard, "POST", body=request(2)))
            tg.start_soon(lambda: call(guard, "POST", "s2", body=request(1)))
            tg.start_soon(lambda: call(guard, "POST", body=notification))
            tg.start_soon(lambda: call(guard, "POST", body=b"{not json"))
            await anyio.sleep(0.15)
            assert sum(event.startswith("read") for event in inner.events) == 6  # all in flight together
            assert not any(event.startswith("answered") for event in inner.events)


async def test_a_close_cancels_a_request_waiting_for_its_id_with_a_clear_404():
    inner = Transport(post_s=30)
    answers = await posts_then_close(SessionCloseGuard(inner, grace_s=0.1), request(7), request(7))
    waited = next(sent for sent in answers if sent[0]["status"] == 404)
    assert "closed while this request was in flight" in json.loads(waited[1]["body"])["error"]["message"]
    assert inner.events == [f"read {request(7).decode()}", "closed"]


async def _into(box: list, awaitable) -> None:
    box.append(await awaitable)


async def test_a_close_landing_while_a_request_body_is_read_waits_for_that_request():
    inner = Transport(post_s=0.1)
    # The body comes 0.2 s late: the DELETE lands meanwhile.
    answers = await posts_then_close(SessionCloseGuard(inner, grace_s=5), request(3), body_after_s=0.2)
    body = request(3).decode()
    assert inner.events == [f"read {body}", f"answered {body}", "closed"]
    assert answers[0][-1] == {"type": "http.response.body", "body": b"answer"}


async def test_a_request_passing_through_the_guard_twice_is_guarded_once():
    """An episode's MCP URL sends the request through the app again as /mcp (its scope
    copied): the second pass must not wait for the first, its own request id."""
    inner = Transport(post_s=0.05)
    guard: SessionCloseGuard

    async def episode_front_door(scope, receive, send):
        if scope["path"] == "/mcp/e/one":
            await guard({**scope, "path": "/mcp"}, receive, send)
        else:
            await inner(scope, receive, send)

    guard = SessionCloseGuard(episode_front_door, grace_s=5)
    with anyio.fail_after(5):
        sent = await call(guard, "POST", body=request(4), path="/mcp/e/one")
    assert sent[-1] == {"type": "http.response.body", "body": b"answer"}


async def test_on_closed_is_told_once_the_transport_closed_the_session_and_not_for_a_refused_close():
    told: list[tuple[str, str]] = []

    async def on_closed(scope, session):
        told.append((scope["path"], session))

    async def refusing(scope, receive, send):  # the transport does not know the session
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    await call(SessionCloseGuard(Transport(post_s=0), on_closed=on_closed), "DELETE", session="known")
    await call(SessionCloseGuard(refusing, on_closed=on_closed), "DELETE", session="unknown")
    assert told == [("/mcp", "known")]


def test_the_agent_session_a_close_ends_is_the_one_named_after_the_mcp_session():
    from router.mcp.identity import TOKEN_SCOPE_KEY, agent_session_closed_with

    plain = scope("DELETE", "abc")
    assert agent_session_closed_with(plain, "abc") == "abc"
    assert agent_session_closed_with({**plain, "state": {TOKEN_SCOPE_KEY: "alice"}}, "abc") == "alice/abc"
    named = {**plain, "headers": [*plain["headers"], (b"X-Simroute-Session", b"agent-42")]}
    assert agent_session_closed_with(named, "abc") is None  # a named session spans connections
    assert (
        agent_session_closed_with({**plain, "path": "/mcp/e/ep-1"}, "abc") is None
    )  # an episode ends with its episode
