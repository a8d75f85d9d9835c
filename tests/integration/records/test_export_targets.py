"""An exported target is what the serving model runner generates, and the prompt asks for it.

For each model runner, the live prompt is rendered as that model runner sends it (the llama
model runner: the bundled GGUF's own chat template, then its observation prefill; an
endpoint: the messages it is sent), the exported target is appended as the model's
answer, and the live parser reads it back: it gives the recorded observation. The
prompt's closing instruction asks for what the model runner's generation writes."""

from __future__ import annotations

import json

import pytest
from kit.launch import model_path

from backends.world_model.parse import parse_prediction
from calls import Call, Decision, Observation, Provenance, Route
from records.export.examples import SessionExamples, Skips
from records.export.formats import WRITERS
from records.export.options import ExportFilter
from records.record import Record
from records.store.sqlite.store import SQLiteStore
from router.config import Config
from router.runtime.simulated_side import build_model_runner
from router.runtime.training_prompts import LivePrompts

pytestmark = pytest.mark.integration

TOOLS = [
    {
        "name": "forecast",
        "description": "The weather of a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}}},
    },
    {"name": "motto", "description": "The house motto.", "inputSchema": {"type": "object", "properties": {}}},
]
ENGINES = {
    "llama": {"engine": "llama", "model_path": None},  # the bundled model: its chat template renders the prompt
    "openai": {"engine": "openai", "url": "http://127.0.0.1:9/v1", "model": "m"},
}


def real(value: dict | str) -> Observation:
    if isinstance(value, str):
        return Observation([{"type": "text", "text": value}], Provenance.REAL)
    return Observation(
        [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}], Provenance.REAL, structured=value
    )


def record(step: int, tool: str, arguments: dict, served: Observation) -> Record:
    return Record(
        Call("mcp", "weather", tool, arguments, "s1"), Decision(Route.REAL, "mode", ""), served, step, f"{tool}-{step}"
    )


def rendered_by_the_model_runner(config: Config, messages: list[dict]) -> str:
    """The text the model runner continues from: the llama model runner's chat template (read from
    the model file, its vocabulary only) and its prefill."""
    from llama_cpp import Llama

    from backends.world_model.chat_formats import template_formatter

    model_runner = build_model_runner(config)
    llama = Llama(model_path=str(config.model_path), vocab_only=True, verbose=False)
    try:
        return template_formatter(llama, config.model_path)(messages=messages).prompt + model_runner.prefill
    finally:
        llama.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_exported_target_round_trips_through_each_model_runners_live_prompt_and_parser(tmp_path, engine):
    options = dict(ENGINES[engine])
    if engine == "llama":
        options["model_path"] = str(model_path())
    config = Config.model_validate({"world_model": options, "store": {"path": str(tmp_path / "records.db")}})
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        await store.save_tool_snapshot("weather", TOOLS)
        builder = LivePrompts(config, store)
        examples = SessionExamples(builder, ExportFilter(), Skips(), pairs=False)
        answers = [
            record(0, "forecast", {"city": "Zürich"}, real({"city": "Zürich", "temp_c": 3.5})),
            record(1, "motto", {}, real("Measure twice, cut once.\n中文 😀")),
            record(2, "forecast", {"city": "Oslo"}, real({"city": "Oslo", "temp_c": -2.0})),
        ]
        lines = [WRITERS["messages"](example, "train") for r in answers if (example := examples.feed(r)) is not None]
        assert len(lines) == 3
        for recorded, line in zip(answers, lines, strict=True):
            prompt, target = line["messages"][:-1], line["messages"][-1]["content"]
            plain = [{"role": m["role"], "content": m["content"]} for m in prompt]
            instruction = plain[-1]["content"]
            if engine == "llama":
                assert line["meta"]["prefill"] == "**Environment Observation:**\n" == build_model_runner(config).prefill
                assert (
                    "<predicted_observation>" not in instruction and "after **Environment Observation:**" in instruction
                )
                live = rendered_by_the_model_runner(config, plain)
                assert live.endswith(
                    "**Environment Observation:**\n"
                )  # the model runner's generation starts after its marker
                generated = (live + target)[len(live) :]
            else:
                assert (
                    line["meta"]["prefill"] == ""
                    and "inside <predicted_observation></predicted_observation>" in instruction
                )
                assert target.startswith("<predicted_observation>\n") and target.endswith("\n</predicted_observation>")
                generated = target  # an endpoint's completion is the whole assistant turn
            parsed = builder.simulator.domains["mcp"].observation(recorded.call, parse_prediction(generated))
            if recorded.served.structured is not None:
                assert parsed.structured == recorded.served.structured
            else:
                assert parsed.text == recorded.served.text
            assert not parsed.is_error
    finally:
        await store.aclose()
