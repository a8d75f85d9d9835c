"""The OpenEnv front door of episodes: `simroute serve` launched as a user launches it,
driven by openenv-core's own clients (GenericEnvClient, MCPToolClient) and checked
by openenv-core's own runtime validation. Episodes are real, replayed and
simulated (the bundled GGUF model); every step is in the record store."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import httpx2 as httpx
import jsonschema
import pytest
from kit.launch import model_path, records_of, toolbox_server, write_config
from kit.serve import serving
from openenv.cli._validation import validate_running_environment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ListToolsAction
from openenv.core.env_server.types import EnvironmentMetadata, HealthResponse, HealthStatus, SchemaResponse, State
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

pytestmark = pytest.mark.integration

# The bundled model on a busy machine: a generous deadline, and clients that wait for it.
WORLD_MODEL = {"engine": "llama", "model_path": str(model_path()), "max_tokens": 64, "deadline_s": 300}
WAIT_S = 360


def simroute_meta(result: dict) -> dict:
    return result["_meta"]["simroute"]


def texts(result: dict) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def episode_records(config: Path, episode_id: str) -> list[dict]:
    """An episode's records (its session is `episode-<id>` without tokens), oldest first."""
    return records_of(config, "--session", f"episode-{episode_id}")


@pytest.mark.serial  # the GGUF model answers the simulated episode
async def test_episodes_over_openenv_clients_are_real_replayed_and_simulated_and_recorded(tmp_path: Path):
    # next_ticket counts in this file: only a real call moves it.
    tickets = tmp_path / "tickets"
    config = write_config(
        tmp_path, mcpServers={"toolbox": toolbox_server(TOOLBOX_TICKETS=str(tickets))}, world_model=WORLD_MODEL
    )
    with serving(config, tmp_path / "serve.log") as port:
        url = f"http://127.0.0.1:{port}"

        # Real: the toolbox server answers. OpenEnv's typed MCP actions, sent by the generic client.
        async with GenericEnvClient(base_url=url, message_timeout_s=WAIT_S) as env:
            reset = await env.reset(seed=7, episode_id="real-1", options={"route": "real"})
            assert reset.observation["episode_id"] == "real-1" and not reset.done
            listed = await env.step(ListToolsAction())
            assert reset.observation["tools"] == listed.observation["tools"]  # the reset carries the episode's tools
            tools = {tool["name"]: tool for tool in listed.observation["tools"]}
            assert {"echo", "next_ticket"} <= set(tools) and "text" in tools["echo"]["inputSchema"]["properties"]
            echoed = await env.step(CallToolAction(tool_name="echo", arguments={"text": "hello openenv"}))
            ticket = await env.step(CallToolAction(tool_name="next_ticket", arguments={}))
            state = await env.state()
        assert texts(echoed.observation["result"]) == ["hello openenv"] and texts(ticket.observation["result"]) == [
            "ticket 1"
        ]
        for observation in (echoed.observation, ticket.observation):
            assert simroute_meta(observation["result"])["provenance"] == "real" and not observation["result"]["isError"]
            info = observation["info"]
            assert (info["episode_id"], info["route"], info["provenance"], info["infra_error"]) == (
                "real-1",
                "real",
                "real",
                False,
            )
            assert info["record_id"] == simroute_meta(observation["result"])["record_id"]
        assert [echoed.observation["info"]["step"], ticket.observation["info"]["step"]] == [
            1,
            2,
        ]  # list_tools is no step
        assert (state["episode_id"], state["step_count"], state["seed"], state["route"]) == ("real-1", 2, 7, "real")
        assert tickets.read_text() == "1"

        # Replay: the real episode's answer, through the MCP client; the server is not called.
        async with MCPToolClient(base_url=url, message_timeout_s=WAIT_S) as env:
            await env.reset(seed=7, episode_id="replay-1", options={"route": "replay", "max_steps": 1})
            assert "next_ticket" in {tool.name for tool in await env.list_tools()}
            replayed = await env.step(CallToolAction(tool_name="next_ticket", arguments={}))
            replay_state = await env.state()
        assert isinstance(replayed.observation, CallToolObservation) and replayed.observation.error is None
        replayed_result = replayed.observation.result
        assert texts(replayed_result) == ["ticket 1"]
        assert (
            simroute_meta(replayed_result)["provenance"] == "replay"
            and simroute_meta(replayed_result)["route"] == "replay"
        )
        assert replayed.done  # max_steps 1: the call (list_tools is no step)
        assert isinstance(replay_state, State) and (replay_state.episode_id, replay_state.step_count) == ("replay-1", 1)
        assert tickets.read_text() == "1"

        # Simulated: the GGUF model answers, in each tool's output schema; the server is not called.
        # A world of its own: the model writes the answers (a recorded real session is aligned
        # only with the real world's, see backends/world_state/simulation.py).
        async with GenericEnvClient(base_url=url, message_timeout_s=WAIT_S) as env:
            await env.reset(
                seed=7,
                episode_id="sim-1",
                options={"route": "sim", "world": "A toolbox that echoes and numbers tickets."},
            )
            simulated = [
                await env.step({"type": "call_tool", "tool_name": tool, "arguments": arguments})
                for tool, arguments in (("echo", {"text": "hello openenv"}), ("next_ticket", {}))
            ]
            sim_state = await env.state()
        for stepped, tool in zip(simulated, ("echo", "next_ticket"), strict=True):
            observation, result = stepped.observation, stepped.observation["result"]
            assert observation["tool_name"] == tool
            assert simroute_meta(result)["provenance"] == "sim" and observation["info"]["provenance"] == "sim"
            assert not observation["info"]["infra_error"], texts(result)
            if not result["isError"]:  # the model may predict a tool error; a success has the output schema's shape
                assert set(result["structuredContent"]) == {"result"} and isinstance(
                    result["structuredContent"]["result"], str
                )
                assert json.loads(texts(result)[0]) == result["structuredContent"]
        assert (sim_state["episode_id"], sim_state["step_count"], sim_state["seed"]) == ("sim-1", 2, 7)
        assert tickets.read_text() == "1"

    # Every call step is a record of the episode's session, between its reset and its
    # close (the connection's end closed it). list_tools is answered by simroute, not routed.
    real_records = episode_records(config, "real-1")
    assert [(r["tool"], r["route"], r["provenance"]) for r in real_records] == [
        ("reset", "deny", "none"),
        ("echo", "real", "real"),
        ("next_ticket", "real", "real"),
        ("close", "close", "none"),
    ]
    assert real_records[0]["arguments"] == {"episode_id": "real-1", "seed": 7, "options": {"route": "real"}}
    assert [r["id"] for r in real_records[1:3]] == [
        echoed.observation["info"]["record_id"],
        ticket.observation["info"]["record_id"],
    ]
    assert real_records[2]["observation"]["content"] == ticket.observation["result"]["content"]

    replay_records = episode_records(config, "replay-1")
    assert [(r["tool"], r["provenance"]) for r in replay_records] == [
        ("reset", "none"),
        ("next_ticket", "replay"),
        ("close", "none"),
    ]
    assert replay_records[1]["id"] == simroute_meta(replayed_result)["record_id"]

    sim_records = episode_records(config, "sim-1")
    assert [(r["tool"], r["provenance"]) for r in sim_records] == [
        ("reset", "none"),
        ("echo", "sim"),
        ("next_ticket", "sim"),
        ("close", "none"),
    ]
    assert [r["id"] for r in sim_records[1:3]] == [stepped.observation["info"]["record_id"] for stepped in simulated]
    assert [r["observation"]["content"] for r in sim_records[1:3]] == [
        stepped.observation["result"]["content"] for stepped in simulated
    ]


async def test_schema_health_and_metadata_answer_as_openenv_expects(tmp_path: Path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving(config, tmp_path / "serve.log") as port:
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            answers = [await http.get(path) for path in ("/health", "/metadata", "/schema")]
        assert [answer.status_code for answer in answers] == [200, 200, 200]
        health, metadata, schemas = [answer.json() for answer in answers]
        # openenv-core's response models forbid unknown fields: the answers are exactly theirs
        # (OpenEnv's clients read /health's status code and `status`), /health's `upstreams` aside.
        assert health.pop("upstreams") == {"toolbox": {"ok": True, "error": None}}
        assert HealthResponse.model_validate(health).status is HealthStatus.HEALTHY
        described = EnvironmentMetadata.model_validate(metadata)
        assert described.name == "simroute" and described.description
        assert described.version == importlib.metadata.version("simroute")
        schema = SchemaResponse.model_validate(schemas)

        # The schemas describe what the OpenEnv clients send and get.
        for action in (ListToolsAction(), CallToolAction(tool_name="echo", arguments={"text": "hi"})):
            jsonschema.validate(action.model_dump(), schema.action)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"type": "call_tool", "arguments": {}}, schema.action)  # no tool_name
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(episode_id="schema-1")
            stepped = await env.step(CallToolAction(tool_name="echo", arguments={"text": "described"}))
            state = await env.state()
        jsonschema.validate(stepped.observation, schema.observation)
        jsonschema.validate(state, schema.state)
        assert texts(stepped.observation["result"]) == ["described"]

        # openenv-core's own check of a running server (`openenv validate --url`). Its
        # `/mcp` criterion is left out: simroute's /mcp is MCP's streamable HTTP (a
        # session opens with `initialize`), where OpenEnv's own servers answer bare
        # JSON-RPC, so its `{}` probe gets 400.
        report = validate_running_environment(url, timeout_s=30)
        criteria = {criterion["id"]: criterion for criterion in report["criteria"]}
        for name in (
            "openapi_version_available",
            "health_endpoint",
            "metadata_endpoint",
            "schema_endpoint",
            "mode_endpoint_consistency",
        ):
            assert criteria[name]["passed"], criteria[name]
        # No stateless /reset, /step, /state: episodes live on /ws (OpenEnv's production mode).
        assert report["mode"] == "production"


async def test_a_reset_past_the_cap_is_capacity_reached_until_a_connection_closes(tmp_path: Path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, episodes={"max_open_per_token": 2})
    with serving(config, tmp_path / "serve.log") as port:
        url = f"http://127.0.0.1:{port}"
        first, second, third = (GenericEnvClient(base_url=url) for _ in range(3))
        try:
            await first.reset(episode_id="cap-1")
            await second.reset(episode_id="cap-2")
            with pytest.raises(RuntimeError, match=r"at capacity.*\(code: CAPACITY_REACHED\)"):
                await third.reset(episode_id="cap-3")
            await first.close()  # returns once the server has closed the connection, and with it the episode
            reset = await third.reset(episode_id="cap-3")  # the refused connection stays usable
            assert reset.observation["episode_id"] == "cap-3"
            # Its tools come with the reset, no step taken (cap-1's reset started the upstream that listed them).
            assert {"echo", "next_ticket"} <= {tool["name"] for tool in reset.observation["tools"]}
            assert (await third.state())["step_count"] == 0
            stepped = await third.step({"type": "call_tool", "tool_name": "echo", "arguments": {"text": "in"}})
            assert texts(stepped.observation["result"]) == ["in"]
            assert (await second.state())["episode_id"] == "cap-2"  # untouched by the refusal
        finally:
            for client in (first, second, third):
                await client.close()
    # The refused reset opened nothing: cap-3 was reset once, after cap-1 closed.
    cap_1, cap_3 = episode_records(config, "cap-1"), episode_records(config, "cap-3")
    assert [r["tool"] for r in cap_1] == ["reset", "close"]
    assert [r["tool"] for r in cap_3] == ["reset", "echo", "close"]
    assert cap_3[0]["ts"] > cap_1[1]["ts"]
