"""Puts the dashboard and /metrics together: on a runtime (`simroute serve`, which
counts the calls it routes) or alone on a store (`simroute dashboard`, which reports
the store's totals)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from policies.learned.persistence import card_path
from router.dashboard.guard_metrics import GuardMetrics
from router.dashboard.metrics import CallMetrics, RuntimeGauges, StoreTotals
from router.dashboard.outlook import RouterOutlook
from router.dashboard.routes import Dashboard
from router.runtime.learned_service import build_learned_service

if TYPE_CHECKING:
    from router.config import Config
    from router.runtime.runtime import Runtime


def _card_path(config: Config):
    return card_path(config.learned_model_path)


def _outlook(config: Config, store: Any, service: Any = None) -> RouterOutlook:
    """The router's view of each tool: the runtime's learned service when it has one,
    else one of the dashboard's own, made once a model card exists."""
    return RouterOutlook(
        _card_path(config),
        store,
        make_service=lambda: build_learned_service(config, store),
        service=service,
        refresh_s=config.learned.refresh_s,
    )


def runtime_dashboard(runtime: Runtime) -> Dashboard:
    """The dashboard of a serving runtime: its record writes are counted (per token
    namespace when tokens are on)."""
    metrics = CallMetrics(namespaced=runtime.tokens.enabled)
    runtime.records.observers.append(metrics.observe)
    runtime.simulator.observers.append(metrics.completion_observer(runtime.config.world_model.engine))

    def live() -> dict[str, float]:
        shadow = runtime.shadow
        try:
            spool_bytes = os.stat(runtime.records.spool.path).st_size
        except FileNotFoundError:
            spool_bytes = 0
        return {
            "queue_depth": getattr(shadow, "in_flight", 0),  # the Redis queue's depth lives in Redis
            "skipped": getattr(shadow, "skipped", 0),
            "spool_bytes": spool_bytes,
            "spooled": runtime.records.spooled,
            "pool_ready": runtime.shell.ready if runtime.shell is not None else 0,
            "sandboxes": runtime.shell.in_use if runtime.shell is not None else 0,
            "forks": runtime.shell_forks.open if runtime.shell_forks is not None else 0,
            "forks_made": runtime.shell_forks.made if runtime.shell_forks is not None else 0,
            "forks_refused": runtime.shell_forks.refusals if runtime.shell_forks is not None else 0,
            **_mcp_forks(runtime.forks.mcp),
            **_noise_learning(runtime.noise_learner),
        }

    metrics.add_collector(RuntimeGauges(live))
    if runtime.guard is not None:
        metrics.add_collector(GuardMetrics(runtime.guard))
    totals = StoreTotals(runtime.store)
    metrics.add_collector(totals)
    return Dashboard(
        runtime.store,
        runtime.tokens,
        metrics,
        totals,
        _card_path(runtime.config),
        _outlook(runtime.config, runtime.store, runtime.learned),
        pins_policy=runtime.config.pins.policy,
        adopted=runtime.adoption.adopted,
        **_tenancy(runtime.config, runtime.tokens),
    )


def _tenancy(config: Config, tokens: Any) -> dict[str, Any]:
    """Which namespaces every token's view shows, and which tokens see them all: those
    of `service.operator_tokens`, and a lone token (no other tenant to keep apart; it
    also sees the records made without a token, e.g. over stdio)."""
    service = config.service
    operators = frozenset(service.operator_tokens) | (tokens.names if len(tokens.names) == 1 else frozenset())
    return {"shared_namespaces": tuple(service.shared_namespaces), "operator_tokens": operators}


def _noise_learning(learner: Any) -> dict[str, float]:
    if learner is None:
        return {}
    return {
        "noise_learned": learner.learned,
        "noise_unsettled": learner.unsettled,
        "noise_dropped": learner.dropped,
        "probes_answered": learner.probed,
        "probes_skipped": learner.probes_skipped,
        "probes_failed": learner.probes_failed,
    }


def mount(server: Any, dashboard: Dashboard) -> None:
    """Serve the dashboard's routes beside the MCP endpoint (fastmcp custom routes)."""
    for route in dashboard.routes():
        server.custom_route(route.path, methods=sorted(route.methods or ("GET",)), include_in_schema=False)(
            route.endpoint
        )


def standalone_app(config: Config, tokens: Any):
    """A Starlette app serving the dashboard and /metrics on the config's store
    (read-only), opened and closed with the app."""
    from starlette.applications import Starlette

    store = config.open_store(read_only=True)
    metrics = CallMetrics(namespaced=tokens.enabled)
    totals = StoreTotals(store)
    metrics.add_collector(totals)
    dashboard = Dashboard(
        store,
        tokens,
        metrics,
        totals,
        _card_path(config),
        _outlook(config, store),
        **_tenancy(config, tokens),
        pins_policy=config.pins.policy,
        adopted=config.store_location.shared_state(store).adopted_world_model(),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.open()
        try:
            yield
        finally:
            await store.aclose()

    # Host and Origin checked as on the MCP endpoint: a DNS-rebinding page gets 421/403.
    from fastmcp.server.http import HostOriginGuardMiddleware
    from starlette.middleware import Middleware

    guard = Middleware(
        HostOriginGuardMiddleware,
        mode="strict",
        allowed_hosts=list(config.service.allowed_hosts) or None,
        allowed_origins=list(config.service.allowed_origins) or None,
    )
    return Starlette(routes=dashboard.routes(), lifespan=lifespan, middleware=[guard])


def _mcp_forks(forks) -> dict[str, int]:
    """The MCP servers' forks (backends/mcp/forks.py): open now, made, refused."""
    if forks is None:
        return {"mcp_forks": 0, "mcp_forks_made": 0, "mcp_forks_refused": 0}
    return {"mcp_forks": forks.open, "mcp_forks_made": forks.made, "mcp_forks_refused": forks.refusals}
