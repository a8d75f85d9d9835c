"""Every MCP feature passes through simroute (route real): the same client call made
directly to the server (tests/servers/everything.py, over stdio) and through simroute
gives the same JSON, minus `_meta.simroute`.

Every feature on one configuration (`simroute mcp --http`, one stdio upstream); list,
call, subscribe + update, completion and `$defs` on the others too: simroute over
stdio, an upstream over streamable HTTP, and two upstreams (prefixed `a_`, `b_`).
Servers start once per module; each configuration is one agent session."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2 as httpx
import mcp_types
import pytest
from fastmcp import Client
from kit.launch import stdio_client, write_config
from kit.mcp_wire import WireSession, messages_of, rpc
from kit.transparency import connected, direct_client, everything_server, remote_everything, simroute_http, wire

# The handshake-era methods compared here (subscribe, setLevel) are deprecated in the 2026 era.
pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CONFIGS = ["http", "stdio", "http-upstream", "two-upstreams"]
EVERY_CONFIG = pytest.mark.parametrize("routed", CONFIGS, indirect=True)
FULL = pytest.mark.parametrize("routed", ["http"], indirect=True)


@pytest.fixture(scope="module")
async def direct():
    async with connected(direct_client) as side:
        yield side


@pytest.fixture(scope="module")
async def routed(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    log = folder / "simroute.log"
    if request.param == "stdio":
        config = write_config(folder, mcpServers={"everything": everything_server()})
        async with connected(lambda **kwargs: stdio_client(config, **kwargs)) as side:
            side.config = request.param
            yield side
        return
    if request.param == "http-upstream":
        with remote_everything(folder / "everything.log") as remote:
            config = write_config(folder, mcpServers={"everything": remote})
            with simroute_http(config, log) as url:
                async with connected(lambda **kwargs: Client(url, **kwargs)) as side:
                    side.config, side.url = request.param, url
                    yield side
        return
    servers = (
        {"a": everything_server(), "b": everything_server()}
        if request.param == "two-upstreams"
        else {"everything": everything_server()}
    )
    with simroute_http(write_config(folder, mcpServers=servers), log) as url:
        async with connected(lambda **kwargs: Client(url, **kwargs)) as side:
            side.config, side.url = request.param, url
            yield side


def prefixed(routed) -> bool:
    return routed.config == "two-upstreams"


def name(routed, upstream_name: str) -> str:
    """A tool or prompt of server `a` as the agent sees it."""
    return f"a_{upstream_name}" if prefixed(routed) else upstream_name


def uri(routed, upstream_uri: str) -> str:
    """A resource URI (or template) of server `a` as the agent sees it."""
    scheme, _, path = upstream_uri.partition("://")
    return f"{scheme}://a/{path}" if prefixed(routed) else upstream_uri


KEYS = {"tools": "name", "prompts": "name", "resources": "uri", "resourceTemplates": "uriTemplate"}


# --- every configuration ------------------------------------------------------------------


@EVERY_CONFIG
@pytest.mark.parametrize("kind", list(KEYS))
async def test_listings_are_the_upstreams_pages(routed, direct, kind):
    expected, got = await direct.pages(kind), await routed.pages(kind)
    if not prefixed(routed):  # the same pages: items, nextCursor (the upstream's own) and all
        assert got == expected
        return
    # Two upstreams: every page holds the next page of each (an opaque cursor), names prefixed.
    assert len(got) == len(expected) and all("nextCursor" in page for page in got[:-1])
    key = KEYS[kind]
    items = {item[key]: item for page in got for item in page[kind]}
    for server in ("a", "b"):
        for item in (item for page in expected for item in page[kind]):
            named = f"{server}_{item[key]}" if key == "name" else item[key].replace("://", f"://{server}/", 1)
            assert items.pop(named) == {**item, key: named}
    assert items == {}


@EVERY_CONFIG
async def test_a_schema_with_defs_arrives_byte_for_byte(routed, direct):
    def path_length(pages, tool):
        return next(item for page in pages for item in page["tools"] if item["name"] == tool)

    expected, got = (
        path_length(await direct.pages("tools"), "path_length"),
        path_length(await routed.pages("tools"), name(routed, "path_length")),
    )
    assert "$defs" in got["inputSchema"] and "$ref" in json.dumps(got["inputSchema"]) and "$defs" in got["outputSchema"]
    for part in ("inputSchema", "outputSchema", "annotations", "_meta", "title"):
        assert json.dumps(got[part]) == json.dumps(expected[part])


@EVERY_CONFIG
async def test_calls_answer_as_the_upstream(routed, direct):
    path = {"points": [{"x": 0, "y": 0}, {"x": 3, "y": 4}], "label": "hypotenuse"}
    for tool, arguments in [("echo", {"text": "hi"}), ("path_length", path)]:
        expected = wire(await direct.session.call_tool(tool, arguments))
        got = await routed.session.call_tool(name(routed, tool), arguments)
        assert got.meta["simroute"]["provenance"] == "real"
        assert wire(got) == expected


@EVERY_CONFIG
async def test_completions_are_the_upstreams(routed, direct):
    asks = [
        (mcp_types.PromptReference(type="ref/prompt", name="review"), {"name": "language", "value": "p"}),
        (
            mcp_types.ResourceTemplateReference(type="ref/resource", uri="color://{shade}"),
            {"name": "shade", "value": "r"},
        ),
    ]
    for ref, argument in asks:
        expected = wire(await direct.session.complete(ref, argument))
        routed_ref = ref.model_copy(
            update={"name": name(routed, ref.name)} if ref.type == "ref/prompt" else {"uri": uri(routed, ref.uri)}
        )
        assert wire(await routed.session.complete(routed_ref, argument)) == expected
        assert expected["completion"]["values"]


@EVERY_CONFIG
async def test_a_subscription_delivers_the_upstreams_updates(routed, direct):
    updated = "notifications/resources/updated"
    for side, resource, touch in [
        (direct, "note://alpha", "touch"),
        (routed, uri(routed, "note://alpha"), name(routed, "touch")),
    ]:
        assert wire(await side.session.subscribe_resource(resource)) == {}
        await side.session.call_tool(touch, {"uri": "note://alpha"})
        assert await side.settle(updated, 1) == [{"uri": resource}]
        await side.session.unsubscribe_resource(resource)
        await side.session.call_tool(touch, {"uri": "note://alpha"})
        await asyncio.sleep(0.3)
        assert len(side.seen(updated)) == 1  # unsubscribed: no more
        side.notes.clear()


# --- every feature, on one configuration --------------------------------------------------


@FULL
async def test_initialize_says_what_the_upstream_can_do_and_who_answers(routed, direct):
    expected, got = wire(direct.client.initialize_result), wire(routed.client.initialize_result)
    assert got["capabilities"] == expected["capabilities"]  # completions, subscribe, listChanged, logging
    assert got["serverInfo"] == {"name": "simroute", "version": importlib.metadata.version("simroute")}


@FULL
async def test_log_messages_arrive_as_sent_at_the_level_asked(routed, direct):
    for side in (direct, routed):
        await side.session.set_logging_level("warning")  # reaches the upstream: it logs from warning on
        result = await side.session.call_tool("log_levels", {})
        assert result.content[0].text == "logged from warning"
        await side.settle("notifications/message", 5)
        await side.session.set_logging_level("debug")
    assert routed.seen("notifications/message") == direct.seen("notifications/message")
    assert routed.seen("notifications/message")[1] == {
        "level": "error",
        "logger": "everything",
        "data": {"level": "error", "detail": [1, 2]},
    }
    direct.notes.clear()
    routed.notes.clear()


@FULL
async def test_a_level_set_before_the_upstream_opened_is_sent_when_it_opens(routed):
    """A second agent session: its upstream opens on its first call, after its setLevel."""
    async with connected(lambda **kwargs: Client(routed.url, **kwargs)) as late:
        await late.session.set_logging_level("critical")
        result = await late.session.call_tool("log_levels", {})
        assert result.content[0].text == "logged from critical"
        assert [note["level"] for note in await late.settle("notifications/message", 3)] == [
            "critical",
            "alert",
            "emergency",
        ]


@FULL
async def test_progress_only_when_the_client_asked_for_it(routed, direct):
    reported: dict[str, list] = {"direct": [], "routed": []}
    for label, side in (("direct", direct), ("routed", routed)):
        await side.session.call_tool("count", {"n": 2})  # no progress token: no progress
        await asyncio.sleep(0.3)
        assert side.seen("notifications/progress") == []

        async def on_progress(progress, total, message, into=reported[label]):
            into.append((progress, total, message))

        await side.session.call_tool("count", {"n": 3}, progress_callback=on_progress)
    assert (
        reported["routed"] == reported["direct"] == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    )


@FULL
async def test_list_changes_and_meta_pass_both_ways(routed, direct):
    changed = [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ]
    for side in (direct, routed):
        await side.session.call_tool("change_lists", {})
        for method in changed:
            assert await side.settle(method, 1) == [{}], method
        side.notes.clear()
    meta = {"example.com/trace": "t-1"}
    expected = wire(await direct.session.call_tool("request_meta", {}, meta=meta))
    assert (
        wire(await routed.session.call_tool("request_meta", {}, meta=meta))
        == expected
        == {**expected, "structuredContent": {"meta": meta}}
    )


@FULL
async def test_reads_and_prompts_answer_as_the_upstream(routed, direct):
    for side in (direct, routed):
        side.answers = [
            wire(await side.session.read_resource("note://beta")),
            wire(await side.session.get_prompt("review", {"language": "rust"})),
        ]
    assert routed.answers == direct.answers


@FULL
def test_a_cancellation_reaches_the_upstream_with_its_reason(routed):
    """The agent's own reason (or none), not one of simroute's."""

    def call(session, tool, request_id):
        return messages_of(session.post(rpc("tools/call", {"name": tool, "arguments": {}}, request_id)))[-1]["result"][
            "content"
        ][0]["text"]

    with httpx.Client(timeout=30, trust_env=False) as http:
        session = WireSession(http, routed.url)
        assert call(session, "last_cancel", 1) == "none"  # its upstream has started
        pool = ThreadPoolExecutor(2)  # a cancelled request is never answered: not waited for
        try:
            for request_id, reason in ((41, "the user pressed stop"), (42, None)):
                pool.submit(session.post, rpc("tools/call", {"name": "wait", "arguments": {}}, request_id))
                time.sleep(0.5)  # the call has reached the upstream
                session.post(
                    rpc(
                        "notifications/cancelled",
                        {"requestId": request_id} | ({"reason": reason} if reason else {}),
                        None,
                    )
                )
                deadline = time.monotonic() + 10
                while (seen := call(session, "last_cancel", request_id + 100)) != (
                    reason or "(no reason)"
                ) and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert seen == (reason or "(no reason)")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


async def test_off_the_real_route_completions_are_empty_and_subscriptions_send_nothing(tmp_path):
    config = write_config(tmp_path, mcpServers={"everything": everything_server()}, mode="replay")
    async with connected(lambda **kwargs: stdio_client(config, **kwargs)) as replayed:
        ref = mcp_types.PromptReference(type="ref/prompt", name="review")
        assert (
            wire(await replayed.session.complete(ref, {"name": "language", "value": "p"}))["completion"]["values"] == []
        )
        assert wire(await replayed.session.subscribe_resource("note://alpha")) == {}
        assert replayed.seen("notifications/resources/updated") == []
