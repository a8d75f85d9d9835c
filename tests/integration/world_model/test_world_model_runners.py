"""The model runners against the real SmolLM2 GGUF: in-process, and served
by llama-cpp-python's OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import pytest
from kit.launch import free_port, model_path
from kit.llama_server import llama_cpp_server

from backends.world_model.llama_runner import LlamaCppRunner
from backends.world_model.mcp_prompt import build_mcp_messages
from backends.world_model.model_runner import ModelUnavailable, WorldModelTimeout
from backends.world_model.openai_runner import OpenAICompatibleRunner

# The bundled GGUF model runs in these tests, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

TOOLS = [
    {
        "name": "get_current_time",
        "description": "Current time in a timezone",
        "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    }
]
REAL = '{"timezone": "Asia/Tokyo", "datetime": "2026-11-22T18:05:30+09:00", "day_of_week": "Sunday", "is_dst": false}'


def messages(history_len: int, timezone: str = "Europe/Paris") -> list[dict]:
    history = [({"name": "get_current_time", "arguments": {"timezone": f"Zone/{i}"}}, REAL) for i in range(history_len)]
    return build_mcp_messages(
        server="time",
        tools=TOOLS,
        history=history,
        action={"name": "get_current_time", "arguments": {"timezone": timezone}},
        demonstrations=[({"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}, REAL)],
    )


@pytest.fixture(scope="module")
async def llama():
    model_runner = LlamaCppRunner(model_path(), n_ctx=2048, cached_sessions=2, temperature=0.0)
    await model_runner.start()
    yield model_runner
    await model_runner.aclose()


async def test_completion_and_schema_constrained_output(llama):
    plain = await llama.complete(messages(0), session_id="plain", deadline_s=180, max_tokens=24)
    assert plain.text.strip() and plain.prompt_tokens > 100 and plain.completion_tokens > 0
    schema = {
        "type": "object",
        "properties": {"timezone": {"type": "string"}, "is_dst": {"type": "boolean"}},
        "required": ["timezone", "is_dst"],
    }
    constrained = await llama.complete(
        messages(0), session_id="plain", deadline_s=180, max_tokens=64, json_schema=schema
    )
    import json

    value = json.loads(constrained.text)
    assert isinstance(value["timezone"], str) and isinstance(value["is_dst"], bool)


async def test_deadline_stops_generation_and_the_next_call_succeeds(llama):
    started = time.monotonic()
    with pytest.raises(WorldModelTimeout, match="deadline"):
        await llama.complete(messages(3), session_id="late", deadline_s=0.2, max_tokens=1000)
    assert time.monotonic() - started < 1.2
    after = await llama.complete(messages(3), session_id="late", deadline_s=180, max_tokens=8)
    assert after.completion_tokens > 0


async def test_a_deadline_stops_even_a_long_prompt_mid_batch(llama):
    # llama.cpp's abort callback ends a decode between graph nodes, so a prompt batch
    # that alone outlasts the deadline (a big model, a loaded machine) is cut too.
    long_prompt = messages(12)  # ~1,700 tokens: seconds to read on 2 cores
    started = time.monotonic()
    with pytest.raises(WorldModelTimeout, match="deadline"):
        await llama.complete(long_prompt, session_id="long", deadline_s=0.3, max_tokens=8)
    assert time.monotonic() - started < 0.3 + 1.0
    after = await llama.complete(messages(0), session_id="long", deadline_s=180, max_tokens=4)
    assert after.completion_tokens > 0


async def test_interleaved_sessions_keep_their_own_prefix(llama):
    first_a = await llama.complete(messages(4, "Europe/Oslo"), session_id="a", deadline_s=180, max_tokens=4)
    await llama.complete(messages(9, "America/Lima"), session_id="b", deadline_s=180, max_tokens=4)
    second_a = await llama.complete(messages(5, "Europe/Oslo"), session_id="a", deadline_s=180, max_tokens=4)
    # Step 2 of session "a" evaluates the new turn and the final turn, not its whole prefix.
    assert second_a.prompt_tokens > first_a.prompt_tokens
    assert second_a.evaluated_tokens < 0.5 * first_a.prompt_tokens


async def test_a_cancelled_call_frees_the_model_only_once_its_thread_stopped(llama):
    # A plain task.cancel() (shadow work at shutdown) is not held back by anyio's thread
    # shielding: the model runner must keep the context until the generation has stopped, or
    # the next call (or aclose) runs a second thread in the same Llama object.
    import asyncio

    story = [{"role": "user", "content": "Write a very long story about a cat."}]
    task = asyncio.create_task(llama.complete(story, session_id="cancelled", deadline_s=180, max_tokens=1000))
    await asyncio.sleep(1.0)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 2.0  # stopped at its next token, not at max_tokens
    after = await llama.complete(story, session_id="cancelled", deadline_s=180, max_tokens=4)
    assert after.completion_tokens > 0


async def test_an_output_schema_without_a_grammar_is_a_clear_error(llama):
    from backends.world_model.model_runner import WorldModelError

    schema = {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}
    with pytest.raises(WorldModelError, match="cannot be turned into a generation grammar"):
        await llama.complete(messages(0), session_id="plain", deadline_s=180, max_tokens=8, json_schema=schema)


async def test_context_overflow_is_reported_before_generating(llama):
    from backends.world_model.model_runner import ContextOverflow

    with pytest.raises(ContextOverflow, match="exceeds the world model's context of 2048"):
        await llama.complete(messages(40), session_id="big", deadline_s=180, max_tokens=64)


async def test_missing_model_file():
    with pytest.raises(ModelUnavailable, match="world model file not found"):
        await LlamaCppRunner("/nonexistent/model.gguf").start()


@pytest.fixture(scope="module")
def llama_server():
    with llama_cpp_server(model_path(), n_ctx=2048) as url:
        yield url


async def test_openai_runner_against_a_real_server(llama_server):
    model_runner = OpenAICompatibleRunner(llama_server, temperature=0.0)
    try:
        done = await model_runner.complete(messages(1), session_id="s", deadline_s=180, max_tokens=16)
        assert done.text and done.prompt_tokens > 100 and done.completion_tokens > 0
        # This server knows response_format json_object + schema, not json_schema: the model runner adapts.
        schema = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
        structured = await model_runner.complete(
            messages(1), session_id="s", deadline_s=180, max_tokens=32, json_schema=schema
        )
        assert isinstance(json.loads(structured.text)["timezone"], str)
        with pytest.raises(WorldModelTimeout, match="did not answer within"):
            await model_runner.complete(messages(1), session_id="s", deadline_s=0.01, max_tokens=500)
    finally:
        await model_runner.aclose()


async def test_openai_runner_down_endpoint_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    model_runner = OpenAICompatibleRunner(url)
    try:
        with pytest.raises(ModelUnavailable, match=f"{url}/chat/completions is unreachable"):
            await model_runner.complete(messages(0), session_id="s", deadline_s=5, max_tokens=4)
    finally:
        await model_runner.aclose()


async def test_metrics_count_a_served_models_tokens(llama_server, tmp_path):
    """`simroute serve` with `engine: openai` in front of llama-cpp-python's server: a
    simulated call's prompt and generated tokens, as the server reports them, on /metrics."""
    from kit.launch import toolbox_server, write_config
    from kit.serve import parsed, scrape_around_a_call, serving

    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        mode="sim",
        world_model={
            "engine": "openai",
            "url": llama_server,
            "max_tokens": 48,
            "deadline_s": 120,
            "context_tokens": 1800,
        },  # the server has 2,048
    )
    log = tmp_path / "serve.log"
    with serving(config, log) as port:
        _, result, text = await scrape_around_a_call(port)
    assert result.meta["simroute"]["provenance"] == "sim" and not result.is_error, result.content[0].text
    samples = parsed(text)
    labels = (("domain", "mcp"), ("engine", "openai"))
    completions = samples[("simroute_world_model_generation_seconds_count", labels)]
    assert completions >= 1
    assert (
        samples[("simroute_world_model_prompt_tokens_total", labels)] > 50 * completions
    )  # the server's count: the tool list is in it
    assert 0 < samples[("simroute_world_model_completion_tokens_total", labels)] <= 48 * completions
    assert (
        0
        < samples[("simroute_world_model_evaluated_tokens_total", labels)]
        <= samples[("simroute_world_model_prompt_tokens_total", labels)]
    )
