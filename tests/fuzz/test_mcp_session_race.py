"""Tool calls racing the close of their session on `simroute serve`'s streamable-HTTP
MCP endpoint: a burst of `tools/call` on a fresh session while a DELETE of that
session lands at a drawn moment (before, among or after the calls), in front of a
stdio upstream (each session starts its own server: a twenty-fifth of the cases) and
a remote one over streamable HTTP (the full count).

Each call gets a clear answer: its result, a JSON-RPC error, or a 4xx saying the
session is gone — never a 5xx, never a hang. The process stays up, a new session
works afterwards, the log holds no traceback, and every call answered with a
result is on record. (A tool that crashes or raises in the upstream
logs the upstream's own traceback, no input error: such tools are left out here.)"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from kit.launch import records_of, remote_toolbox, toolbox_server, write_config
from kit.mcp_wire import WireSession, messages_of, rpc
from kit.serve import serve_process

pytestmark = pytest.mark.integration


@dataclass
class Endpoint:
    process: subprocess.Popen
    url: str
    log: Path
    config: Path
    http: httpx.Client
    answered: set[str] = field(default_factory=set)
    markers: Iterator[int] = field(default_factory=itertools.count)

    def open_session(self) -> WireSession:
        return WireSession(self.http, f"{self.url}/mcp")


@contextlib.contextmanager
def endpoint_in_front_of(server: dict, folder: Path) -> Iterator[Endpoint]:
    config = write_config(folder, mcpServers={"toolbox": server})
    log = folder / "serve.log"
    with serve_process(config, log) as (process, port), httpx.Client(timeout=60, trust_env=False) as http:
        yield Endpoint(process, f"http://127.0.0.1:{port}", log, config, http)


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[Endpoint]:
    """In front of a stdio upstream: every agent session starts its own server process."""
    with endpoint_in_front_of(toolbox_server(), tmp_path_factory.mktemp("fuzz-race")) as served:
        yield served


@pytest.fixture(scope="module")
def remote_endpoint(tmp_path_factory) -> Iterator[Endpoint]:
    """In front of a remote upstream (streamable HTTP): a session costs milliseconds."""
    folder = tmp_path_factory.mktemp("fuzz-race-remote")
    with remote_toolbox(folder / "toolbox.log") as server, endpoint_in_front_of(server, folder) as served:
        yield served


CALLS = st.lists(
    st.sampled_from(["echo", "echo", "echo", "sleep", "bad_arguments", "count_up", "no_such_tool"]),
    min_size=1,
    max_size=8,
)


# `same_id`: every call of the burst with request id 1, as a client retrying a request
# still in flight sends it (each must still get its own answer, none wait forever).
RACES = {
    "calls": CALLS,
    "close_after": st.integers(0, 8),
    "delay_s": st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.2]),
    "same_id": st.booleans(),
}


@fuzz(share=1 / 25)  # every case opens a session, and so starts the upstream server: seconds each
@given(**RACES)
def test_calls_racing_the_close_of_their_session_get_clear_answers(
    endpoint: Endpoint, calls: list[str], close_after: int, delay_s: float, same_id: bool
) -> None:
    race(endpoint, calls, close_after, delay_s, same_id)


@fuzz  # the full count: a session on a remote upstream starts no process
@given(**RACES)
def test_calls_racing_the_close_of_their_session_on_a_remote_upstream_get_clear_answers(
    remote_endpoint: Endpoint, calls: list[str], close_after: int, delay_s: float, same_id: bool
) -> None:
    race(remote_endpoint, calls, close_after, delay_s, same_id)


def race(endpoint: Endpoint, calls: list[str], close_after: int, delay_s: float, same_id: bool) -> None:
    """A burst of calls on a fresh session, its DELETE landing after `close_after` of them
    and `delay_s` later: every answer clear, the answered ones noted for the record check."""
    tally("MCP session close races")
    session = endpoint.open_session()

    def call(tool: str) -> tuple[str, httpx.Response]:
        number = next(endpoint.markers)
        marker = f"race-marker-{number}"
        arguments = {
            "echo": {"text": marker},
            "sleep": {"seconds": 0.1},
            "count_up": {"n": 2},
            "bad_arguments": {"text": [1]},
        }.get(tool, {})
        name = "echo" if tool == "bad_arguments" else tool
        return marker, session.post(rpc("tools/call", {"name": name, "arguments": arguments}, 1 if same_id else number))

    def close() -> httpx.Response:
        time.sleep(delay_s)
        return session.close()

    with ThreadPoolExecutor(len(calls) + 1) as pool:
        futures = [pool.submit(call, tool) for tool in calls[:close_after]]
        closing = pool.submit(close)
        futures += [pool.submit(call, tool) for tool in calls[close_after:]]
        results = [f.result(timeout=120) for f in futures]
        closed = closing.result(timeout=120)
    assert closed.status_code in (200, 202, 204, 404), (closed.status_code, closed.text[:300])
    for marker, answer in results:
        assert answer.status_code < 500, (answer.status_code, answer.text[:500])
        if answer.status_code != 200:
            continue  # the session was gone: a 4xx says so
        for message in messages_of(answer):
            result = message.get("result") if isinstance(message, dict) else None
            if isinstance(result, dict) and not result.get("isError"):
                text = "".join(b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict))
                if text == marker:
                    endpoint.answered.add(marker)
    assert endpoint.process.poll() is None, "the server died"


@pytest.mark.parametrize("upstream", ["endpoint", "remote_endpoint"])
def test_after_the_races_a_new_session_works_and_every_answered_call_is_recorded(upstream: str, request) -> None:
    """Runs after the fuzz tests of this module (pytest keeps the file's order)."""
    endpoint: Endpoint = request.getfixturevalue(upstream)
    session = endpoint.open_session()
    answer = session.post(rpc("tools/call", {"name": "echo", "arguments": {"text": "race-after"}}, 1))
    assert answer.status_code == 200 and any("race-after" in json.dumps(m) for m in messages_of(answer)), answer.text[
        :500
    ]
    assert endpoint.answered, "no racing call was answered: the fuzzer never reached routing"
    recorded = {
        r["observation"]["content"][0]["text"]
        for r in records_of(endpoint.config)
        if r.get("tool") == "echo" and r.get("observation", {}).get("content")
    }
    missing = endpoint.answered - recorded
    assert not missing, f"{len(missing)} answered calls have no record, e.g. {sorted(missing)[:3]}"
    log = endpoint.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 : log.index("Traceback") + 3000]
