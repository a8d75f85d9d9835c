"""`simroute.Env`: episodes as a gymnasium environment, in this process and on a
`simroute serve`, over the real toolbox MCP server and an OpenAI-compatible world model."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from kit.launch import TOOLBOX, toolbox_server, write_config
from kit.model_stub import ModelStub
from kit.serve import serving

import simroute
from simroute.env import ENV_ID

pytestmark = pytest.mark.integration

SIMULATED = "simulated hello"


def called_echo(view) -> bool:
    """The verifier of these tests (`episodes.verifiers`): did the agent call echo?"""
    return any(record["tool"] == "echo" for record in view.records)


@pytest.fixture(scope="module")
def world_model() -> Iterator[ModelStub]:
    with ModelStub(json.dumps({"result": SIMULATED})) as stub:
        yield stub


@pytest.fixture
def config(tmp_path: Path, world_model: ModelStub) -> Path:
    return write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        world_model={"engine": "openai", "url": world_model.url, "model": "stub"},
        episodes={
            "verifiers": {"called_echo": {"entry_point": f"{__name__}:called_echo"}},
            "default_verifier": "called_echo",
        },
    )


@pytest.fixture
def env(config: Path) -> Iterator[simroute.Env]:
    env = simroute.Env(config=config)
    yield env
    env.close()


def echo(text: str) -> str:
    return json.dumps({"type": "call_tool", "tool_name": "echo", "arguments": {"text": text}}, ensure_ascii=False)


def checker_warnings(env: gym.Env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(warning.message) for warning in caught]


def test_check_env_passes_in_process_without_warnings(env):
    assert checker_warnings(env) == []


def test_check_env_passes_through_gymnasium_make(config):
    env = gym.make(ENV_ID, config=str(config), options={"route": "sim"})
    try:
        assert isinstance(env.unwrapped, simroute.Env)
        assert checker_warnings(env.unwrapped) == []
        # The wrapped env warns only that it is wrapped, as gymnasium's checker always does.
        only = checker_warnings(env)
        assert len(only) == 1 and "different from the unwrapped version" in only[0], only
        obs, info = env.reset(seed=1)
        assert "echo" in {tool["name"] for tool in json.loads(obs)["tools"]} and info["state"]["route"] == "sim"
    finally:
        env.close()


def test_a_real_step_answers_the_toolboxs_echo(env):
    obs, info = env.reset(seed=1, options={"route": "real"})
    assert obs in env.observation_space and info["state"]["route"] == "real"
    obs, reward, terminated, truncated, info = env.step(echo("héllo 中文 😀"))
    assert obs in env.observation_space and (reward, terminated, truncated) == (0.0, False, False)
    observation = json.loads(obs)
    assert observation["tool_name"] == "echo"
    assert observation["result"]["content"] == [{"type": "text", "text": "héllo 中文 😀"}]
    assert observation["result"]["_meta"]["simroute"]["provenance"] == "real"
    assert (info["provenance"], info["route"], info["infra_error"]) == ("real", "real", False)
    assert info["episode_id"] == env.episode.id and info["record_id"]


def test_a_simulated_step_answers_the_world_models_observation(env, world_model):
    asked = len(world_model.bodies)
    env.reset(seed=2, options={"route": "sim"})
    obs, reward, terminated, truncated, info = env.step(
        {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "hi"}}
    )
    result = json.loads(obs)["result"]
    assert result["structuredContent"] == {"result": SIMULATED} and not result["isError"]
    assert result["_meta"]["simroute"]["provenance"] == "sim" and info["provenance"] == "sim" and info["route"] == "sim"
    assert len(world_model.bodies) > asked  # the world model was asked, not the toolbox
    assert "hi" in json.dumps(world_model.bodies[-1])


def test_the_same_seed_gives_the_same_first_observation(env):
    first, first_info = env.reset(seed=11, options={"route": "real"})
    second, second_info = env.reset(seed=11, options={"route": "real"})
    assert first == second and "echo" in {tool["name"] for tool in json.loads(first)["tools"]}
    assert first_info["episode_id"] != second_info["episode_id"] and second_info["seed"] == 11
    sessions = env._episodes.backend.runtime.sessions
    assert len(sessions) == 1  # the second reset closed the first episode
    # Unseeded resets draw their episodes' seeds from the environment's generator.
    env.reset(seed=5)
    drawn = [env.reset()[1]["seed"] for _ in range(2)]
    env.reset(seed=5)
    assert [env.reset()[1]["seed"] for _ in range(2)] == drawn


def test_invalid_actions_answer_an_error_observation_not_an_exception(env):
    env.reset(seed=3, options={"route": "real"})
    for action, why in [
        ("{not json", "not JSON"),
        ("[1, 2]", "a JSON object"),
        ({"type": "dance"}, "not 'dance'"),
        ({"type": "call_tool", "arguments": {}}, "string 'tool_name'"),
    ]:
        obs, reward, terminated, truncated, info = env.step(action)
        assert why in json.loads(obs)["error"] and info["invalid_action"] is True, (action, obs)
        assert (reward, terminated, truncated) == (0.0, False, False)
    _, _, _, _, info = env.step(echo("after"))
    assert info["step"] == 1 and info["provenance"] == "real"  # a listing is no step, and bad actions took none


def test_verify_scores_the_episode_and_terminates_it(env):
    env.reset(seed=4, options={"route": "real"})
    env.step(echo("scored"))
    obs, reward, terminated, truncated, info = env.step('{"type": "verify"}')
    assert (reward, terminated, truncated) == (1.0, True, False) and json.loads(obs) == {"reward": 1.0}
    assert info["episode_id"] == env.episode.id and info["reward"] == 1.0 and info["infra_error"] is False
    assert (info["done"], info["ended"]) == (True, "terminated")  # the server ended it with its score
    with pytest.raises(gym.error.ResetNeeded):  # as gymnasium expects after terminated
        env.step(echo("late"))
    env.reset(seed=4, options={"route": "real"})
    _, reward, terminated, _, _ = env.step({"type": "verify"})
    assert (reward, terminated) == (0.0, True)  # no echo this time


def test_max_steps_leaves_the_agent_that_many_actions(env):
    env.reset(seed=6, options={"route": "real", "max_steps": 2})
    assert env.step(echo("one"))[3] is False
    assert env.step(echo("two"))[3] is True
    with pytest.raises(gym.error.ResetNeeded):  # as gymnasium expects after truncated
        env.step(echo("three"))


def test_close_leaves_no_session_and_no_toolbox_process(config):
    env = simroute.Env(config=config, options={"route": "real"})
    env.reset(seed=7)
    env.step(echo("started"))
    runtime = env._episodes.backend.runtime
    assert len(runtime.sessions) == 1 and toolbox_processes()
    env.close()
    env.close()  # idempotent
    assert len(runtime.sessions) == 0 and toolbox_processes() == []
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


def test_remote_env_on_simroute_serve(config, world_model, tmp_path):
    with serving(config, tmp_path / "serve.log") as port:
        env = simroute.Env(url=f"http://127.0.0.1:{port}", options={"route": "sim"})
        try:
            assert checker_warnings(env) == []
            first, info = env.reset(seed=8)
            assert (
                env.reset(seed=8)[0] == first
                and env.episode.mcp_url == f"http://127.0.0.1:{port}/mcp/e/{env.episode.id}"
            )
            obs, reward, terminated, truncated, info = env.step(echo("remote"))
            assert (
                json.loads(obs)["result"]["structuredContent"] == {"result": SIMULATED} and info["provenance"] == "sim"
            )
            assert env.step("nonsense")[4]["invalid_action"] is True
            with pytest.raises(simroute.InvalidRequestError, match="'nowhere' is not a configured MCP server"):
                env.reset(options={"servers": ["nowhere"]})
        finally:
            env.close()


def toolbox_processes() -> list[int]:
    """This process's live children running the toolbox server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if os.fsencode(TOOLBOX) in arguments and f"PPid:\t{os.getpid()}\n" in status and "State:\tZ" not in status:
            found.append(int(entry.name))
    return found
