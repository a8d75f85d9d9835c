"""Provenance of a tool result (router/mcp/results.py): simroute's own tools may mark
a result as simroute's own answer (`none`); an upstream's mark counts for nothing.
`_meta.simroute` carries the served answer's source when it has one."""

from __future__ import annotations

from fastmcp.tools.base import ToolResult
from mcp_types import TextContent

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from router.mcp.results import observation_from_result, own_answer_meta, simroute_meta


def result(meta: dict | None) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text="refused")], is_error=True, meta=meta)


def test_only_simroutes_own_tools_can_say_an_answer_is_simroutes():
    assert observation_from_result(result(own_answer_meta()), latency_s=0.0, local=True).provenance is Provenance.NONE
    assert (
        observation_from_result(result(own_answer_meta()), latency_s=0.0).provenance is Provenance.REAL
    )  # an upstream's claim
    assert observation_from_result(result(None), latency_s=0.0, local=True).provenance is Provenance.REAL


def test_the_simroute_meta_carries_the_served_answers_source_only_when_it_has_one():
    def meta_of(served: Observation) -> dict:
        return simroute_meta(
            Record(Call("mcp", "srv", "t", {}, "s"), Decision(Route.SIM, "mode", ""), served, step=0, call_key="k")
        )

    sourced = Observation([], Provenance.SIM, source=Source(sub="model", model="m.gguf"))
    assert meta_of(sourced)["source"] == {"sub": "model", "model": "m.gguf"}
    assert "source" not in meta_of(Observation([], Provenance.REAL))
    assert "source" not in meta_of(Observation([], Provenance.SIM, source=Source()))
