"""docs/episodes.md's examples run as written: its REST calls (curl), its Python
(`simroute.Env`, `simroute.Episodes`) and its OpenEnv client, against `simroute serve`
with the page's `episodes` section and verifier module, the reference time server and a
stub world model (the page's `uvx` and model lines need a network and a model)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from kit.episodes import serving_episodes
from kit.launch import time_server, write_config
from kit.model_stub import ModelStub

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[3] / "docs" / "episodes.md"
ANSWER = '{"timezone": "UTC", "datetime": "2026-11-28T09:00:00+00:00", "day_of_week": "Saturday", "is_dst": false}'


def blocks(language: str) -> list[str]:
    return [
        textwrap.dedent(body) for body in re.findall(rf"^ *```{language}\n(.*?)^ *```", PAGE.read_text(), re.S | re.M)
    ]


def commands(block: str) -> list[str]:
    """A shell block's commands: continuation lines joined, comments kept apart."""
    return [
        line for line in block.replace("\\\n", " ").splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def test_the_episodes_page_runs_as_written(tmp_path: Path):
    configured = yaml.safe_load(next(b for b in blocks("yaml") if "default_verifier: answered" in b))
    rewards = next(b for b in blocks("python") if "def answered(view)" in b)
    (tmp_path / "my_rewards.py").write_text(rewards)
    with ModelStub(ANSWER) as stub:
        config = write_config(
            tmp_path,
            mcpServers={"time": time_server()},
            world_model={"engine": "openai", "url": stub.url, "model": "stub"},
            episodes=configured["episodes"],
        )
        path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
        with serving_episodes(config, PYTHONPATH=path) as served:
            host = f"127.0.0.1:{served.port}"

            def sh(command: str, episode: str | None) -> str:
                command = command.replace("localhost:8765", host).replace("127.0.0.1:8765", host)
                if episode is not None:
                    command = command.replace("3f…", episode)
                done = subprocess.run(
                    ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120
                )
                assert done.returncode == 0, (command, done.stderr)
                return done.stdout

            rest, recording = (b for b in blocks("sh") if "3f…" in b)
            reset, step, verify, close = commands(rest)
            episode = json.loads(sh(reset, None))["episode_id"]
            assert json.loads(sh(step, episode))["info"]["provenance"] == "sim"
            assert json.loads(sh(verify, episode)) == {"episode_id": episode, "reward": 1.0}
            assert sh(close, episode) == ""
            tag_rest, tag_cli = commands(recording)
            assert json.loads(sh(tag_rest, episode))["recording"] == "golden"
            assert "as recording 'golden'" in sh(tag_cli.replace("simroute ", f"{served.process.args[0]} ", 1), episode)

            for code in (b for b in blocks("python") if "8765" in b):
                code = code.replace("127.0.0.1:8765", host)
                if "async with" in code:
                    scope: dict = {}
                    exec("import simroute\nasync def main():\n" + textwrap.indent(code, "    "), scope)
                    asyncio.run(scope["main"]())
                else:
                    exec(code, {})
