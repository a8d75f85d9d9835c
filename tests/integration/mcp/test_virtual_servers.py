"""Virtual MCP servers, with `simroute serve` launched as a user launches it and a real
MCP client: a server declared only in the config is listed with its schemas, its
schema refuses bad arguments, and its calls are simulated; a server virtualized from a
live one (`simroute virtualize`) and backed by a recording replays the recorded calls
in order and flags a call the recording does not hold as simulated."""

from __future__ import annotations

import json
import subprocess

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, records_of, simroute_executable, toolbox_server
from kit.model_stub import ModelStub
from kit.serve import serving

pytestmark = pytest.mark.integration

FORECAST = {
    "name": "get_forecast",
    "description": "Today's forecast for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
        "required": ["city", "temp_c"],
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": True},
}
WORLD = "It is 2031-04-02. Lima: 24 C and sunny."


def client(port: int, session: str) -> Client:
    return Client(
        StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp", headers={"X-Simroute-Session": session}), timeout=60
    )


async def test_a_server_declared_in_config_is_listed_validated_and_simulated(make_config, tmp_path):
    declared = {"type": "virtual", "tools": [FORECAST], "initial_state": WORLD}
    with ModelStub(answer='{"city": "Lima", "temp_c": 24}') as model:
        world_model = {"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30}
        config = make_config(mcpServers={"weather": declared}, world_model=world_model)  # mode: real, the default
        with serving(config, tmp_path / "serve.log") as port:
            async with client(port, "agent-1") as agent:
                tools = {tool.name: tool for tool in await agent.list_tools()}
                refused = await agent.call_tool("get_forecast", {"city": "Lima", "days": 0}, raise_on_error=False)
                unknown_key = await agent.call_tool("get_forecast", {"town": "Lima"}, raise_on_error=False)
                bodies_after_refusals = len(model.bodies)
                answered = await agent.call_tool("get_forecast", {"city": "Lima"})

    listed = tools["get_forecast"]
    assert set(tools) == {"get_forecast"}
    assert listed.description == FORECAST["description"]
    assert listed.input_schema == FORECAST["inputSchema"] and listed.output_schema == FORECAST["outputSchema"]
    assert listed.annotations is not None and listed.annotations.read_only_hint and listed.annotations.open_world_hint

    # Arguments that fail its schema are refused by simroute (provenance none); the model is never asked.
    assert refused.is_error and "invalid arguments for tool 'get_forecast': days:" in refused.content[0].text
    assert unknown_key.is_error and "'city' is a required property" in unknown_key.content[0].text
    assert meta_of(refused)["provenance"] == "none" and meta_of(unknown_key)["provenance"] == "none"
    assert bodies_after_refusals == 0

    # The call is simulated: the stub answered, held to the output schema, from a prompt with the declaration.
    assert answered.structured_content == {"city": "Lima", "temp_c": 24}
    meta = meta_of(answered)
    assert (meta["provenance"], meta["route"], meta["policy"]) == ("sim", "sim", "virtual")
    assert "'weather' is a virtual server with no real side: mode chose real" in meta["reason"]
    assert len(model.bodies) == 1
    prompt = json.dumps(model.bodies[0])
    assert WORLD in prompt and FORECAST["description"] in prompt

    rows = records_of(config)
    assert [(r["tool"], r["route"], r["policy"], r["provenance"]) for r in rows] == [
        ("get_forecast", "deny", "input-schema", "none"),
        ("get_forecast", "deny", "input-schema", "none"),
        ("get_forecast", "sim", "virtual", "sim"),
    ]


async def test_a_server_virtualized_from_a_live_one_replays_its_recording_in_order_and_flags_a_miss(
    make_config, tmp_path
):
    visits = tmp_path / "visits"
    servers = {"toolbox": toolbox_server(TOOLBOX_VISITS=str(visits))}
    with ModelStub(answer='{"result": "visit number 99"}') as model:
        world_model = {"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30}
        recording = make_config(mcpServers=servers, world_model=world_model, replay={"recording": "golden"})
        with serving(recording, tmp_path / "record.log") as port:
            async with client(port, "recorded") as agent:
                live_tools = {tool.name: tool for tool in await agent.list_tools()}
                recorded = [(await agent.call_tool("get_visits", {})).content[0].text for _ in range(2)]
        assert recorded == ["visit number 1", "visit number 2"]

        virtual = tmp_path / "virtual.yaml"
        out = subprocess.run(
            [
                simroute_executable(),
                "virtualize",
                "toolbox",
                "--config",
                str(recording),
                "--recording",
                "golden",
                "--output",
                str(virtual),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert (
            f"'toolbox' virtualized: {len(live_tools)} tool(s) from its live tools/list, backed by recording 'golden'"
            in out.stderr
        )

        visits.write_text("500")  # what the real server would answer now: never asked below
        with serving(virtual, tmp_path / "virtual.log") as port:
            async with client(port, "replaying") as agent:
                tools = {tool.name: tool for tool in await agent.list_tools()}
                answers = [await agent.call_tool("get_visits", {}) for _ in range(3)]
                refused = await agent.call_tool("echo", {"text": 7}, raise_on_error=False)

    assert set(tools) == set(live_tools)
    for name, tool in live_tools.items():
        assert (tools[name].input_schema, tools[name].output_schema, tools[name].description) == (
            tool.input_schema,
            tool.output_schema,
            tool.description,
        )
    # The recorded calls, replayed in the order they were recorded; the third was never recorded.
    assert [a.structured_content for a in answers] == [{"result": f"visit number {n}"} for n in (1, 2, 99)]
    assert [meta_of(a)["provenance"] for a in answers] == ["replay", "replay", "sim"]
    assert (
        "replay miss (occurrence 3" in meta_of(answers[2])["note"]
        and "virtual server 'toolbox': served sim" in meta_of(answers[2])["note"]
    )
    assert refused.is_error and meta_of(refused)["provenance"] == "none"
    assert visits.read_text() == "500"  # the real server was never started

    rows = [r for r in records_of(virtual) if r["session"] == "replaying"]
    assert [(r["route"], r["policy"], r["provenance"], r.get("recording")) for r in rows] == [
        ("replay", "virtual", "replay", None),
        ("replay", "virtual", "replay", None),
        ("replay", "virtual", "sim", None),
        ("deny", "input-schema", "none", None),
    ]
