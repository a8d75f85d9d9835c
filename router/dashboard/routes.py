"""The dashboard's HTTP routes: the page, its static files, the JSON API, /metrics.

Filters come from the query string (the page keeps them in its address, so a
view can be shared); every figure comes from a store query (records/store/protocol.py
`DashboardQueries`), paged or grouped in the store.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from records.store.namespaces import in_namespaces
from records.store.protocol import RecordFilter, StoreError
from router.auth import Tokens
from router.dashboard.access import refusal, token_name
from router.dashboard.metrics import CONTENT_TYPE, CallMetrics, StoreTotals
from shadow.compare.line_diff import record_diffs

CHART_JS = Path("/usr/share/javascript/chart.js/chart.min.js")  # Debian's libjs-chart.js (MIT)
DEFAULT_RANGE_S = 24 * 3600
MAX_PAGE = 500
_STATIC = {"app.js": "text/javascript", "style.css": "text/css"}


class BadQuery(ValueError):
    """A query string the API cannot read (answered with 400)."""


def record_filter(params: Any, *, now: float, namespaces: tuple[str, ...] | None = None) -> RecordFilter:
    """A RecordFilter from the query string: since/until (epoch seconds; default the
    last 24 h), channel, server, tool, route, session, divergent=1; limited to
    `namespaces` (the caller's token's view)."""
    try:
        since = float(params.get("since") or now - DEFAULT_RANGE_S)
        until = float(params["until"]) if params.get("until") else None
    except ValueError as exc:
        raise BadQuery(f"since/until must be epoch seconds: {exc}") from exc
    if not all(math.isfinite(t) for t in (since, until) if t is not None):  # `inf`, `nan` parse as floats
        raise BadQuery("since/until must be finite epoch seconds")
    pick = {name: (params.get(name) or None) for name in ("channel", "server", "tool", "route", "session")}
    divergent = params.get("divergent") in ("1", "true", "on")
    return RecordFilter(since=since, until=until, divergent=divergent, namespaces=namespaces, **pick)


def bucket_for(where: RecordFilter, *, now: float) -> float:
    """About 60 buckets over the range, rounded to whole minutes (at least one)."""
    span = (where.until or now) - where.since
    return max(60.0, round(span / 60 / 60) * 60.0)


@dataclass
class Dashboard:
    store: Any  # a RecordStore with DashboardQueries
    tokens: Tokens
    metrics: CallMetrics
    totals: StoreTotals
    model_card: Path | None = None
    outlook: Any = None  # a RouterOutlook: the router's decision and probabilities per tool
    pins_policy: str = "warn"  # the config's pins.policy, shown with the pins
    shared_namespaces: tuple[str, ...] = ()  # service.shared_namespaces: every token's view shows them
    operator_tokens: frozenset[str] = frozenset()  # service.operator_tokens: these tokens' views show everything
    adopted: Any = None  # the AdoptedWorldModel room: the world model's adoptions and their history

    def namespaces(self, request: Request) -> tuple[str, ...] | None:
        """The session prefixes a request may see: with tokens, its token's and the
        shared namespaces' (None: every record, tokens off)."""
        if not self.tokens.enabled:
            return None
        own = token_name(request, self.tokens)
        if own in self.operator_tokens:
            return None
        return tuple(dict.fromkeys(f"{name}/" for name in (own, *self.shared_namespaces) if name))

    def routes(self) -> list[Route]:
        return [
            Route("/dashboard", self.page, methods=["GET"]),
            Route("/dashboard/static/{name}", self.static, methods=["GET"]),
            Route("/dashboard/api/overview", self.api(self.overview), methods=["GET"]),
            Route("/dashboard/api/fidelity", self.api(self.fidelity), methods=["GET"]),
            Route("/dashboard/api/models", self.api(self.models), methods=["GET"]),
            Route("/dashboard/api/records", self.api(self.records), methods=["GET"]),
            Route("/dashboard/api/record", self.api(self.record), methods=["GET"]),
            Route("/dashboard/api/router", self.api(self.router), methods=["GET"]),
            Route("/dashboard/api/pins", self.api(self.pins), methods=["GET"]),
            Route("/metrics", self.prometheus, methods=["GET"]),
        ]

    # --- pages ---------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        if (refused := refusal(request, self.tokens)) is not None:
            return refused
        html = resources.files("router.dashboard").joinpath("page.html").read_text(encoding="utf-8")
        return Response(html, media_type="text/html", headers=_NO_STORE)

    async def static(self, request: Request) -> Response:
        if (refused := refusal(request, self.tokens)) is not None:
            return refused
        name = request.path_params["name"]
        if name == "chart.min.js":
            if not CHART_JS.exists():
                return JSONResponse(
                    {"error": f"charts need Debian's libjs-chart.js ({CHART_JS} is missing)"}, status_code=404
                )
            return FileResponse(CHART_JS, media_type="text/javascript")
        if name not in _STATIC:
            return JSONResponse({"error": "not found"}, status_code=404)
        text = resources.files("router.dashboard").joinpath(name).read_text(encoding="utf-8")
        return Response(text, media_type=_STATIC[name])

    # --- the JSON API ----------------------------------------------------------------------

    def api(self, handler):
        async def endpoint(request: Request) -> Response:
            if (refused := refusal(request, self.tokens)) is not None:
                return refused
            try:
                view = await handler(request.query_params, now=time.time(), namespaces=self.namespaces(request))
                return JSONResponse(view, headers=_NO_STORE)
            except BadQuery as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            except StoreError as exc:
                return JSONResponse({"error": f"simroute: {exc}"}, status_code=503)

        return endpoint

    async def overview(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        where = record_filter(params, now=now, namespaces=namespaces)
        bucket_s = bucket_for(where, now=now)
        return {
            "bucket_s": bucket_s,
            "since": where.since,
            "until": where.until or now,
            "rows": await self.store.overview(where, bucket_s=bucket_s),
            **self._live(namespaces),
        }

    async def fidelity(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        where = record_filter(params, now=now, namespaces=namespaces)
        rows = await self.store.fidelity(where)
        if self.outlook is not None:
            await self.outlook.annotate(rows, namespaces=namespaces)
        await annotate_judge(self.store, where, rows)
        return {"rows": rows}

    async def models(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        """The world model's loop: simulated calls by the model that answered (the
        range's newest records, records/store/model_rows.py), the adoption in place and
        the adoptions and reverts before it, newest first. The history describes the
        deployment, not a token's records: every token sees it, as pins."""
        by_model = await self.store.model_fidelity(record_filter(params, now=now, namespaces=namespaces))
        current = await self.adopted.current() if self.adopted is not None else None
        history = await self.adopted.history() if self.adopted is not None else []
        return {
            **by_model,
            "current": current.describe() | {"model": current.cached_name} if current else None,
            "history": list(reversed(history)),
        }

    async def records(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        try:
            limit = max(1, min(int(params.get("limit") or 50), MAX_PAGE))  # SQLite reads a negative LIMIT as none
        except ValueError as exc:
            raise BadQuery(f"limit must be a number: {exc}") from exc
        rows = await self.store.page(
            record_filter(params, now=now, namespaces=namespaces),
            before=params.get("before") or None,
            after=params.get("after") or None,
            limit=limit,
        )
        return {"rows": [_summary(row) for row in rows]}

    async def record(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        record_id = params.get("id")
        if not record_id:
            raise BadQuery("id is required")
        row = await self.store.record(record_id)
        if row is not None and not in_namespaces(str(row.get("session") or ""), namespaces):
            row = None  # another token's record: as if there were none
        judged = await self.store.judge_scores(record_id) if row and hasattr(self.store, "judge_scores") else []
        # Line diffs cost a difflib pass over the record's text: off the event loop.
        return {"record": row, "diffs": await asyncio.to_thread(record_diffs, row) if row else {}, "judge": judged}

    async def router(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        if self.model_card is None or not self.model_card.exists():
            return {"card": None}
        try:
            return {"card": json.loads(self.model_card.read_text(encoding="utf-8")), "path": str(self.model_card)}
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the learned model card {self.model_card}: {exc}") from exc

    async def pins(self, params: Any, *, now: float, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        """Tool-definition pins and the changes upstreams made to pinned tools (oldest
        first). Every token sees them: they describe the upstream servers, not its records."""
        return {"policy": self.pins_policy, "pins": await self.store.pins(), "changes": await self.store.pin_changes()}

    def _live(self, namespaces: tuple[str, ...] | None) -> dict[str, Any]:
        """This process's live figures: the shadow queue, the calls it perturbed by kind,
        and the calls it served an answer with a source by provenance and sub
        (`sim/model`); with tokens, those of the namespaces the request may see."""
        families = list(self.metrics.registry.collect())
        gauges = {m.name: m.samples[0].value for m in families if m.name.startswith("simroute_shadow") and m.samples}
        visible = None if namespaces is None else {prefix.rstrip("/") for prefix in namespaces}
        return {
            "shadow_queue": gauges.get("simroute_shadow_queue_depth"),
            "shadow_skipped": gauges.get("simroute_shadow_skipped"),
            "perturbations": _counted(families, "simroute_perturbations", lambda labels: labels["kind"], visible),
            "sources": _counted(
                families, "simroute_call_sources", lambda labels: f"{labels['provenance']}/{labels['sub']}", visible
            ),
        }

    # --- /metrics ----------------------------------------------------------------------------

    async def prometheus(self, request: Request) -> Response:
        if (refused := refusal(request, self.tokens)) is not None:
            return refused
        await self.totals.refresh()
        return Response(self.metrics.exposition(self.namespaces(request)), media_type=CONTENT_TYPE)


async def annotate_judge(store: Any, where: RecordFilter, rows: list[dict[str, Any]]) -> None:
    """Add each fidelity row's `judge` scores (`simroute judge`): of the judge model that
    scored the most of the tool's pairs, the mean 0–100 score of its simulated pairs
    and of its real-vs-real control pairs (the score of "indistinguishable"); None
    when no judge scored the tool."""
    summary = await store.judge_summary(where) if hasattr(store, "judge_summary") else []
    best: dict[tuple[str, str, str], dict[str, Any]] = {}
    for entry in summary:
        key = (entry["channel"], entry["server"], entry["tool"])
        size = entry["simulated"]["pairs"] + entry["control"]["pairs"]
        if key not in best or size > best[key]["simulated"]["pairs"] + best[key]["control"]["pairs"]:
            best[key] = entry
    for row in rows:
        entry = best.get((row["channel"], row["server"], row["tool"]))
        row["judge"] = (
            None
            if entry is None
            else {
                "model": entry["judge"],
                "score": entry["simulated"]["score"],
                "pairs": entry["simulated"]["pairs"],
                "control": entry["control"]["score"],
                "controls": entry["control"]["pairs"],
                "prompt_versions": entry["prompt_versions"],
            }
        )


def _counted(
    families: list[Any], name: str, key: Callable[[dict[str, str]], str], visible: set[str] | None
) -> dict[str, int]:
    """A counter's totals summed by `key` of their labels, over the namespaces `visible` (None: all)."""
    out: dict[str, int] = {}
    for sample in (s for m in families if m.name == name for s in m.samples if s.name.endswith("_total")):
        if visible is not None and sample.labels.get("namespace") not in visible:
            continue
        out[key(sample.labels)] = out.get(key(sample.labels), 0) + int(sample.value)
    return out


_NO_STORE = {"cache-control": "no-store"}
_SUMMARY_FIELDS = (
    "id",
    "ts",
    "session",
    "step",
    "channel",
    "server",
    "tool",
    "route",
    "provenance",
    "status",
    "divergence",
    "divergence_kind",
    "policy",
    "reason",
    "latency_ms",
    "perturbation",  # {kind, rule, seed, n}: the call was faulted, delayed or its answer changed
)


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    # The served answer's source ({sub, model, …}; None: none) is read from its observation, not a column.
    return {**{name: row.get(name) for name in _SUMMARY_FIELDS}, "source": (row.get("observation") or {}).get("source")}
