"""Provenance of a tool result (router/mcp/results.py): simroute's own tools may mark
a result as simroute's own answer (`none`); an upstream's mark counts for nothing."""

from __future__ import annotations

from fastmcp.tools.base import ToolResult
from mcp_types import TextContent

from router.mcp.results import observation_from_result, own_answer_meta
from router.types import Provenance


def result(meta: dict | None) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text="refused")], is_error=True, meta=meta)


def test_only_simroutes_own_tools_can_say_an_answer_is_simroutes():
    assert observation_from_result(result(own_answer_meta()), latency_s=0.0, local=True).provenance is Provenance.NONE
    assert observation_from_result(result(own_answer_meta()), latency_s=0.0).provenance is Provenance.REAL  # an upstream's claim
    assert observation_from_result(result(None), latency_s=0.0, local=True).provenance is Provenance.REAL
