"""`simroute.Episodes`: many episodes at once from one asyncio program, against a
`simroute serve` launched as a user launches it (toolbox MCP server, an
OpenAI-compatible world model), and the refusals it raises."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.launch import toolbox_server, write_config
from kit.model_stub import ModelStub
from kit.serve import serving

import simroute

pytestmark = pytest.mark.integration

SIMULATED = "simulated hello"


@pytest.fixture(scope="module")
def world_model() -> Iterator[ModelStub]:
    with ModelStub(json.dumps({"result": SIMULATED})) as stub:
        yield stub


def config_of(directory: Path, world_model: ModelStub, **episodes) -> Path:
    return write_config(
        directory,
        mcpServers={"toolbox": toolbox_server()},
        world_model={"engine": "openai", "url": world_model.url, "model": "stub"},
        episodes=episodes,
    )


async def test_fifty_concurrent_episodes_each_simulate_a_call_and_list_their_tools(tmp_path, world_model):
    with serving(config_of(tmp_path, world_model), tmp_path / "serve.log") as port:
        async with simroute.Episodes(url=f"http://127.0.0.1:{port}") as episodes:
            # One listing first stores the toolbox's tool snapshot, which every episode
            # then lists from, as a served environment has after its first run.
            async with await episodes.reset() as first:
                assert "echo" in {tool["name"] for tool in await first.list_tools()}
            opened = await asyncio.gather(*(episodes.reset(seed=i, options={"route": "sim"}) for i in range(50)))
            assert len({episode.id for episode in opened}) == 50
            assert [episode.seed for episode in opened] == list(range(50))

            async def play(episode: simroute.Episode) -> tuple[simroute.StepResult, list[dict]]:
                return await episode.call_tool("echo", text=f"hello from {episode.id}"), await episode.list_tools()

            asked = len(world_model.bodies)
            played = await asyncio.gather(*(play(episode) for episode in opened))
            for episode, (called, tools) in zip(opened, played, strict=True):
                result = called.observation["result"]
                assert result["structuredContent"] == {"result": SIMULATED} and not result["isError"]
                assert result["_meta"]["simroute"]["provenance"] == "sim"
                assert (
                    called.info["episode_id"] == episode.id
                    and called.info["provenance"] == "sim"
                    and called.info["step"] == 1
                )
                assert called.reward is None and called.done is False and called.info["infra_error"] is False
                assert {"echo", "sleep"} <= {tool["name"] for tool in tools}
            assert len(world_model.bodies) - asked >= 50  # every episode's call was simulated
            prompts = json.dumps(world_model.bodies[asked:])
            assert all(f"hello from {episode.id}" in prompts for episode in opened)
            states = await asyncio.gather(*(episode.state() for episode in opened))
            assert all(state["step_count"] == 1 and state["route"] == "sim" and not state["done"] for state in states)
            await asyncio.gather(*(episode.close() for episode in opened))
            with pytest.raises(simroute.EpisodeNotFoundError) as gone:
                await opened[0].state()
            assert gone.value.status == 404


async def test_past_max_open_per_token_a_reset_is_refused_until_one_closes(tmp_path, world_model):
    with serving(config_of(tmp_path, world_model, max_open_per_token=3), tmp_path / "serve.log") as port:
        async with simroute.Episodes(url=f"http://127.0.0.1:{port}") as episodes:
            opened = [await episodes.reset(seed=i) for i in range(3)]
            with pytest.raises(simroute.CapacityError) as refused:
                await episodes.reset(seed=3)
            assert refused.value.status == 429 and "episodes.max_open_per_token" in refused.value.message
            assert isinstance(refused.value, simroute.EpisodeError)
            await opened[0].close()
            fourth = await episodes.reset(seed=3)
            assert (await fourth.state())["seed"] == 3
            for episode in (*opened[1:], fourth):
                await episode.close()


async def test_refusals_raise_their_classes_with_the_servers_message(tmp_path, world_model):
    with serving(config_of(tmp_path, world_model), tmp_path / "serve.log") as port:
        async with simroute.Episodes(url=f"http://127.0.0.1:{port}") as episodes:
            episode = await episodes.reset(seed=1, episode_id="fixed-id", options={"route": "sim"})
            with pytest.raises(simroute.EpisodeConflictError, match="exists already") as taken:
                await episodes.reset(episode_id="fixed-id")
            assert taken.value.status == 409
            with pytest.raises(simroute.InvalidRequestError, match="'nowhere' is not a configured MCP server"):
                await episodes.reset(options={"servers": ["nowhere"]})
            with pytest.raises(simroute.InvalidRequestError, match="type"):  # the REST front door's own validation
                await episode.step({"type": "dance"})
            with pytest.raises(simroute.InvalidRequestError, match="no verifier"):
                await episode.verify()
            await episode.close()
            await episode.close()  # idempotent
            with pytest.raises(simroute.EpisodeNotFoundError, match="fixed-id"):
                await episode.call_tool("echo", text="late")


async def test_in_process_episodes_share_one_runtime_and_raise_the_same_classes(tmp_path, world_model):
    async with simroute.Episodes(config=config_of(tmp_path, world_model, max_open_per_token=2)) as episodes:
        first, second = [await episodes.reset(seed=i, options={"route": "sim"}) for i in range(2)]
        assert first.mcp_url is None  # no server in this process
        called = await first.call_tool("echo", text="in process")
        assert (
            called.observation["result"]["structuredContent"] == {"result": SIMULATED}
            and called.info["provenance"] == "sim"
        )
        with pytest.raises(simroute.CapacityError) as refused:
            await episodes.reset()
        assert refused.value.status == 429
        runtime = episodes.backend.runtime
        assert len(runtime.sessions) == 2
        await first.close()
        with pytest.raises(simroute.EpisodeNotFoundError):
            await first.state()
        third = await episodes.reset(options={"route": "real"})
        echoed = await third.call_tool("echo", text="real one")
        assert echoed.observation["result"]["content"] == [{"type": "text", "text": "real one"}]
        assert len(runtime.sessions) == 2 and second.id != third.id
    assert len(runtime.sessions) == 0  # leaving closed the runtime and its open episodes
