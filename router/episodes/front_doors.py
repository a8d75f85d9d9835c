"""Every front door of episodes on `simroute serve`, beside `/mcp` and the dashboard: the
REST API and its OpenAPI document, the OpenEnv protocol, and MCP per episode. They
share the endpoint's guards (Host/Origin, tokens) and one `EpisodeHost`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute

from backends.mcp.fastmcp_private import add_http_routes
from records.store.protocol import StoreError
from router.episodes.host import EpisodeError, EpisodeHost
from router.episodes.mcp_front_door import EpisodeMcpEndpoint
from router.episodes.openenv_front_door import openenv_router, package_version
from router.episodes.options import EpisodeOptionsError
from router.episodes.rest import episodes_router

if TYPE_CHECKING:
    from router.mcp.in_process import SimrouteServer
    from router.runtime.parts import EpisodeParts


def episodes_app(host: EpisodeHost) -> FastAPI:
    app = FastAPI(
        title="simroute episodes",
        summary="Episodes for RL loops: reset, step, state, verify, close; every step routed and recorded.",
        version=package_version() or "unknown",
        docs_url=None,
        redoc_url=None,
    )
    app.include_router(episodes_router(host))
    app.include_router(openenv_router(host))

    @app.exception_handler(EpisodeError)
    async def episode_error(request: Request, exc: EpisodeError) -> JSONResponse:
        return JSONResponse({"error": str(exc), "status": exc.status}, status_code=exc.status)

    @app.exception_handler(EpisodeOptionsError)
    async def options_error(request: Request, exc: EpisodeOptionsError) -> JSONResponse:
        return JSONResponse({"error": str(exc), "status": 422}, status_code=422)

    # Redis away where a request cannot go on without it (sharing a new episode, waiting
    # on a retried step's first answer): a 503 to retry, not a bare 500.
    @app.exception_handler(StoreError)
    async def store_away(request: Request, exc: StoreError) -> JSONResponse:
        message = f"simroute: the shared store is unreachable, retry shortly: {exc}"
        return JSONResponse({"error": message, "status": 503}, status_code=503, headers={"Retry-After": "1"})

    return app


def mount_episodes(server: SimrouteServer, parts: EpisodeParts) -> EpisodeHost:
    """Serve the episodes' front doors on `server`'s HTTP app; the host they share."""
    host = EpisodeHost(parts, server)
    app = episodes_app(host)
    routes: list[Any] = [
        Route("/episodes", endpoint=app),
        Route("/episodes/{rest:path}", endpoint=app),
        Route("/verifiers/reload", endpoint=app, methods=["POST"]),
        Route("/openapi.json", endpoint=app),
        Route("/health", endpoint=app),
        Route("/metadata", endpoint=app),
        Route("/schema", endpoint=app),
        WebSocketRoute("/ws", endpoint=app),
        Route("/mcp/e/{episode_id}", endpoint=EpisodeMcpEndpoint(host), methods=["GET", "POST", "DELETE"]),
    ]
    add_http_routes(server, routes)
    return host
