"""Every private name of fastmcp 4.1.2 and mcp 2.3.0 (pinned in pyproject.toml) that
simroute's MCP proxy reaches, in one place.

Neither library offers a public way to do these; each is a small wrapper, and
tests/unit/backends/mcp/test_fastmcp_private.py pins the source of every name used
here, so a new fastmcp or mcp that changes one fails there before the proxy silently
stops doing its job.

- `request_meta`: the agent's request `_meta` that may cross to the upstream (fastmcp's
  proxy rule: hop-safe keys such as the client's `progressToken`, trace context).
- `stash_request_context`: before an upstream request, where the upstream's requests to
  the client (sampling, elicitation, roots) are relayed (fastmcp's proxy client).
- `monitored`: an upstream request that fails when its session's transport fails,
  instead of waiting forever (fastmcp's client).
- `low_level`: the SDK server under a FastMCP server (to register request handlers, and
  to serve stdio on simroute's own loop: router/mcp/stdio.py).
- `lifespan`: a FastMCP server's own lifespan (its providers started and stopped), as
  fastmcp's transports enter it, for the stdio runner that replaces fastmcp's.
- `add_http_routes`: routes served beside `/mcp` on the server's HTTP app; fastmcp's
  public `custom_route` takes one plain route at a time, the episodes' front doors mount
  several and a WebSocket (router/episodes/front_doors.py).
- `forward_cancel_reasons`: an abandoned upstream request is cancelled with the reason
  the agent gave, not mcp's own "caller cancelled"; `cancel_requested`: whether the
  agent cancelled its request (not a deadline).
- `CacheEntry`: fastmcp's proxy provider's listing cache entry (the provider and the
  upstream tool subclass fastmcp's proxy classes and use their private attributes:
  their sources are pinned by the same test).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastmcp import FastMCP
from fastmcp.client.client import Client
from fastmcp.server.context import Context
from fastmcp.server.providers.proxy import (
    _CacheEntry,
    _forwardable_request_meta,
    _session_request_meta,
    _stash_proxy_request_context,
)
from mcp.client.session import ClientSession
from mcp.server.lowlevel.server import Server
from starlette.routing import BaseRoute

CacheEntry = _CacheEntry

# The reason mcp's JSON-RPC dispatcher gives when a request's caller is cancelled
# (JSONRPCDispatcher.send_raw_request), whatever the caller's own reason was.
CALLER_CANCELLED = "caller cancelled"

# (known, reason): whether the agent's own cancellation of the request being forwarded
# is known, and its reason (None: the agent gave none).
CancelReason = Callable[[], Awaitable[tuple[bool, str | None]]]


def request_meta(ctx: Context | None) -> Any:
    """The `_meta` of the agent's current request that may go upstream, with trace context."""
    return _session_request_meta(_forwardable_request_meta(ctx))


def stash_request_context(client: Client, ctx: Context) -> None:
    _stash_proxy_request_context(client, ctx)


async def monitored[T](client: Client, request: Coroutine[Any, Any, T]) -> T:
    return await client._await_with_session_monitoring(request)


def low_level(server: FastMCP) -> Server:
    return server._mcp_server


def lifespan(server: FastMCP) -> AbstractAsyncContextManager[None]:
    return server._lifespan_manager()


def add_http_routes(server: FastMCP, routes: Iterable[BaseRoute]) -> None:
    server._additional_http_routes.extend(routes)


def cancel_requested(front: Any) -> bool:
    """Whether the agent sent `notifications/cancelled` for the request of `front` (the
    SDK's per-request ServerSession)."""
    outbound = getattr(front, "_request_outbound", None)
    return outbound is not None and outbound.cancel_requested.is_set()


def forward_cancel_reasons(session: ClientSession, reason_of: CancelReason) -> None:
    """Make `session` cancel an abandoned request with the agent's reason.

    The dispatcher sends its courtesy `notifications/cancelled` through its own `notify`
    (JSONRPCDispatcher._cancel_outbound), in the task of the abandoned request, whose
    context says which agent request it was forwarding: `reason_of` is asked there."""
    dispatcher = session._dispatcher
    notify = dispatcher.notify
    if getattr(notify, "simroute", False):
        return

    async def notify_with_reason(method: str, params: Mapping[str, Any] | None, *args: Any, **kwargs: Any) -> None:
        if method == "notifications/cancelled" and params is not None and params.get("reason") == CALLER_CANCELLED:
            known, reason = await reason_of()
            if known:
                params = {key: value for key, value in params.items() if key != "reason"} | (
                    {"reason": reason} if reason is not None else {}
                )
        await notify(method, params, *args, **kwargs)

    notify_with_reason.simroute = True  # type: ignore[attr-defined]
    dispatcher.notify = notify_with_reason  # type: ignore[method-assign]
