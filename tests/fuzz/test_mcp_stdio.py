"""`simroute mcp --config` (the stdio front door) under malformed frames on stdin:
lines that are not JSON, huge lines, JSON-RPC with wrong parts, batches, bytes that
are not UTF-8.

After every run of fuzzed frames a `ping` goes in: its answer must come (the process reads
on, it neither died nor stalled), and everything on stdout up to it must be JSON-RPC
(stdout carries protocol messages only). Afterwards a valid `tools/call` works, the
log (stderr) holds no traceback, and every echo call answered with a result is on
record. Process I/O is slow next to a socket: this surface runs a third of the examples,
each a run of up to six frames, so the frames sent reach the count the other surfaces run."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from kit.launch import records_of, simroute_executable, toolbox_server, write_config

pytestmark = pytest.mark.integration

PROTOCOL = "2025-06-18"
ANSWER_S = 60


@dataclass
class Stdio:
    process: subprocess.Popen
    config: Path
    log: Path
    lines: queue.Queue[bytes] = field(default_factory=queue.Queue)
    answered: set[str] = field(default_factory=set)
    pings: Iterator[int] = field(default_factory=itertools.count)
    markers: Iterator[int] = field(default_factory=itertools.count)

    def send(self, frame: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame if frame.endswith(b"\n") else frame + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        """Send a request and return its answer; what came before it must be JSON-RPC."""
        id_ = f"sync-{next(self.pings)}"
        self.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})}
            ).encode()
        )
        while True:
            try:
                line = self.lines.get(timeout=ANSWER_S)
            except queue.Empty:
                raise AssertionError(
                    f"no answer to {method} within {ANSWER_S}s (alive: {self.process.poll() is None})"
                ) from None
            message = json.loads(line)  # stdout carries only protocol messages
            for one in message if isinstance(message, list) else [message]:
                assert isinstance(one, dict) and one.get("jsonrpc") == "2.0", line[:300]
                self._note(one)
                if one.get("id") == id_:
                    return one

    def _note(self, message: dict) -> None:
        result = message.get("result")
        if isinstance(result, dict) and not result.get("isError"):
            text = "".join(b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict))
            if text.startswith("stdio-marker-"):
                self.answered.add(text)

    def echo(self, kind: str) -> dict:
        return {"name": "echo", "arguments": {"text": f"stdio-marker-{kind}-{next(self.markers)}"}}


def _pump(stream, lines: queue.Queue[bytes]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture(scope="module")
def stdio(tmp_path_factory) -> Iterator[Stdio]:
    folder = tmp_path_factory.mktemp("fuzz-stdio")
    config = write_config(folder, mcpServers={"toolbox": toolbox_server()})
    log = folder / "stderr.log"
    process = subprocess.Popen(
        [simroute_executable(), "mcp", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    served = Stdio(process, config, log)
    threading.Thread(target=_pump, args=(process.stdout, served.lines), daemon=True).start()
    hello = served.request(
        "initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}
    )
    assert "result" in hello, hello
    served.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    try:
        yield served
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
METHODS = st.sampled_from(["tools/call", "tools/list", "initialize", "ping", "resources/list",
                           "notifications/cancelled", "notifications/initialized", "logging/setLevel",
                           "no/such/method"]) | st.text(max_size=16)  # fmt: skip
IDS = st.none() | st.integers() | st.text(max_size=10) | JSON
PARAMS = (
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["echo", "crash", "sleep", "no_such_tool"]) | st.text(max_size=10),
            "arguments": JSON,
        },
    )
    | JSON
)


@st.composite
def frames(draw, stdio: Stdio) -> bytes:
    kind = draw(st.sampled_from(["rpc", "rpc", "batch", "json", "text", "bytes", "huge", "deep", "echo"]))
    if kind == "rpc":
        message = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2, None])), "method": draw(METHODS)}
        if draw(st.booleans()):
            message["id"] = draw(IDS)
        if draw(st.booleans()):
            message["params"] = draw(PARAMS)
        return json.dumps(message).encode()
    if kind == "batch":
        return json.dumps(
            [{"jsonrpc": "2.0", "id": n, "method": draw(METHODS)} for n in range(draw(st.integers(0, 3)))]
        ).encode()
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    if kind == "text":
        return draw(st.text(max_size=200)).replace("\n", " ").encode()
    if kind == "bytes":
        return draw(st.binary(min_size=1, max_size=200)).replace(b"\n", b" ")
    if kind == "huge":
        size = draw(st.integers(100_000, 4_000_000))
        return json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "huge",
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x" * size}},
            }
        ).encode()
    if kind == "deep":
        depth = draw(st.integers(100, 20_000))
        return (
            b'{"jsonrpc": "2.0", "id": "deep", "method": "ping", "params": {"x": ' + b"[" * depth + b"]" * depth + b"}}"
        )
    return json.dumps({"jsonrpc": "2.0", "id": "echo", "method": "tools/call", "params": stdio.echo("fuzz")}).encode()


# A case is one fuzzed frame. An example sends a run of them, then one ping: a round
# trip through process I/O costs more than a frame, so a run of frames is what lets this
# surface reach the full count in the time the socket surfaces take.
FRAMES_PER_EXAMPLE = 6


@fuzz(share=1 / 3)
@given(data=st.data())
@example(data=None)  # a valid echo call: the suite's own check that calls are recorded
def test_malformed_frames_are_answered_or_ignored_and_the_process_reads_on(stdio: Stdio, data) -> None:
    if data is None:
        tally("MCP stdio front door")
        answer = stdio.request("tools/call", stdio.echo("example"))
        assert answer["result"]["content"][0]["text"].startswith("stdio-marker-example")
        return
    for frame in data.draw(st.lists(frames(stdio), min_size=1, max_size=FRAMES_PER_EXAMPLE)):
        tally("MCP stdio front door")
        stdio.send(frame)
    assert "result" in stdio.request("ping"), "the ping after the fuzzed frames was not answered"
    assert stdio.process.poll() is None, "the process died"


def test_after_the_fuzzing_a_tool_call_works_and_every_answered_call_is_recorded(stdio: Stdio) -> None:
    """Runs after the fuzz test of this module (pytest keeps the file's order)."""
    answer = stdio.request("tools/call", stdio.echo("after"))
    assert answer["result"]["content"][0]["text"].startswith("stdio-marker-after"), answer
    recorded = {
        r["observation"]["content"][0]["text"]
        for r in records_of(stdio.config)
        if r.get("tool") == "echo" and r.get("observation", {}).get("content")
    }
    missing = stdio.answered - recorded
    assert not missing, f"{len(missing)} answered calls have no record, e.g. {sorted(missing)[:3]}"
    log = stdio.log.read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 : log.index("Traceback") + 3000]
