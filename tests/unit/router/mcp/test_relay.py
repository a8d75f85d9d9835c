"""The relay of upstream notifications to the agent (router/mcp/relay.py), on fake sessions."""

from types import SimpleNamespace

import anyio
import mcp_types

from router.mcp.relay import FrontRelay


class Front:
    """An agent's per-request ServerSession: what it was asked to send, and on which request."""

    def __init__(self, sent: list) -> None:
        self.sent = sent
        self._request_outbound = SimpleNamespace(cancel_requested=anyio.Event())

    async def send_notification(self, notification, related_request_id=None):
        self.sent.append((notification.model_dump(mode="json", by_alias=True, exclude_none=True), related_request_id))


def request(front: Front, request_id: str, meta: dict | None = None):
    return SimpleNamespace(session=front, request_id=request_id, request_context=SimpleNamespace(meta=meta))


def progress(token) -> mcp_types.ProgressNotification:
    return mcp_types.ProgressNotification(
        params=mcp_types.ProgressNotificationParams(progress_token=token, progress=1, total=2)
    )


def log(text: str) -> mcp_types.LoggingMessageNotification:
    return mcp_types.LoggingMessageNotification(
        params=mcp_types.LoggingMessageNotificationParams(level="info", data=text)
    )


async def test_progress_goes_to_the_request_that_asked_for_it_and_nowhere_else():
    sent: list = []
    relay, front = FrontRelay(prefixed=False), Front(sent)
    with relay.forwarding("s", "box", request(front, "7", {"progressToken": "p-1"})):
        await relay.upstream_notification("s", "box", progress("p-1"))
        await relay.upstream_notification("s", "box", progress("someone else's"))
    await relay.upstream_notification("s", "box", progress("p-1"))  # the request is over
    assert sent == [
        ({"method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 1.0, "total": 2.0}}, "7")
    ]


async def test_a_log_message_goes_with_the_latest_request_forwarded_to_its_server_else_on_the_connection():
    sent: list = []
    relay, front = FrontRelay(prefixed=False), Front(sent)
    with relay.forwarding("s", "box", request(front, "1")), relay.forwarding("s", "box", request(front, "2")):
        await relay.upstream_notification("s", "box", log("during"))
    await relay.upstream_notification("s", "box", log("after"))
    assert [(note["params"]["data"], request_id) for note, request_id in sent] == [("during", "2"), ("after", None)]


async def test_a_resource_update_names_the_resource_as_the_agent_sees_it():
    sent: list = []
    relay = FrontRelay(prefixed=True)
    relay.seen("s", Front(sent))
    update = mcp_types.ResourceUpdatedNotification(
        params=mcp_types.ResourceUpdatedNotificationParams(uri="note://alpha")
    )
    await relay.upstream_notification("s", "a", update)
    await relay.upstream_notification("nobody", "a", update)  # no connection: dropped
    assert sent == [({"method": "notifications/resources/updated", "params": {"uri": "note://a/alpha"}}, None)]


async def test_the_agents_cancellation_reason_is_known_only_for_its_cancelled_request():
    relay, front = FrontRelay(prefixed=False, cancel_wait_s=0.05), Front([])
    with relay.forwarding("s", "box", request(front, "9")):
        assert await relay.cancel_reason() == (False, None)  # not cancelled by the agent (a deadline)
        front._request_outbound.cancel_requested.set()
        relay.cancelled("s", 9, "stop")  # the wire's id is a number, fastmcp's text
        assert await relay.cancel_reason() == (True, "stop")
        relay.cancelled("s", 9, None)
        assert await relay.cancel_reason() == (True, None)
        assert await relay.cancel_reason() == (False, None)  # read once; waited for briefly
    assert await relay.cancel_reason() == (False, None)
