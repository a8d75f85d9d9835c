"""simroute's stdin and stdout as the event loop's own pipes.

The SDK's stdio server reads and writes the process's standard streams through
worker threads: each message in and out costs thread hand-offs (a line read, a write,
a flush), which on a busy machine is a good part of a call's cost. When both streams
are pipes or sockets (as an MCP client starts a server) they are served here by
asyncio's pipe transports instead, and the SDK's loop reads and writes them as its
own streams. As the SDK does, the wire moves to private descriptors while serving:
fd 0 reads the null device and fd 1 writes to stderr, so a stray print (simroute's,
an upstream's) cannot reach the wire; both are restored, blocking again, on exit.
Anything else (a terminal, a file) is served by the SDK's own threads.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

_LINE_LIMIT = 64 * 1024 * 1024  # a message is one line: as long as a message may be


class _Lines:
    """The wire's incoming lines, as the SDK's loop iterates them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """The wire's outgoing text, as the SDK's loop writes it (a message, then a flush)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def pipes_available() -> bool:
    """Whether stdin and stdout are both pipes (or sockets) this module can serve."""
    return _is_pipe(0) and _is_pipe(1)


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[Any, Any]]:
    """(lines in, writer out) over the wire, fd 0 and 1 diverted while they are open."""
    loop = asyncio.get_running_loop()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # The transports own copies of their own (the read side closes its copy at EOF);
    # `wire_in` and `wire_out` stay open until the standard descriptors are restored.
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), _own_copy(wire_in, "rb")
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, _own_copy(wire_out, "wb")
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        yield _Lines(reader), _Writer(writer)
    finally:
        try:
            await asyncio.wait_for(writer.drain(), 5)
        except (OSError, TimeoutError, ConnectionError):
            pass  # the client is gone: nothing more reaches it
        read_transport.close()
        write_transport.close()
        for fd, wire in ((0, wire_in), (1, wire_out)):
            os.set_blocking(wire, True)  # the pipe itself, shared with the copies: blocking again
            os.dup2(wire, fd)
            os.close(wire)


def _own_copy(fd: int, mode: str) -> Any:
    return os.fdopen(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3), mode, 0)
