"""`simroute serve`'s streamable-HTTP MCP endpoint, its dashboard and /metrics under
fuzzed requests, launched as a user launches it in front of a real MCP server.

Every answer is a clear one (no 5xx: a malformed request is the client's error),
the process keeps serving a valid call afterwards, its log holds no traceback, and
every tool call that was answered with a result is on record."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx2 as httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from kit.launch import records_of, toolbox_server, write_config
from kit.mcp_wire import ACCEPT, PROTOCOL, messages_of, rpc
from kit.serve import serve_process

pytestmark = pytest.mark.integration


@dataclass
class Endpoint:
    process: subprocess.Popen
    url: str
    log: Path
    config: Path
    http: httpx.Client
    session_id: str = ""
    answered: set[str] = field(default_factory=set)  # markers of echo calls answered with a result
    markers: Iterator[int] = field(default_factory=itertools.count)

    def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return self.http.post(f"{self.url}/mcp", content=body, headers=headers)

    def initialize(self) -> None:
        """A fresh MCP session (the fuzzer may have ended the last one)."""
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}
        answer = self.post(rpc("initialize", hello, 0), {"Content-Type": "application/json", "Accept": ACCEPT})
        assert answer.status_code == 200, answer.text
        self.session_id = answer.headers["mcp-session-id"]
        ready = self.post(rpc("notifications/initialized", None, None), self.headers())
        assert ready.status_code == 202, ready.text

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": ACCEPT,
            "Mcp-Session-Id": self.session_id,
            "Mcp-Protocol-Version": PROTOCOL,
        }


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[Endpoint]:
    folder = tmp_path_factory.mktemp("fuzz-mcp")
    config = write_config(folder, mcpServers={"toolbox": toolbox_server()})
    log = folder / "serve.log"
    with serve_process(config, log) as (process, port), httpx.Client(timeout=60, trust_env=False) as http:
        served = Endpoint(process, f"http://127.0.0.1:{port}", log, config, http)
        served.initialize()
        yield served


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=15,
)
IDS = st.none() | st.integers() | st.text(max_size=12) | JSON
METHODS = st.sampled_from(
    ["tools/call", "tools/list", "initialize", "ping", "resources/list", "prompts/list", "notifications/initialized",
     "notifications/cancelled", "completion/complete", "logging/setLevel", "resources/read", "no/such/method"]
) | st.text(max_size=20)  # fmt: skip
# Not `crash` (an upstream failing is no input error, yet fastmcp logs its traceback) nor
# `sleep` (a fuzzed duration would wait out the call deadline).
TOOLS = st.sampled_from(["echo", "count_up", "tidy_note", "shell_exec", "no_such_tool"]) | st.text(max_size=20)
ARGUMENTS = (
    st.dictionaries(
        st.sampled_from(["text", "seconds", "n", "path", "command"]) | st.text(max_size=8), JSON, max_size=4
    )
    | JSON
)
PARAMS = (
    st.fixed_dictionaries({}, optional={"name": TOOLS, "arguments": ARGUMENTS, "_meta": JSON, "cursor": JSON}) | JSON
)


@st.composite
def messages(draw) -> bytes:
    """One request body: JSON-RPC shaped with wrong parts, a batch, JSON of any
    shape, deep or huge values, or bytes that are not JSON at all."""
    kind = draw(st.sampled_from(["rpc", "rpc", "rpc", "batch", "json", "bytes", "deep", "huge"]))
    if kind == "rpc":
        message = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2])), "method": draw(METHODS), "id": draw(IDS)}
        if draw(st.booleans()):
            message["params"] = draw(PARAMS)
        return json.dumps(message).encode()
    if kind == "batch":
        return json.dumps(
            [
                {"jsonrpc": "2.0", "method": draw(METHODS), "id": n, "params": draw(PARAMS)}
                for n in range(draw(st.integers(0, 4)))
            ]
        ).encode()
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    if kind == "deep":
        depth = draw(st.integers(100, 20_000))
        return (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": '
            + b"[" * depth
            + b"]" * depth
            + b"}}}"
        )
    if kind == "huge":
        return rpc(
            "tools/call", {"name": "echo", "arguments": {"text": "x" * draw(st.integers(100_000, 3_000_000))}}, 1
        )
    return draw(st.binary(max_size=300))


@st.composite
def header_sets(draw, endpoint_session: str) -> dict[str, str]:
    """The session id right, wrong or missing; content type and accept right or not."""
    headers = {"Mcp-Protocol-Version": draw(st.sampled_from([PROTOCOL, PROTOCOL, "1999-01-01", "x"]))}
    session = draw(st.sampled_from(["right", "right", "right", "wrong", "none", "garbage"]))
    if session == "right":
        headers["Mcp-Session-Id"] = endpoint_session
    elif session == "wrong":
        headers["Mcp-Session-Id"] = "0" * 32
    elif session == "garbage":
        headers["Mcp-Session-Id"] = draw(
            st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=80)
        )
    headers["Content-Type"] = draw(
        st.sampled_from(["application/json", "application/json", "text/plain", "application/json; charset=latin-1"])
    )
    headers["Accept"] = draw(st.sampled_from([ACCEPT, ACCEPT, "application/json", "text/event-stream", "*/*"]))
    return headers


@fuzz
@given(data=st.data())
@example(data=None)  # an echo call as a client makes it: the suite's own check that calls are recorded
def test_fuzzed_requests_get_clear_answers(endpoint: Endpoint, data) -> None:
    tally("MCP streamable HTTP endpoint")
    if data is None:
        body, headers = _echo(endpoint, "example"), endpoint.headers()
    else:
        body = data.draw(messages() | st.builds(lambda: _echo(endpoint, "fuzz")))
        headers = data.draw(header_sets(endpoint.session_id))
    answer = endpoint.post(body, headers)
    assert answer.status_code < 500, (answer.status_code, answer.text[:500])
    for message in messages_of(answer):
        if (
            isinstance(message, dict)
            and isinstance(message.get("result"), dict)
            and not message["result"].get("isError")
        ):
            text = "".join(
                block.get("text", "") for block in message["result"].get("content") or [] if isinstance(block, dict)
            )
            if text.startswith("fuzz-marker-"):
                endpoint.answered.add(text)


def _echo(endpoint: Endpoint, kind: str) -> bytes:
    """A valid echo call whose text is unique: its record can be found afterwards."""
    return rpc("tools/call", {"name": "echo", "arguments": {"text": f"fuzz-marker-{kind}-{next(endpoint.markers)}"}}, 7)


@fuzz
@given(
    path=st.sampled_from(["/dashboard/api/overview", "/dashboard/api/fidelity", "/dashboard/api/records",
                          "/dashboard/api/record", "/dashboard/api/router", "/metrics", "/dashboard",
                          "/dashboard/static/app.js"]),
    query=st.dictionaries(st.sampled_from(["since", "until", "channel", "server", "tool", "route", "id", "limit",
                                           "offset", "session", "token", "provenance", "status", "before", "after",
                                           "divergent"]) | st.text(max_size=8),
                          st.text(max_size=30), max_size=5),
    authorization=st.none()
    | st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60)
    .map(lambda t: ("Bearer " + t).strip()),
)  # fmt: skip
def test_dashboard_and_metrics_answer_any_query(
    endpoint: Endpoint, path: str, query: dict, authorization: str | None
) -> None:
    tally("dashboard and /metrics")
    headers = {"Authorization": authorization} if authorization is not None else {}
    url = endpoint.url + path + "?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in query.items())
    answer = endpoint.http.get(url, headers=headers)
    assert answer.status_code in (200, 400, 401, 403, 404), (answer.status_code, answer.text[:500])


def test_after_the_fuzzing_the_server_serves_and_every_answered_call_is_recorded(endpoint: Endpoint) -> None:
    """Runs after the fuzz tests of this module (pytest keeps the file's order)."""
    assert endpoint.process.poll() is None, "the server died"
    endpoint.initialize()
    marker = _echo(endpoint, "after")
    answer = endpoint.post(marker, endpoint.headers())
    assert answer.status_code == 200 and any("fuzz-marker-after" in json.dumps(m) for m in messages_of(answer)), (
        answer.text[:500]
    )
    assert endpoint.answered, "no fuzzed echo call was answered: the fuzzer never reached routing"
    recorded = {
        r["observation"]["content"][0]["text"]
        for r in records_of(endpoint.config)
        if r.get("tool") == "echo" and r.get("observation", {}).get("content")
    }
    missing = endpoint.answered - recorded
    assert not missing, f"{len(missing)} answered calls have no record, e.g. {sorted(missing)[:3]}"
    log = endpoint.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 : log.index("Traceback") + 3000]
