"""Between MCP tool results and simroute observations."""

from __future__ import annotations

from typing import Any

from fastmcp.tools.base import ToolResult
from mcp_types import ContentBlock
from pydantic import TypeAdapter

from router.types import Observation, Provenance
from shadow.records import Record

_CONTENT = TypeAdapter(list[ContentBlock])


# The `_meta` key by which one of simroute's own tools (shell, browser) says its result is
# simroute's own answer (a refusal, a sandbox that cannot be had), not the environment's.
# Read only from simroute's own tools (an upstream could set any key), never relayed.
OWN_ANSWER_META = "simroute_own_answer"


def own_answer_meta() -> dict[str, Any]:
    return {OWN_ANSWER_META: True}


def observation_from_result(result: ToolResult, *, latency_s: float, local: bool = False) -> Observation:
    """`local`: the result comes from one of simroute's own tools, which may mark it as
    simroute's own answer (provenance `none`)."""
    own = local and bool((result.meta or {}).get(OWN_ANSWER_META))
    return Observation(
        content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        structured=result.structured_content,
        is_error=bool(getattr(result, "is_error", False)),
        provenance=Provenance.NONE if own else Provenance.REAL,
        latency_s=latency_s,
    )


def simroute_meta(record: Record) -> dict[str, Any]:
    """What every tool result carries under `_meta.simroute`."""
    return {
        "provenance": str(record.served.provenance),
        "route": str(record.decision.route),
        "policy": record.decision.policy,
        "reason": record.decision.reason,
        **({"safety_class": record.decision.safety, "safety_reason": record.decision.safety_reason} if record.decision.safety else {}),
        "record_id": record.id,
        **({"note": record.note} if record.note else {}),
        **({"perturbation": record.perturbation} if record.perturbation is not None else {}),
        **({"source": source} if (source := record.served.source_json()) is not None else {}),
    }


def result_from_observation(observation: Observation, record: Record, *, upstream: ToolResult | None = None) -> ToolResult:
    """The agent's result. When the agent is served the real upstream result, its
    content objects and `_meta` are relayed as they came (no re-validation)."""
    if upstream is not None and observation.provenance is Provenance.REAL and not _replaced(observation, upstream):
        return ToolResult(
            content=upstream.content,
            structured_content=upstream.structured_content,
            meta={**(upstream.meta or {}), "simroute": simroute_meta(record)},
            is_error=observation.is_error,
        )
    content = _CONTENT.validate_python(observation.content or [{"type": "text", "text": ""}])
    return ToolResult(
        content=content,
        structured_content=observation.structured,
        meta={"simroute": simroute_meta(record)},
        is_error=observation.is_error,
    )


def _replaced(observation: Observation, upstream: ToolResult) -> bool:
    # A deadline error replaces the upstream's answer even though both are "real".
    return observation.is_error != bool(getattr(upstream, "is_error", False))


def result_json(result: ToolResult) -> dict[str, Any]:
    """A tool result as JSON, to keep as the answer to an idempotency key (idempotency.py)."""
    return {
        "content": [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        "structured": result.structured_content,
        "meta": result.meta,
        "is_error": bool(result.is_error),
    }


def result_of_json(kept: dict[str, Any]) -> ToolResult:
    """The tool result `result_json` kept."""
    return ToolResult(
        content=_CONTENT.validate_python(kept["content"]),
        structured_content=kept["structured"],
        meta=kept["meta"],
        is_error=kept["is_error"],
    )
