"""Fictional worlds through `simroute serve`, launched as a user launches it, with an
OpenAI-compatible model stub that keeps the prompts it was sent and echoes the world's
date back: one world document shared by an MCP server and the HTTP channel (each
answer naming its source, the served model), facts an
answer stated early in a long session still told to the model when their turn no
longer fits its context, and an episode's world extending or replacing the configured one."""

from __future__ import annotations

import json
import re

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.episodes import serving_episodes, text_of
from kit.launch import free_port, meta_of, toolbox_server
from kit.mcp import call_tool
from kit.model_stub import ModelStub
from kit.serve import serving

pytestmark = pytest.mark.integration

WORLD = {"date": "2031-04-02", "facts": {"ceo": "Ada Park", "city": "Lima"}, "file": "world.md"}
WORLD_TEXT = "Lumen Freight ships desk lamps from its Lima warehouse."


def answer_in_world(body: dict) -> str:
    """What the stub answers: the date its prompt's world names, in the channel's shape."""
    system = body["messages"][0]["content"]
    date = (re.search(r"Current date: (\S+)", system) or [None, "unknown"])[1]
    if system.startswith("You are the HTTP server"):
        return f'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{{"date": "{date}"}}'
    last = body["messages"][-1]["content"]
    if '"text": "order"' in last:  # the first call of the long session states a fact
        return '{"result": "Order 4417 ships to Quito on 2031-04-09"}'
    return json.dumps({"result": f"today is {date} " + "pad " * 40})


def prompt_of(body: dict) -> str:
    return "\n".join(message["content"] for message in body["messages"])


def world_config(make_config, tmp_path, stub: ModelStub, **world_model):
    (tmp_path / "world.md").write_text(WORLD_TEXT + "\n")
    return make_config(
        mode="sim",
        mcpServers={"toolbox": toolbox_server()},
        world_model={"engine": "openai", "url": stub.url, "model": "stub", "world": WORLD, **world_model},
    )


async def test_one_world_document_is_told_to_an_mcp_server_and_the_http_channel(make_config, tmp_path):
    with ModelStub(answer_in_world) as stub:
        config = world_config(make_config, tmp_path, stub)
        proxy = free_port()
        with serving(config, tmp_path / "serve.log", http_port=proxy) as port:
            async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180) as client:
                result, text, _ = await call_tool(client, "echo", text="what day is it")
            with httpx.Client(
                proxy=f"http://127.0.0.1:{proxy}", timeout=60, headers={"X-Simroute-Session": "agent"}
            ) as http:
                response = http.get("http://api.lumen.test/v1/today")
    assert meta_of(result)["provenance"] == "sim" and "today is 2031-04-02" in text
    assert response.headers["X-Simroute-Provenance"] == "sim" and response.json() == {"date": "2031-04-02"}
    # Both answers name their source: the world model, the served model's name.
    assert meta_of(result)["source"] == {"sub": "model", "model": "stub"}
    assert json.loads(response.headers["X-Simroute-Source"]) == {"sub": "model", "model": "stub"}
    mcp_prompt, http_prompt = (
        next(prompt_of(body) for body in stub.bodies if body["messages"][0]["content"].startswith(head))
        for head in ("You are the MCP server", "You are the HTTP server")
    )
    for prompt in (mcp_prompt, http_prompt):  # both servers were told the same world
        assert "Current date: 2031-04-02\n- ceo: Ada Park\n- city: Lima\n" + WORLD_TEXT in prompt


async def test_a_fact_stated_early_in_a_long_session_still_reaches_the_model_when_its_turn_no_longer_fits(
    make_config, tmp_path
):
    with ModelStub(answer_in_world) as stub:
        config = world_config(make_config, tmp_path, stub, context_tokens=1600, max_tokens=64)
        with serving(config, tmp_path / "serve.log") as port:
            async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180) as client:
                _, first, _ = await call_tool(client, "echo", text="order")
                for n in range(20):
                    await call_tool(client, "echo", text=f"step {n} " + "words " * 30)
    assert "Order 4417 ships to Quito" in first
    last = stub.bodies[-1]["messages"]
    prompt = "\n".join(message["content"] for message in last)
    assert re.search(r"\[\d+ earlier turns omitted\]", prompt)  # the history no longer fits ...
    assert '"text": "order"' not in prompt  # ... and the turn that stated the fact is gone from it
    block = last[-1]["content"]  # ... but the fact is told, in the last message
    assert block.startswith("## Facts stated earlier in this session")
    assert '- toolbox.echo({"text":"order"}): Order 4417 ships to Quito on 2031-04-09\n' in block


def test_an_episode_world_extends_or_replaces_the_configured_one_on_every_channel(make_config, tmp_path):
    with ModelStub(answer_in_world) as stub:
        config = world_config(make_config, tmp_path, stub)
        with serving_episodes(config) as served:
            extended = served.open(
                options={"world": {"date": "2031-05-01", "facts": {"city": "Quito", "order 7": "late"}}}
            )
            told = served.call(extended, "echo", text="what day is it")
            assert told["info"]["provenance"] == "sim" and "today is 2031-05-01" in text_of(told)
            mcp_prompt = prompt_of(stub.bodies[-1])
            fetched = served.call(extended, "http_request", method="GET", url="http://api.lumen.test/v1/today")
            assert '"date": "2031-05-01"' in text_of(fetched)
            for step in (told, fetched):  # an episode's MCP and HTTP answers name their source alike
                assert step["observation"]["result"]["_meta"]["simroute"]["source"] == {"sub": "model", "model": "stub"}
            http_prompt = prompt_of(stub.bodies[-1])
            for prompt in (
                mcp_prompt,
                http_prompt,
            ):  # its date and facts win; the configured ones it does not override stay
                assert (
                    "Current date: 2031-05-01\n- ceo: Ada Park\n- city: Quito\n- order 7: late\n" + WORLD_TEXT in prompt
                )
                assert "2031-04-02" not in prompt.split("## Facts")[0]
            # The HTTP prompt's history is this host's only: the MCP answer's fact comes in the facts block.
            assert "today is 2031-05-01" in http_prompt.split("## Facts stated earlier in this session")[1]

            replaced = served.open(options={"world": {"replace": True, "text": "An island with one lighthouse."}})
            served.call(replaced, "echo", text="where am I")
            prompt = prompt_of(stub.bodies[-1])
            assert (
                "An island with one lighthouse." in prompt and "Ada Park" not in prompt and "Current date" not in prompt
            )

            plain = served.open(options={"world": "The warehouse flooded last night."})
            served.call(plain, "echo", text="status")
            prompt = prompt_of(stub.bodies[-1])
            assert (
                "Current date: 2031-04-02\n- ceo: Ada Park\n- city: Lima\n"
                + WORLD_TEXT
                + "\n\nThe warehouse flooded last night."
                in prompt
            )
