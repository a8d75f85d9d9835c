"""Episodes on `simroute serve`, launched as a user launches it: capacity, reaping,
backend failures and the records every step leaves."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from kit.episodes import serving_episodes, text_of
from kit.launch import records_of, time_server, toolbox_server, write_config
from kit.model_stub import ModelStub
from kit.sandboxes import owner_of, sandboxes

import simroute

pytestmark = pytest.mark.integration


def test_at_the_cap_a_reset_is_refused_with_429_and_succeeds_once_one_closes(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, episodes={"max_open_per_token": 2})
    with serving_episodes(config) as served:
        first, _ = served.open(options={"route": "deny"}), served.open(options={"route": "deny"})
        refused = served.reset(options={"route": "deny"})
        assert refused.status_code == 429
        assert "capacity" in refused.json()["error"] and "max_open_per_token" in refused.json()["error"]
        assert served.http.delete(f"{served.url}/episodes/{first}").status_code == 204
        assert served.http.delete(f"{served.url}/episodes/{first}").status_code == 204  # idempotent
        assert served.reset(options={"route": "deny"}).status_code == 201


def test_bad_reset_options_are_a_clear_422_and_nothing_opens(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, episodes={"routes": ["sim", "replay"]})
    with serving_episodes(config) as served:
        for options, says in [
            ({"route": "real"}, "'real' is not allowed here"),
            ({"servers": ["nope"]}, "'nope' is not a configured MCP server"),
            ({"route": "simulate"}, "route"),
            ({"verifier": "judge"}, "'judge' is not one of episodes.verifiers"),
            ({"fork": "nope"}, "'nope' is not one of fork.workspaces"),
        ]:
            response = served.reset(options=options)
            assert response.status_code == 422 and says in response.text, (options, response.text)
        assert served.reset(episode_id="a b").status_code == 422
        assert served.children() == []  # nothing started for refused resets


def test_an_abandoned_episode_is_reaped_after_its_ttl_and_leaves_nothing_running(tmp_path):
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        shell={"enabled": True, "pool_size": 0},
        episodes={"idle_ttl_s": 600},
    )
    with serving_episodes(config) as served:
        episode = served.open(seed=1, options={"route": "real", "ttl_s": 3})
        assert text_of(served.call(episode, "echo", text="hello")) == "hello"
        written = served.call(episode, "shell_exec", command="echo kept > note.txt && cat note.txt")
        assert "kept" in text_of(written) and written["info"]["provenance"] == "real"
        assert any("toolbox.py" in command for command in served.children())
        owners = {owner_of(served.process.pid)}
        assert len(sandboxes(owners)) == 1  # the episode's sandbox

        deadline = time.monotonic() + 30
        while served.state(episode)["ended"] is None and time.monotonic() < deadline:
            time.sleep(0.5)
        state = served.state(episode)  # still readable after reaping, until closed
        assert state["ended"] == "reaped" and state["done"] is True
        assert not any("toolbox.py" in command for command in served.children())  # its upstream process is gone
        assert sandboxes(owners) == []
        late = served.http.post(f"{served.url}/episodes/{episode}/step", json={"type": "list_tools"})
        assert late.status_code == 409 and "reaped" in late.text
        assert served.http.delete(f"{served.url}/episodes/{episode}").status_code == 204
        assert served.http.get(f"{served.url}/episodes/{episode}/state").status_code == 404

    rows = records_of(config, "--session", f"episode-{episode}")
    assert [(r["channel"], r["tool"]) for r in rows] == [
        ("episode", "reset"),
        ("mcp", "echo"),
        ("shell", "shell_exec"),
        ("episode", "close"),
    ]
    assert "reaped" in rows[-1]["observation"]["content"][0]["text"]
    assert {r["provenance"] for r in rows if r["channel"] == "episode"} == {"none"}


def test_an_episode_starts_from_a_fork_of_a_workspace_folder_which_stays_untouched(tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "a.txt").write_text("hello from the host\n")
    (project / "notes.md").write_text("# notes\n")
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        shell={"enabled": True, "pool_size": 0},
        fork={"workspaces": {"project": str(project)}},
    )
    with serving_episodes(config) as served:
        episode = served.open(seed=1, options={"route": "real", "fork": "project", "files": {"notes.md": "overlaid"}})
        step = served.call(episode, "shell_exec", command="cat data/a.txt notes.md && rm -rf data")
        text = text_of(step)
        assert "hello from the host" in text and "overlaid" in text and step["info"]["provenance"] == "real"
        assert (
            text_of(served.call(episode, "shell_exec", command="ls -A")).split("\n")[0] == "notes.md"
        )  # data/ removed, in the copy
        assert served.state(episode)["infra_error"] is False
        served.http.delete(f"{served.url}/episodes/{episode}")
    assert (project / "data" / "a.txt").read_text() == "hello from the host\n"  # the folder was only read
    assert (project / "notes.md").read_text() == "# notes\n"


def test_a_backend_that_dies_mid_episode_is_an_infra_error_not_a_crash(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving_episodes(config) as served:
        episode = served.open(options={"route": "real"})
        ok = served.call(episode, "echo", text="before")
        assert ok["info"]["infra_error"] is False and served.state(episode)["infra_error"] is False
        died = served.call(episode, "crash")  # the upstream process exits mid-call
        assert died["observation"]["result"]["isError"] is True
        assert died["info"]["infra_error"] is True and died["info"]["provenance"] == "none"
        assert "simroute:" in text_of(died)
        state = served.state(episode)  # flagged, and still readable
        assert state["infra_error"] is True and state["ended"] is None
        agent_error = served.call(episode, "nope")  # the agent's own mistake is not an infra error
        assert agent_error["observation"]["result"]["isError"] is True and agent_error["info"]["infra_error"] is False
        assert served.call(episode, "echo", text="after")["info"]["infra_error"] is False  # a new upstream serves on

    steps = [r for r in records_of(config, "--session", f"episode-{episode}") if r["channel"] == "mcp"]
    assert [r["tool"] for r in steps] == ["echo", "crash", "nope", "echo"]  # every step is in the store


def test_a_simulated_episode_starts_nothing_real(tmp_path):
    with ModelStub('{"result": "imagined"}') as stub:
        config = write_config(
            tmp_path,
            mcpServers={"toolbox": toolbox_server()},
            shell={"enabled": True, "pool_size": 0},
            world_model={"engine": "openai", "url": stub.url, "model": "stub"},
        )
        with serving_episodes(config) as served:
            lister = served.open(
                options={"route": "real", "channels": ["mcp"]}
            )  # a real listing leaves the tools' snapshot
            assert "echo" in {
                tool["name"] for tool in served.step(lister, {"type": "list_tools"})["observation"]["tools"]
            }
            served.http.delete(f"{served.url}/episodes/{lister}")
            deadline = time.monotonic() + 10
            while any("toolbox.py" in command for command in served.children()) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert served.children() == []

            episode = served.open(seed=4, options={"route": "sim", "files": {"notes/todo.txt": "buy milk"}})
            tools = {tool["name"] for tool in served.step(episode, {"type": "list_tools"})["observation"]["tools"]}
            assert {"echo", "shell_exec"} <= tools  # listed from the snapshot
            step = served.call(episode, "echo", text="hi")
            assert step["info"]["provenance"] == "sim" and "imagined" in text_of(step)
            assert served.children() == [] and sandboxes({owner_of(served.process.pid)}) == []
            prompt = json.dumps(stub.bodies[-1]["messages"])
            assert "notes/todo.txt" not in prompt  # the MCP server's world is not the shell's
            # `sort`: a program the world state does not run, so the model answers, told the files
            # (a `cat` is answered from the state, which holds them: test_sim_shell_state.py).
            served.call(episode, "shell_exec", command="sort notes/todo.txt")
            assert "buy milk" in json.dumps(stub.bodies[-1]["messages"])  # the simulated shell is told its files
            assert served.children() == [] and sandboxes({owner_of(served.process.pid)}) == []


async def test_simulated_episodes_reset_together_on_a_fresh_store_start_one_upstream_to_list(tmp_path):
    starts = tmp_path / "starts.txt"
    config = write_config(tmp_path, mcpServers={"time": time_server(starts)})
    with serving_episodes(config) as served:
        async with simroute.Episodes(url=served.url) as client:
            episodes = await asyncio.gather(*(client.reset(seed=i, options={"route": "sim"}) for i in range(20)))
            listings = await asyncio.gather(*(episode.list_tools() for episode in episodes))
            assert all({"get_current_time", "convert_time"} <= {tool["name"] for tool in tools} for tools in listings)
            await asyncio.gather(*(episode.close() for episode in episodes))
    assert starts.read_text().count("started") == 1  # the first listing's upstream; the others read its snapshot


def test_a_server_that_cannot_list_its_tools_is_an_infra_error_not_an_unknown_tool(tmp_path):
    config = write_config(
        tmp_path, mcpServers={"hung": {"command": "/bin/sleep", "args": ["600"]}}, startup_timeout_s=1, list_timeout_s=2
    )
    with serving_episodes(config) as served:
        episode = served.open(options={"route": "sim"})
        step = served.call(episode, "anything", text="x")
        assert step["observation"]["result"]["isError"] is True
        assert step["info"]["infra_error"] is True and step["info"]["policy"] == "upstream-listing"
        assert "could not list its tools" in text_of(step)
