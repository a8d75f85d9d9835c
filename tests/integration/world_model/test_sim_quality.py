"""Simulation quality with the real bundled SmolLM2 GGUF: answers well-formed for
every channel (cold store and warm), grounded in the records, the system prompt
read once for every new session, template-less models usable, and endpoint
models that answer malformed text asked once more, then a clear error."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastmcp import Client
from kit.launch import meta_of, model_path, notes_server

from backends.browser.page_state import PageState
from backends.http.messages import HttpSettings, encode_body, make_call, observation_of, response_record
from backends.shell.screen import ShellResult
from backends.world_model.checks import check
from backends.world_model.http_domain import HttpDomain
from backends.world_model.llama_runner import LlamaCppRunner
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.model_runner import ModelUnavailable
from backends.world_model.openai_runner import OpenAICompatibleRunner
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.terminal_domain import TerminalDomain
from backends.world_model.web_domain import WebDomain
from calls import Call, Observation, Provenance, Session
from shadow.compare.divergence import divergence

# The bundled GGUF model runs in these tests, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

PREFILL = "**Environment Observation:**\n"
NOTES_TOOLS = [
    {
        "name": "create_note",
        "description": "Create a note; answers its id.",
        "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}},
    },
    {
        "name": "list_notes",
        "description": "List the notes, one per line.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "get_note",
        "description": "One note's title and body.",
        "inputSchema": {"type": "object", "properties": {"note_id": {"type": "integer"}}},
    },
]


@pytest.fixture(scope="module")
async def model_runner():
    model_runner = LlamaCppRunner(model_path(), n_ctx=4096, cached_sessions=2, prefill=PREFILL)
    await model_runner.start()
    yield model_runner
    await model_runner.aclose()


# --- recorded rows, as the real backends record them ------------------------------


def row(channel, server, tool, arguments, observation: Observation, session="recorded"):
    return {
        "session": session,
        "channel": channel,
        "server": server,
        "tool": tool,
        "arguments": arguments,
        "observation": observation.to_json(),
    }


def text(value, is_error=False):
    return Observation([{"type": "text", "text": value}], Provenance.REAL, is_error=is_error)


def shell_rows():
    def shell(command, output, code=0, cwd="/workspace"):
        result = ShellResult(output, code, cwd)
        return row(
            "shell",
            "shell",
            "shell_exec",
            {"command": command},
            Observation([{"type": "text", "text": result.text()}], Provenance.REAL, structured=result.structured()),
        )

    return [
        shell("ls", "notes\nreport.txt\n"),
        shell("wc -l report.txt", "3 report.txt\n"),
        shell("grep -c todo report.txt", "0\n", 1),
    ]


def http_call(path, session="s"):
    return make_call(
        method="GET",
        url=f"http://api.test{path}",
        headers=[("Accept", "application/json")],
        body=b"",
        session_id=session,
        settings=HttpSettings(),
    )


def http_rows():
    def exchange(path, body):
        structured = response_record(
            200, "OK", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
        )
        request = http_call(path, "recorded")
        return row("http", request.server, request.tool, request.arguments, observation_of(structured, Provenance.REAL))

    return [
        exchange("/items", '[{"id": 1, "name": "bolt"}, {"id": 2, "name": "nut"}]'),
        exchange("/items/1", '{"id": 1, "name": "bolt", "stock": 12}'),
    ]


def web_rows():
    page = PageState(
        "http://shop.test/",
        "Shop",
        '- heading "Shop" [level=1] [ref=e2]\n- link "Items" [ref=e3]\n- button "Sign in" [ref=e4]',
    )
    return [
        row(
            "browser",
            "browser",
            "browser_navigate",
            {"url": "http://shop.test/"},
            Observation([{"type": "text", "text": page.text()}], Provenance.REAL, structured=page.structured()),
        )
    ]


def simulator(model_runner, rows=()):
    records = list(rows)
    return WorldModelSimulator(
        model_runner,
        domains={
            "mcp": McpDomain(
                tools_for=lambda server: NOTES_TOOLS,
                output_schema_for=lambda s, t: None,
                records_for=lambda call: records,
            ),
            "shell": TerminalDomain(records_for=lambda call: records),
            "http": HttpDomain(records_for=lambda call: records),
            "browser": WebDomain(records_for=lambda call: records),
        },
        max_tokens=96,
    )


CALLS = {
    "mcp": [
        Call("mcp", "notes", "list_notes", {}, ""),
        Call("mcp", "notes", "get_note", {"note_id": 1}, ""),
        Call("mcp", "notes", "create_note", {"title": "b", "body": "c"}, ""),
    ],
    "shell": [
        Call("shell", "shell", "shell_exec", {"command": c}, "")
        for c in ("ls", "cat report.txt", "mkdir -p out && cd out")
    ],
    "http": [http_call(p) for p in ("/items", "/items/1", "/items/2")],
    "browser": [
        Call("browser", "browser", "browser_navigate", {"url": u}, "")
        for u in ("http://shop.test/", "http://shop.test/items")
    ],
}
ROWS = {
    "mcp": [
        row("mcp", "notes", "list_notes", {}, text("1. groceries\n2. ideas")),
        row("mcp", "notes", "get_note", {"note_id": 1}, text("Note 1: groceries\nmilk, eggs")),
    ],
    "shell": shell_rows(),
    "http": http_rows(),
    "browser": web_rows(),
}


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("channel", ["mcp", "shell", "http", "browser"])
async def test_every_answer_is_well_formed_for_its_channel(model_runner, channel, warm):
    sim = simulator(model_runner, ROWS[channel] if warm else ())
    json_route = warm and channel == "http"
    for i, template in enumerate(CALLS[channel]):
        call = Call(template.channel, template.server, template.tool, template.arguments, f"{channel}-{warm}-{i}")
        observation = await sim.simulate(call, Session(call.session_id), deadline_s=600)
        assert not observation.text.startswith("simroute: world model failed"), observation.text
        problem = check(channel, observation, json_body=json_route and call.arguments["path"] in ("/items", "/items/1"))
        assert problem is None, f"{call.arguments}: {problem}\n{observation.text}"
        if channel == "shell":  # the prompt line always gives these
            assert isinstance(observation.structured["exit_code"], int) and observation.structured["cwd"]
        if channel == "browser":
            assert observation.structured["url"] == call.arguments["url"]


async def test_the_system_prompt_is_read_once_for_every_new_session(model_runner):
    sim = simulator(model_runner)
    call = CALLS["mcp"][0]
    first = sim.messages_for(call, Session("a"))
    system_tokens = model_runner.count_tokens(first[0]["content"])
    one = await model_runner.complete(first, session_id="sys-a", deadline_s=600, max_tokens=4)
    # Another session (on another context of the pool) with the same system prompt.
    other = sim.messages_for(Call("mcp", "notes", "get_note", {"note_id": 7}, "b"), Session("b"))
    two = await model_runner.complete(other, session_id="sys-b", deadline_s=600, max_tokens=4)
    three = await model_runner.complete(other, session_id="sys-c", deadline_s=600, max_tokens=4)
    assert system_tokens > 200
    assert two.evaluated_tokens < 0.5 * system_tokens and three.evaluated_tokens < 0.5 * system_tokens
    assert (
        one.evaluated_tokens > system_tokens or one.evaluated_tokens < 0.5 * system_tokens
    )  # first ever, or already shared


async def test_a_gguf_without_a_chat_template_works_with_chat_format(tmp_path):
    import subprocess
    import sys

    bare = tmp_path / "bare.gguf"  # the bundled model without its chat template, by the gguf package's own tool
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gguf.scripts.gguf_new_metadata",
            "--remove-metadata",
            "tokenizer.chat_template",
            "--force",
            str(model_path()),
            str(bare),
        ],
        check=True,
        capture_output=True,
    )
    messages = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Say hello."}]
    without = LlamaCppRunner(bare, n_ctx=512, cached_sessions=1)
    with pytest.raises(ModelUnavailable, match="chat_format"):
        await without.complete(messages, session_id="x", deadline_s=300, max_tokens=4)
    with_format = LlamaCppRunner(bare, n_ctx=512, cached_sessions=1, chat_format="chatml")
    try:
        completion = await with_format.complete(messages, session_id="x", deadline_s=300, max_tokens=8)
    finally:
        await with_format.aclose()
    assert completion.completion_tokens > 0 and completion.prompt_tokens > 10


class _StubChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint answering the scripted texts in turn."""

    answers: list[str] = []
    bodies: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        content = type(self).answers.pop(0)
        payload = json.dumps(
            {
                "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


async def test_an_endpoint_answering_malformed_text_is_asked_once_more_then_errs_clearly():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubChat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model_runner = OpenAICompatibleRunner(f"http://127.0.0.1:{server.server_address[1]}/v1")
    sim = WorldModelSimulator(model_runner, domains={"shell": TerminalDomain()}, max_tokens=96, size_budgets=False)
    call = Call("shell", "shell", "shell_exec", {"command": "ls"}, "s")
    try:
        _StubChat.answers[:] = ["I would run ls.", "ls\nREADME.md\n[0] agent@sandbox:/workspace$"]
        fixed = await sim.simulate(call, Session("s"), deadline_s=30)
        _StubChat.answers[:] = ["no prompt line here", "still none"]
        failed = await sim.simulate(call, Session("s"), deadline_s=30)
    finally:
        await model_runner.aclose()
        server.shutdown()
    assert not fixed.is_error and fixed.structured["exit_code"] == 0 and fixed.structured["output"] == "README.md"
    assert failed.is_error and failed.provenance is Provenance.SIM
    assert "malformed, twice" in failed.text and "exit code" in failed.text
    # The grammar went to the server (llama-server applies it), another seed on the retry.
    assert all("prompt ::=" in body["grammar"] for body in _StubChat.bodies)
    assert [body["seed"] for body in _StubChat.bodies[:2]] == [0, 1]


async def test_a_constant_tool_is_simulated_identically_from_new_sessions(make_config, simroute_http):
    recorded = make_config(mcpServers={"notes": notes_server()})
    server = simroute_http(recorded)
    async with Client(server.url) as client:
        real = [await client.call_tool("version", {}) for _ in range(3)]
    assert {r.content[0].text for r in real} == {"notes-store 2.4.1 (build 7731, sqlite backend)"}
    server.process.terminate()
    server.process.wait(timeout=30)

    simulated_config = make_config(mcpServers={"notes": notes_server()}, mode="sim", world_model={"deadline_s": 300})
    server = simroute_http(simulated_config)
    reference = Observation([{"type": "text", "text": real[0].content[0].text}], Provenance.REAL)
    scores = []
    for _ in range(10):
        async with Client(server.url) as client:  # a new agent session each time
            answer = await client.call_tool("version", {}, raise_on_error=False)
        assert meta_of(answer)["provenance"] == "sim"
        scores.append(
            divergence(
                reference,
                Observation(
                    [{"type": "text", "text": answer.content[0].text}], Provenance.SIM, is_error=answer.is_error
                ),
            )
        )
    assert sum(score <= 0.1 for score in scores) >= 9, scores
