"""What simroute does not route passes through to the real server unchanged:
resources, prompts, progress and list-changed notifications, cancellation,
server-to-client requests (elicitation, sampling, roots)."""

from __future__ import annotations

import asyncio

import pytest
from kit.launch import meta_of, records_of, stdio_client, toolbox_server

pytestmark = pytest.mark.integration


async def test_resources_and_prompts_pass_through(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        resources = await client.list_resources()
        contents = await client.read_resource("note://greeting")
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("summarize", {"topic": "simroute"})
    assert [str(r.uri) for r in resources] == ["note://greeting"]
    assert contents[0].text == "hello from a resource"
    assert [p.name for p in prompts] == ["summarize"]
    assert "Summarize simroute in one line." in prompt.messages[0].content.text


async def test_progress_notifications_reach_the_agent(make_config):
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config, progress_handler=on_progress) as client:
        result = await client.call_tool("count_up", {"n": 3})
    assert result.content[0].text == "counted 3" and meta_of(result)["provenance"] == "real"
    assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_elicitation_from_the_server_reaches_the_agent(make_config, mode):
    asked: list[str] = []

    async def on_elicit(message, response_type, params, context):
        asked.append(message)
        return response_type(value="Ada") if response_type is not None else {"value": "Ada"}

    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config, elicitation_handler=on_elicit, mode=mode) as client:
        result = await client.call_tool("ask_name", {})
    assert asked == ["What is your name?"]
    assert result.content[0].text == "hello Ada (accept)"


async def test_sampling_request_from_the_server_reaches_the_agent(make_config):
    asked: list[str] = []

    async def on_sample(messages, params, context):
        asked.append(messages[0].content.text)
        return "forty-two"

    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config, sampling_handler=on_sample) as client:
        result = await client.call_tool("ask_model", {"question": "meaning of life?"})
    assert asked == ["meaning of life?"]
    assert result.content[0].text == "model said: forty-two"


async def test_roots_request_from_the_server_reaches_the_agent(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config, roots=["file:///work/project"]) as client:
        result = await client.call_tool("roots", {})
    assert result.content[0].text == "file:///work/project"


async def test_tool_list_changed_notification_reaches_the_agent(make_config):
    received = asyncio.Event()

    async def on_message(message):
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            received.set()

    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config, message_handler=on_message) as client:
        await client.call_tool("announce_tools_changed", {})
        await asyncio.wait_for(received.wait(), 10)


async def test_agent_cancellation_reaches_the_upstream(make_config, tmp_path):
    marker = tmp_path / "cancelled.txt"
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        await client.call_tool("echo", {"text": "upstream started"})
        with pytest.raises(Exception, match="timed out"):
            await client.call_tool("wait_for_cancel", {"marker": str(marker)}, timeout=1.0)
        for _ in range(50):
            if marker.exists():
                break
            await asyncio.sleep(0.1)
        after = await client.call_tool("echo", {"text": "still served"})
    assert marker.read_text() == "cancelled"
    assert after.content[0].text == "still served"
    notes = [row["note"] for row in records_of(config)]
    assert notes == ["", "cancelled", ""]
