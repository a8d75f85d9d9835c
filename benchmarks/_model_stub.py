"""The world model of the episode benchmarks: an OpenAI-compatible chat endpoint that
answers at once, in its own process (so its work is not the load generator's).

Plain asyncio with HTTP/1.1 keep-alive: simroute's client keeps its connection, so no
request pays a TCP handshake the way a one-request-per-connection stub would make it.
Every request's service time (from its first byte read to its answer written) is kept
under the step tag found in it (the last `bench-tag-<tag>` of the body: a step's own
call comes after the session's history), so a benchmark can take the model's own time
out of the time a step spent inside simroute. `GET /stats` answers them, and the last
request's body (what simroute sent), and forgets them.

Usage: python benchmarks/_model_stub.py [--answer TEXT] [--host 127.0.0.1] [--port 0];
prints its port once listening (0: a free one; the stack benchmark's world-model
container listens on 0.0.0.0:8000).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import time

TAG = re.compile(rb"bench-tag-([A-Za-z0-9_.-]+)")


class Stats:
    def __init__(self) -> None:
        self.by_tag: dict[str, float] = {}  # µs per tag, summed (a checked answer may be asked twice)
        self.service_us: list[float] = []
        self.last_body: bytes = b"null"

    def add(self, body: bytes, service_us: float) -> None:
        self.service_us.append(service_us)
        self.last_body = body
        tags = TAG.findall(body)
        if tags:
            tag = tags[-1].decode()
            self.by_tag[tag] = self.by_tag.get(tag, 0.0) + service_us

    def drain(self) -> bytes:
        document = json.dumps(
            {"by_tag_us": self.by_tag, "service_us": self.service_us, "last_body": json.loads(self.last_body)}
        ).encode()
        self.by_tag, self.service_us = {}, []
        return document


class ChatCompletions(asyncio.Protocol):
    def __init__(self, answer: bytes, stats: Stats) -> None:
        self.answer = answer
        self.stats = stats
        self.buffer = bytearray()
        self.started: int | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self.started is None:
            self.started = time.perf_counter_ns()
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self.buffer[:end]).decode("latin-1")
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            if head.startswith("GET /stats"):
                self._reply(self.stats.drain())
            else:
                self._reply(self.answer)
                self.stats.add(body, (time.perf_counter_ns() - self.started) / 1000)
            self.started = time.perf_counter_ns() if self.buffer else None

    def _reply(self, payload: bytes) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        self.transport.write(head.encode() + payload)  # type: ignore[attr-defined]


def completion(answer: str) -> bytes:
    message = {"role": "assistant", "content": f"<predicted_observation>{answer}</predicted_observation>"}
    usage = {"prompt_tokens": 10, "completion_tokens": 3}
    return json.dumps({"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}).encode()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer", default='{"result": "simulated"}')
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    answer, stats = completion(options.answer), Stats()
    server = await asyncio.get_running_loop().create_server(
        lambda: ChatCompletions(answer, stats), options.host, options.port, backlog=1024
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
