"""Between MCP tool results and simroute observations."""

from __future__ import annotations

from typing import Any

from fastmcp.tools.base import ToolResult
from mcp_types import CallToolResult, ContentBlock
from pydantic import TypeAdapter

from calls import Observation, Provenance
from records.record import Record

_CONTENT = TypeAdapter(list[ContentBlock])


# The `_meta` key by which one of simroute's own tools (shell, browser) says its result is
# simroute's own answer (a refusal, a sandbox that cannot be had), not the environment's.
# Read only from simroute's own tools (an upstream could set any key), never relayed.
OWN_ANSWER_META = "simroute_own_answer"


def own_answer_meta() -> dict[str, Any]:
    return {OWN_ANSWER_META: True}


def observation_from_call_result(
    result: CallToolResult | ToolResult, *, latency_s: float, local: bool = False
) -> Observation:
    """`local`: the result comes from one of simroute's own tools, which may mark it as
    simroute's own answer (provenance `none`)."""
    own = local and bool((result.meta or {}).get(OWN_ANSWER_META))
    return Observation(
        content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        structured=result.structured_content,
        is_error=bool(result.is_error),
        provenance=Provenance.NONE if own else Provenance.REAL,
        latency_s=latency_s,
    )


observation_from_result = observation_from_call_result  # fastmcp's ToolResult has the same fields


def simroute_meta(record: Record) -> dict[str, Any]:
    """What every tool result carries under `_meta.simroute`."""
    return {
        "provenance": str(record.served.provenance),
        "route": str(record.decision.route),
        "policy": record.decision.policy,
        "reason": record.decision.reason,
        **(
            {"safety_class": record.decision.safety, "safety_reason": record.decision.safety_reason}
            if record.decision.safety
            else {}
        ),
        "record_id": record.id,
        **({"note": record.note} if record.note else {}),
        **({"perturbation": record.perturbation} if record.perturbation is not None else {}),
        **({"source": source} if (source := record.served.source_json()) is not None else {}),
    }


def call_result_from_observation(
    observation: Observation, record: Record, *, upstream: CallToolResult | None = None
) -> CallToolResult:
    """The agent's result. When the agent is served the real upstream result, its
    content objects and `_meta` are relayed as they came (no re-validation)."""
    if (
        upstream is not None
        and observation.provenance is Provenance.REAL
        and observation.is_error == bool(upstream.is_error)
    ):
        # (A deadline error replaces the upstream's answer even though both are "real".)
        return CallToolResult(
            content=upstream.content,
            structured_content=upstream.structured_content,
            meta={**(upstream.meta or {}), "simroute": simroute_meta(record)},
            is_error=observation.is_error,
        )
    return CallToolResult(
        content=_CONTENT.validate_python(observation.content or [{"type": "text", "text": ""}]),
        structured_content=observation.structured,
        meta={"simroute": simroute_meta(record)},
        is_error=observation.is_error,
    )


def call_result_json(result: CallToolResult) -> dict[str, Any]:
    """A tool result as JSON, to keep as the answer to an idempotency key (idempotency_keys.py)."""
    return {
        "content": [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        "structured": result.structured_content,
        "meta": result.meta,
        "is_error": bool(result.is_error),
    }


def call_result_of_json(kept: dict[str, Any]) -> CallToolResult:
    """The tool result `call_result_json` kept."""
    return CallToolResult(
        content=_CONTENT.validate_python(kept["content"]),
        structured_content=kept["structured"],
        meta=kept["meta"],
        is_error=kept["is_error"],
    )


def call_result_of(result: ToolResult) -> CallToolResult:
    """fastmcp's result of a tool as the wire's."""
    wire = result.to_mcp_result()
    if isinstance(wire, CallToolResult):
        return wire
    if isinstance(wire, tuple):
        return CallToolResult(content=wire[0], structured_content=wire[1])
    return CallToolResult(content=wire)
