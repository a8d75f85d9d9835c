"""Export lines carry an observation's source wherever they carry its provenance: the
context turns, `meta` (the served answer) and a preference pair's rejected answer;
lines of observations without one are as before."""

from __future__ import annotations

import pytest

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.export.examples import SessionExamples, Skips
from records.export.formats import WRITERS
from records.export.options import ExportFilter
from records.record import Record
from records.store.sqlite.store import SQLiteStore
from router.config import Config
from router.runtime.training_prompts import LivePrompts

TOOLS = [
    {
        "name": "forecast",
        "description": "A forecast.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
MODEL = Source(sub="model", model="m.gguf")
DIVERGED = {"divergence": 0.5, "divergence_evidence": {"divergent": ["$"], "masked": []}}


@pytest.fixture
async def builder(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    await store.save_tool_snapshot("weather", TOOLS)
    yield LivePrompts(Config(), store)
    await store.aclose()


def text(value: str, provenance: Provenance, source: Source | None = None) -> Observation:
    return Observation([{"type": "text", "text": value}], provenance, source=source)


def record(step: int, served: Observation, route: Route, city: str, **changes) -> Record:
    made = Record(
        Call("mcp", "weather", "forecast", {"city": city}, "s1"), Decision(route, "mode", ""), served, step, f"k-{city}"
    )
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def lines(example) -> dict:
    return {name: write(example, "train") for name, write in WRITERS.items()}


def test_a_simulated_turn_of_the_context_carries_its_source_and_a_real_one_none(builder):
    examples = SessionExamples(builder, ExportFilter(), Skips(), pairs=True)
    assert examples.feed(record(0, text("rain", Provenance.SIM, MODEL), Route.SIM, "Rome")) is None  # context only
    example = examples.feed(record(1, text("fog", Provenance.REAL), Route.REAL, "Bern"))
    out = lines(example)
    [turn] = [t for t in out["agentworldbench"]["turns"] if t["role"] == "assistant"]
    assert turn["provenance"] == "sim" and turn["source"] == {"sub": "model", "model": "m.gguf"}
    [context] = [m for m in out["messages"]["messages"] if m.get("weight") == 0]
    assert context["source"] == {"sub": "model", "model": "m.gguf"}
    assert "source" not in out["messages"]["messages"][-1]  # the target: a real answer
    assert all("source" not in line["meta"] for line in (out["agentworldbench"], out["messages"]))  # served: real
    assert out["preference"] is None


def test_meta_carries_the_served_answers_source_and_a_pair_its_rejected_answers(builder):
    examples = SessionExamples(builder, ExportFilter(), Skips(), pairs=True)
    served_sim = record(
        0, text("rain", Provenance.SIM, MODEL), Route.SHADOW, "Rome", shadow=text("sun", Provenance.REAL), **DIVERGED
    )
    out = lines(examples.feed(served_sim))
    assert (
        out["agentworldbench"]["meta"]["served"] == "sim"
        and out["agentworldbench"]["meta"]["source"] == MODEL.to_json()
    )
    assert out["preference"]["meta"]["rejected_source"] == MODEL.to_json()
    served_real = record(
        1, text("sun", Provenance.REAL), Route.SHADOW, "Oslo", shadow=text("hail", Provenance.SIM, MODEL), **DIVERGED
    )
    out = lines(examples.feed(served_real))
    assert "source" not in out["messages"]["meta"] and out["preference"]["meta"]["rejected_source"] == MODEL.to_json()


def test_lines_without_a_source_have_no_source_keys(builder):
    examples = SessionExamples(builder, ExportFilter(), Skips(), pairs=True)
    examples.feed(record(0, text("rain", Provenance.SIM), Route.SIM, "Rome"))
    pair = record(
        1, text("sun", Provenance.REAL), Route.SHADOW, "Oslo", shadow=text("hail", Provenance.SIM), **DIVERGED
    )
    out = lines(examples.feed(pair))
    assert all("source" not in turn for turn in out["agentworldbench"]["turns"])
    assert all("source" not in message for message in out["messages"]["messages"])
    assert (
        all("source" not in line["meta"] for line in out.values())
        and "rejected_source" not in out["preference"]["meta"]
    )
