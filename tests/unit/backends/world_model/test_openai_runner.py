"""OpenAICompatibleRunner against tiny loopback servers that misbehave on purpose:
one that trickles its answer, one that only knows `json_object` with a schema,
one whose reasoning parser kept the whole answer."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable

import pytest

from backends.world_model.model_runner import WorldModelTimeout
from backends.world_model.openai_runner import OpenAICompatibleRunner

MESSAGES = [{"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def answer(content: str | None, reasoning: str | None = None) -> bytes:
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}
    return json.dumps({"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}).encode()


async def read_request(reader: asyncio.StreamReader) -> dict:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return json.loads(await reader.readexactly(length))


async def respond(writer: asyncio.StreamWriter, status: int, body: bytes, *, trickle_s: float = 0.0) -> None:
    writer.write(
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    if trickle_s:
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(trickle_s)
    else:
        writer.write(body)
    await writer.drain()


@pytest.fixture
async def server() -> AsyncIterator[Callable]:
    servers = []

    async def start(handler) -> tuple[str, list[dict]]:
        seen: list[dict] = []

        async def serve(reader, writer):
            try:
                while True:
                    request = await read_request(reader)
                    seen.append(request)
                    await handler(request, writer)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        srv = await asyncio.start_server(serve, "127.0.0.1", 0)
        servers.append(srv)
        return f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1", seen

    yield start
    for srv in servers:
        srv.close()


@pytest.mark.serial
async def test_the_deadline_covers_an_answer_that_trickles_in(server):
    async def trickle(request, writer):
        await respond(writer, 200, answer("late"), trickle_s=0.05)  # ~8 s in all, a byte per 50 ms

    url, _ = await server(trickle)
    model_runner = OpenAICompatibleRunner(url)
    started = time.monotonic()
    try:
        with pytest.raises(WorldModelTimeout, match="within its 0.5s deadline"):
            await model_runner.complete(MESSAGES, session_id="s", deadline_s=0.5, max_tokens=4)
    finally:
        await model_runner.aclose()
    assert time.monotonic() - started < 1.5


async def test_a_server_without_json_schema_gets_json_object_with_the_schema(server):
    async def llama_cpp_server(request, writer):
        if request.get("response_format", {}).get("type") == "json_schema":
            error = {
                "error": {"message": "('body', 'response_format', 'type') Input should be 'text' or 'json_object'"}
            }
            await respond(writer, 500, json.dumps(error).encode())
        else:
            await respond(writer, 200, answer('{"n": 1}'))

    url, seen = await server(llama_cpp_server)
    model_runner = OpenAICompatibleRunner(url)
    try:
        first = await model_runner.complete(MESSAGES, session_id="s", deadline_s=5, max_tokens=8, json_schema=SCHEMA)
        second = await model_runner.complete(MESSAGES, session_id="s", deadline_s=5, max_tokens=8, json_schema=SCHEMA)
    finally:
        await model_runner.aclose()
    assert first.text == second.text == '{"n": 1}'
    assert [r["response_format"]["type"] for r in seen] == ["json_schema", "json_object", "json_object"]  # learnt once
    assert seen[-1]["response_format"]["schema"] == SCHEMA
    assert first.evaluated_tokens == 6  # prompt tokens minus the server's cached ones


async def test_reasoning_is_never_the_prediction_unless_it_holds_the_tag(server):
    answers = iter(
        [
            answer("the observation", reasoning="thinking"),
            answer(None, reasoning="hmm <predicted_observation>kept</predicted_observation>"),
        ]
    )

    async def reasoning_server(request, writer):
        await respond(writer, 200, next(answers))

    url, _ = await server(reasoning_server)
    model_runner = OpenAICompatibleRunner(url)
    try:
        plain = await model_runner.complete(MESSAGES, session_id="s", deadline_s=5, max_tokens=8)
        unclosed = await model_runner.complete(MESSAGES, session_id="s", deadline_s=5, max_tokens=8)
    finally:
        await model_runner.aclose()
    assert plain.text == "the observation"
    assert unclosed.text == "<predicted_observation>kept</predicted_observation>"
