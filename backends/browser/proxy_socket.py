"""`ProxySocket`: the contained browser's only way out, a unix socket relayed to
simroute's proxy.

The browser's container has no network (`--network none`): no interface but its
own loopback, so no route to the host's services, the LAN or the internet. Its
Chromium uses 127.0.0.1:3128 as its proxy, and socat in the container relays
that port to the one thing mounted in it, this socket (read-only folder, nothing
else in it). Here each connection is relayed to the router's browser proxy
listener, where every request is authenticated (the context's credential),
checked (the browser's address and scheme policy), routed and recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

log = logging.getLogger("simroute.browser")

SOCKET_NAME = "proxy.sock"
INSIDE_FOLDER = "/run/simroute"  # where the container sees the folder
INSIDE_PROXY = "http://127.0.0.1:3128"  # Chromium's proxy in the container (socat there)
_CONNECT_TIMEOUT_S = 10.0
_CHUNK = 256 * 1024


class ProxySocket:
    """Listens in `folder` (created here, removed at close): the container mounts it,
    so nothing else may be in it."""

    def __init__(self, target_host: str, target_port: int, folder: Path) -> None:
        self.target = (target_host, target_port)
        self.folder: Path | None = folder
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> ProxySocket:
        assert self.folder is not None
        self.folder.mkdir(mode=0o700)
        path = self.folder / SOCKET_NAME
        self._server = await asyncio.start_unix_server(self._relay, path=str(path))
        # The container's user (uid 1000) connects: it may pass the folder and write
        # to the socket, and see nothing else (the folder holds the socket alone).
        self.folder.chmod(0o711)
        os.chmod(path, 0o666)
        return self

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        upstream_writer = None
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.target), _CONNECT_TIMEOUT_S
            )
            self._writers.add(upstream_writer)
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (OSError, TimeoutError) as exc:
            log.warning("the browser's proxy connection to %s:%d failed: %r", *self.target, exc)
        finally:
            for end in (writer, upstream_writer):
                if end is not None:
                    self._writers.discard(end)
                    end.close()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None
        if self.folder is not None:
            (self.folder / SOCKET_NAME).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.folder.rmdir()
            self.folder = None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (half-close)."""
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):  # the other side went: the relay's finally closes both
        writer.close()
