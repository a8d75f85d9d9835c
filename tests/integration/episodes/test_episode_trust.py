"""Episodes an RL loop can train on without surprises, on one `simroute serve` launched as
a user launches it (the toolbox MCP server, the HTTP channel, a stub world model):

- replay serves only what the real side answered, never a simulated answer, and a miss
  is an error with `infra_error` rather than a silent real call; recordings are named
  without a restart (at reset, over REST, with the CLI);
- a step is a tool call on every front door: MCP per episode counts and caps them like REST,
  `list_tools` counts nowhere, and `http_request` is listed there too;
- a world model failing an `http_request` step is an infra error;
- verify: its verifier fixed at reset, its own records, ending the episode on request,
  entry points reloaded when their file changes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.episodes import Served, serving_episodes, text_of
from kit.http import http_config
from kit.launch import records_of, simroute_executable, toolbox_server
from kit.model_stub import ModelStub
from mcp import Client

pytestmark = pytest.mark.integration

BROKEN_URL = "http://world-model-breaks.invalid/orders"  # the stub model answers nothing for it (malformed, twice)
VERIFIER = """
def steps(view):
    return float(sum(1 for record in view.records if record["channel"] != "episode"))
"""


def _reply(body: dict) -> str:
    if BROKEN_URL in json.dumps(body["messages"]):
        return ""
    return '<predicted_observation>{"result": "imagined"}</predicted_observation>'


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[Served, Path]]:
    folder = tmp_path_factory.mktemp("trust")
    (folder / "trust_rewards.py").write_text(VERIFIER)
    with ModelStub(reply=_reply) as stub:
        config = http_config(
            folder,
            mcpServers={"toolbox": toolbox_server(TOOLBOX_TICKETS=str(folder / "tickets"))},
            world_model={"engine": "openai", "url": stub.url, "model": "stub", "deadline_s": 30},
            episodes={
                "verifiers": {
                    "steps": {"entry_point": "trust_rewards:steps"},
                    "other": {"entry_point": "trust_rewards:steps"},
                }
            },
        )
        path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
        with serving_episodes(config, PYTHONPATH=path) as served:
            yield served, config


def _ticket(step: dict) -> int:
    found = re.fullmatch(r"ticket (\d+)", text_of(step))
    assert found, step
    return int(found.group(1))


def _tickets(config: Path) -> str:
    return (config.parent / "tickets").read_text()


def test_a_replay_after_a_simulated_episode_gets_the_real_answer_and_a_miss_is_an_infra_error(stack):
    served, config = stack
    real = served.open(options={"route": "real", "channels": ["mcp"]})
    recorded = _ticket(served.call(real, "next_ticket"))
    simulated = served.open(options={"route": "sim", "channels": ["mcp"]})
    assert served.call(simulated, "next_ticket")["info"]["provenance"] == "sim"  # the newest session to make the call

    replayed = served.open(options={"route": "replay", "channels": ["mcp"]})
    first = served.call(replayed, "next_ticket")
    assert (first["info"]["provenance"], _ticket(first)) == (
        "replay",
        recorded,
    )  # the real answer, never the simulated one
    assert first["info"]["infra_error"] is False

    again = served.call(replayed, "next_ticket")  # past the recording's occurrences: a miss (no cycling, no repeat)
    assert again["observation"]["result"]["isError"] is True and again["info"]["provenance"] == "none"
    assert "fewer than 2 times" in text_of(again) and "on_miss is 'error'" in text_of(again)
    assert again["info"]["infra_error"] is True and served.state(replayed)["infra_error"] is True
    assert _tickets(config) == str(recorded)  # the miss went nowhere real

    asked = served.open(options={"route": "replay", "channels": ["mcp"], "on_miss": "sim"})
    unrecorded = served.call(asked, "echo", text="never recorded")
    assert unrecorded["info"]["provenance"] == "sim" and unrecorded["info"]["infra_error"] is False


def test_a_recording_named_at_reset_over_rest_or_with_the_cli_is_what_an_episode_replays(stack):
    served, config = stack
    answers = {}
    for name in ("at-reset", "over-rest", "with-cli", None):  # the last one is the newest real answer
        options = {"route": "real", "channels": ["mcp"], **({"record_as": name} if name == "at-reset" else {})}
        episode = served.open(options=options)
        answers[name] = (episode, _ticket(served.call(episode, "next_ticket")))
        served.http.delete(f"{served.url}/episodes/{episode}")  # finished: tagged after its close

    tagged = served.http.post(f"{served.url}/episodes/{answers['over-rest'][0]}/recording", json={"name": "over-rest"})
    assert tagged.status_code == 200 and tagged.json()["tagged"] == 1, (
        tagged.text
    )  # its real answer; not its reset or close
    cli = subprocess.run(
        [
            simroute_executable(),
            "tag-recording",
            "with-cli",
            "--episode",
            answers["with-cli"][0],
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and "tagged 1 of" in cli.stdout, cli.stderr
    unknown = served.http.post(f"{served.url}/episodes/never-was/recording", json={"name": "x"})
    assert unknown.status_code == 404

    for name in ("at-reset", "over-rest", "with-cli"):
        episode = served.open(options={"route": "replay", "channels": ["mcp"], "recording": name})
        step = served.call(episode, "next_ticket")
        assert (step["info"]["provenance"], _ticket(step)) == ("replay", answers[name][1]), name


async def test_mcp_per_episode_steps_count_like_rest_and_stop_at_max_steps(stack):
    served, _ = stack
    episode = served.open(options={"route": "real", "channels": ["mcp", "http"], "max_steps": 2})
    async with Client(f"{served.url}/mcp/e/{episode}") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        rest_listed = {tool["name"] for tool in served.step(episode, {"type": "list_tools"})["observation"]["tools"]}
        assert "http_request" in listed and listed == rest_listed  # the same tools on both front doors
        assert served.state(episode)["step_count"] == 0  # listing is no step, on either front door
        for word in ("one", "two"):
            answered = await client.call_tool("echo", {"text": word})
            assert not answered.is_error
        progress = answered.meta["simroute"]["episode"]
        assert progress == {"step": 2, "done": True, "truncated": True, "infra_error": False}
        third = await client.call_tool("echo", {"text": "three"})
        assert third.is_error and "max_steps (2)" in third.content[0].text
    state = served.state(episode)
    assert (state["step_count"], state["done"], state["truncated"]) == (2, True, True)
    refused = served.http.post(
        f"{served.url}/episodes/{episode}/step", json={"type": "call_tool", "tool_name": "echo", "arguments": {}}
    )
    assert refused.status_code == 409 and "max_steps" in refused.text


async def test_a_world_model_failing_an_http_request_is_an_infra_error_on_every_front_door(stack):
    served, _ = stack
    episode = served.open(options={"route": "sim", "channels": ["http"]})
    failed = served.call(episode, "http_request", method="GET", url=BROKEN_URL)
    assert failed["observation"]["result"]["isError"] is True and "world model failed" in text_of(failed)
    assert failed["info"]["infra_error"] is True and served.state(episode)["infra_error"] is True

    other = served.open(options={"route": "sim", "channels": ["http"]})
    async with Client(f"{served.url}/mcp/e/{other}") as client:
        over_mcp = await client.call_tool("http_request", {"method": "GET", "url": BROKEN_URL})
    assert over_mcp.is_error and over_mcp.meta["simroute"]["episode"]["infra_error"] is True
    assert served.state(other)["infra_error"] is True and served.state(other)["step_count"] == 1


def test_verify_is_fixed_at_reset_scores_the_steps_only_and_can_end_the_episode(stack):
    served, config = stack
    episode = served.open(options={"route": "real", "channels": ["mcp"], "verifier": "steps"})
    for word in ("a", "b"):
        served.call(episode, "echo", text=word)
    verify = f"{served.url}/episodes/{episode}/verify"
    assert [served.http.post(verify).json()["reward"] for _ in range(2)] == [2.0, 2.0]  # its own records are not steps
    assert served.http.post(verify, json={"verifier": "steps"}).status_code == 200
    other = served.http.post(verify, json={"verifier": "other"})
    assert other.status_code == 422 and "fixed at reset" in other.json()["error"] and "'other'" in other.json()["error"]

    ended = served.http.post(verify, json={"terminate": True})
    assert ended.status_code == 200 and ended.json()["reward"] == 2.0
    state = served.state(episode)
    assert (state["done"], state["ended"], state["step_count"], state["verifier"]) == (True, "terminated", 2, "steps")
    late = served.http.post(
        f"{served.url}/episodes/{episode}/step", json={"type": "call_tool", "tool_name": "echo", "arguments": {}}
    )
    assert late.status_code == 409 and "terminated" in late.text
    routes = [
        (r["tool"], r["route"])
        for r in records_of(config, "--session", f"episode-{episode}")
        if r["channel"] == "episode"
    ]
    assert routes == [("reset", "deny"), *[("verify", "verify")] * 4, ("close", "close")]

    module = config.parent / "trust_rewards.py"
    module.write_text(
        VERIFIER.replace("return float(", "return 0.5 + float(")
    )  # edited on disk: used at the next verify
    again = served.open(options={"route": "real", "channels": ["mcp"], "verifier": "steps"})
    assert served.http.post(f"{served.url}/episodes/{again}/verify").json()["reward"] == 0.5
    reloaded = served.http.post(f"{served.url}/verifiers/reload")
    assert reloaded.status_code == 200 and reloaded.json() == {"reloaded": ["trust_rewards"]}
