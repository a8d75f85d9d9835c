"""gymnasium's default `AsyncVectorEnv` (shared memory on) over `simroute.Env`: two
environments, each on a `simroute serve` in front of the real toolbox MCP server, step
observations of any unicode, and an observation longer than the space's bound arrives
cut with a marker in `info`."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from kit.launch import toolbox_server, write_config
from kit.serve import serving

import simroute
from simroute.spaces import DEFAULT_MAX_LENGTH

pytestmark = pytest.mark.integration

UNICODE = "Zürich 中文 😀"


def echo(text: str) -> str:
    return json.dumps({"type": "call_tool", "tool_name": "echo", "arguments": {"text": text}}, ensure_ascii=False)


def test_the_default_async_vector_env_steps_two_envs_with_any_unicode(tmp_path: Path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving(config, tmp_path / "serve.log") as port:
        make = functools.partial(simroute.Env, url=f"http://127.0.0.1:{port}", options={"route": "real"})
        envs = gym.vector.AsyncVectorEnv([make, make])  # gymnasium's defaults: shared memory on
        try:
            observations, infos = envs.reset(seed=[1, 2])
            assert len(observations) == 2 and all(
                "echo" in {t["name"] for t in json.loads(o)["tools"]} for o in observations
            )
            assert list(infos["seed"]) == [1, 2] and infos["episode_id"][0] != infos["episode_id"][1]

            observations, rewards, terminated, truncated, infos = envs.step(
                (echo(f"{UNICODE} one"), echo(f"{UNICODE} two"))
            )
            texts = [json.loads(o)["result"]["content"][0]["text"] for o in observations]
            assert texts == [f"{UNICODE} one", f"{UNICODE} two"]
            assert list(infos["provenance"]) == ["real", "real"] and not terminated.any() and not truncated.any()
            assert np.array_equal(rewards, [0.0, 0.0]) and "observation_cut" not in infos

            long = "ü" * (DEFAULT_MAX_LENGTH + 10)
            observations, _, _, _, infos = envs.step((echo("short 😀"), echo(long)))
            assert json.loads(observations[0])["result"]["content"][0]["text"] == "short 😀"
            assert len(observations[1]) == DEFAULT_MAX_LENGTH and observations[1].startswith('{"result": {"_meta"')
            assert list(infos["_observation_cut"]) == [False, True]
            assert infos["observation_cut"]["kept"][1] == DEFAULT_MAX_LENGTH and infos["observation_cut"]["length"][
                1
            ] > len(long)
        finally:
            envs.close()
