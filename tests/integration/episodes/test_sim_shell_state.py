"""A simulated shell episode an RL loop can train on: `simroute serve` launched as a
user launches it, the bundled GGUF world model configured, a REST episode with
`route: sim` and initial files. Every ordinary step is answered from the episode's
world state with the text, exit code and cwd the sandbox image prints (no model
call), and the episode's state shows what the world holds."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from kit.launch import model_path, write_config
from kit.serve import serving

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # the GGUF model loads in the serve process

STEPS = [
    ("cat notes.txt", "alpha\nbeta\n", 0),
    ("echo gamma > new.txt && cat new.txt", "gamma\n", 0),
    ("ls", "new.txt\nnotes.txt\n", 0),
    ("echo hi > f; cat f", "hi\n", 0),
    ("rm f; cat f", "cat: f: No such file or directory\n", 1),
    ("mkdir -p out && mv new.txt out/ && ls out && pwd", "new.txt\n/workspace\n", 0),
    ("grep -c al notes.txt", "1\n", 0),
]


def test_a_simulated_shell_episode_answers_ordinary_steps_as_the_sandbox_does(tmp_path):
    config = write_config(
        tmp_path, mode="sim", shell={"enabled": True, "pool_size": 0}, world_model={"model_path": str(model_path())}
    )
    with (
        serving(config, tmp_path / "serve.log") as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http,
    ):
        reset = http.post(
            "/episodes",
            json={"options": {"route": "sim", "channels": ["shell"], "files": {"notes.txt": "alpha\nbeta\n"}}},
        )
        reset.raise_for_status()
        episode = reset.json()["episode_id"]
        for command, output, exit_code in STEPS:
            step = http.post(
                f"/episodes/{episode}/step",
                json={"type": "call_tool", "tool_name": "shell_exec", "arguments": {"command": command}},
            ).json()
            result = step["observation"]["result"]
            served = result["structuredContent"]
            assert (served["output"], served["exit_code"], served["cwd"]) == (output, exit_code, "/workspace"), command
            meta = result["_meta"]["simroute"]
            assert (meta["provenance"], meta["source"]["sub"]) == ("sim", "state") and not step["info"]["infra_error"]
        state = http.get(f"/episodes/{episode}").json()
        files = state["world"]["shell"]["files"]
        assert files["/workspace/out/new.txt"] == {"bytes": 6} and "/workspace/f" not in files
        assert state["world"]["shell"]["cwd"] == "/workspace"
