"""What simroute does not route passes through to the real server unchanged:
resources, prompts, progress notifications, server-to-client requests."""

from __future__ import annotations

import pytest

from kit import meta_of, stdio_client, toolbox_server

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
