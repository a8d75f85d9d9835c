"""The private fastmcp and mcp names simroute reaches (backends/mcp/fastmcp_private.py),
against the pinned fastmcp 4.1.2 and mcp 2.3.0.

The installed versions are the pinned ones, and the source of every definition used is
pinned by a hash: a release that changes one fails here, before the proxy silently stops
doing its job. Each wrapper also runs on a tiny case, and no product module outside
fastmcp_private.py reaches one of these private names."""

import ast
import hashlib
import importlib
import importlib.metadata
import inspect
import re
import tomllib
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import anyio
import httpx2
import pytest
from fastmcp import FastMCP
from mcp.server.lowlevel.server import Server
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from backends.mcp import fastmcp_private

PINNED = {  # (module, qualified name) -> sha256 of its source, first 16 hex digits
    ("fastmcp.server.providers.proxy", "_CacheEntry"): "195fbb11307105b0",
    ("fastmcp.server.providers.proxy", "_forwardable_request_meta"): "2d5ee697500b7528",
    ("fastmcp.server.providers.proxy", "_session_request_meta"): "c34c9b34a1bb9cae",
    ("fastmcp.server.providers.proxy", "_stash_proxy_request_context"): "44c900c77379d1fb",
    ("fastmcp.client.client", "Client._await_with_session_monitoring"): "03c61de7cecc941a",
    # The courtesy cancel of an abandoned request: "caller cancelled", sent through self.notify.
    ("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher.send_raw_request"): "2c4e416f555e807a",
    ("mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher._cancel_outbound"): "eb2373c1e93501ee",
    ("mcp.server.session", "ServerSession.__init__"): "8faf2240a36dac7f",  # _request_outbound
    ("mcp.client.session", "ClientSession.__init__"): "ad4b50702b3c63b2",  # _dispatcher
    # `_mcp_server` and `_additional_http_routes` (a list of starlette routes).
    ("fastmcp.server.server", "FastMCP.__init__"): "b285ec014c8da686",
    # The routes of that list are served beside /mcp; the lifespan is ref-counted and entered by each transport.
    ("fastmcp.server.mixins.transport", "TransportMixin._get_additional_http_routes"): "368d417fdd693856",
    ("fastmcp.server.mixins.lifespan", "LifespanMixin._lifespan_manager"): "33cc952bb330dbb2",
    # Subclassed (router/mcp/upstream_tool.py, router/mcp/provider.py): `_backend_name`,
    # `_get_client`, and the listing caches (`_tools_cache`, `_templates_cache`, `_cache_ttl`).
    ("fastmcp.server.providers.proxy", "ProxyTool"): "c122b69d7dc270a7",
    ("fastmcp.server.providers.proxy", "ProxyProvider.__init__"): "c9b100555dfc1008",
}


ROOT = Path(__file__).resolve().parents[4]
PATCHES = ROOT / "backends" / "mcp" / "fastmcp_private.py"
# Every private fastmcp or mcp name simroute reaches (PINNED's, and the attributes the
# pinned code holds): only fastmcp_private.py may name them.
PRIVATE = re.compile(
    r"\b_(additional_http_routes|get_additional_http_routes|mcp_server|lifespan_manager|CacheEntry"
    r"|forwardable_request_meta|session_request_meta|stash_proxy_request_context|await_with_session_monitoring"
    r"|request_outbound|dispatcher|cancel_outbound)\b"
)


def source_hash(module: str, qualname: str) -> str:
    text = inspect.getsource(importlib.import_module(module))
    body, node = ast.parse(text).body, None
    for name in qualname.split("."):
        node = next(
            n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
        )
        body = node.body
    return hashlib.sha256(ast.get_source_segment(text, node).encode()).hexdigest()[:16]


@pytest.mark.parametrize("package", ["fastmcp", "mcp"])
def test_the_installed_version_is_the_pinned_one(package):
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pinned = next(d.split("==")[1] for d in dependencies if d.startswith(f"{package}=="))
    installed = importlib.metadata.version(package)
    assert installed == pinned, f"{package} {installed} is not the pinned {pinned}: review fastmcp_private.py"


def test_no_product_module_but_the_patches_reaches_a_private_name():
    reaches = [
        f"{path.relative_to(ROOT)}:{number}"
        for top in ("calls", "router", "backends", "shadow", "records", "policies", "simroute")
        for path in sorted((ROOT / top).rglob("*.py"))
        if path != PATCHES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert reaches == [], "reach fastmcp's and mcp's private names through backends/mcp/fastmcp_private.py"


def test_the_private_names_have_the_expected_shape():
    server = FastMCP("x")
    assert isinstance(server._mcp_server, Server)
    assert server._additional_http_routes == []
    assert inspect.isasyncgenfunction(inspect.unwrap(FastMCP._lifespan_manager))
    assert fastmcp_private.CacheEntry.__slots__ == ("items", "timestamp")
    assert list(inspect.signature(fastmcp_private.CacheEntry).parameters) == ["items", "timestamp"]


@pytest.mark.parametrize(("module", "qualname"), list(PINNED))
def test_the_private_code_reached_is_the_pinned_one(module, qualname):
    assert source_hash(module, qualname) == PINNED[module, qualname], (
        f"{module}.{qualname} changed: review fastmcp_private.py"
    )


def test_the_dispatcher_cancels_an_abandoned_request_with_the_pinned_reason():
    from mcp.shared import jsonrpc_dispatcher

    source = inspect.getsource(jsonrpc_dispatcher.JSONRPCDispatcher.send_raw_request)
    assert f'"{fastmcp_private.CALLER_CANCELLED}"' in source
    assert "self.notify(" in inspect.getsource(jsonrpc_dispatcher.JSONRPCDispatcher._cancel_outbound)


def _session_sending_to(sent: list):
    async def notify(method, params, opts=None, **kwargs):
        sent.append((method, params))

    return SimpleNamespace(_dispatcher=SimpleNamespace(notify=notify))


@pytest.mark.parametrize(
    ("known", "expected"),
    [
        ((True, "the user pressed stop"), {"requestId": 7, "reason": "the user pressed stop"}),
        ((True, None), {"requestId": 7}),
        ((False, None), None),
    ],
)
async def test_an_abandoned_request_is_cancelled_with_the_agents_reason(known, expected):
    sent: list = []
    session = _session_sending_to(sent)

    async def reason_of():
        return known

    fastmcp_private.forward_cancel_reasons(session, reason_of)
    fastmcp_private.forward_cancel_reasons(session, reason_of)  # idempotent
    courtesy = {"requestId": 7, "reason": fastmcp_private.CALLER_CANCELLED}
    await session._dispatcher.notify("notifications/cancelled", courtesy)
    await session._dispatcher.notify("notifications/progress", {"progressToken": 1, "progress": 1})
    assert sent == [
        ("notifications/cancelled", expected or courtesy),
        ("notifications/progress", {"progressToken": 1, "progress": 1}),
    ]


def test_cancel_requested_reads_the_requests_dispatch_context():
    event = anyio.Event()
    front = SimpleNamespace(_request_outbound=SimpleNamespace(cancel_requested=event))
    assert not fastmcp_private.cancel_requested(front)
    event.set()
    assert fastmcp_private.cancel_requested(front)
    assert not fastmcp_private.cancel_requested(object())


def test_low_level_is_the_sdk_server_under_fastmcp():
    assert isinstance(fastmcp_private.low_level(FastMCP("x")), Server)
    assert fastmcp_private.request_meta(None) is None


async def test_lifespan_runs_the_servers_own_lifespan_once():
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server):
        events.append("up")
        yield {}
        events.append("down")

    server = FastMCP("x", lifespan=lifespan)
    # Entered twice, as two transports would: ref-counted, the server's lifespan runs once.
    async with fastmcp_private.lifespan(server), fastmcp_private.lifespan(server):
        assert events == ["up"]
    assert events == ["up", "down"]


async def test_added_http_routes_are_served_beside_mcp():
    server = FastMCP("x")

    async def hello(request):
        return PlainTextResponse("hello")

    fastmcp_private.add_http_routes(server, [Route("/hello", endpoint=hello)])
    app = server.http_app()
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as client:
        answer = await client.get("/hello")
    assert (answer.status_code, answer.text) == (200, "hello")
