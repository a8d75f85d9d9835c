"""The contained browser's way out: a unix socket relayed to a TCP listener (real
sockets on loopback; the container side is in tests/integration/test_browser_isolation.py)."""

from __future__ import annotations

import asyncio
import stat

from backends.browser.proxy_socket import SOCKET_NAME, ProxySocket


async def test_each_connection_is_relayed_both_ways_and_the_socket_goes_at_close(tmp_path):
    seen: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()  # until the client half-closes: the relay passes the end on
        seen.append(data)
        writer.write(data.upper())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    relay = await ProxySocket("127.0.0.1", server.sockets[0].getsockname()[1], tmp_path / "proxy").start()
    folder = relay.folder
    try:
        path = folder / SOCKET_NAME
        assert sorted(p.name for p in folder.iterdir()) == [SOCKET_NAME]
        assert stat.S_IMODE(folder.stat().st_mode) == 0o711 and stat.S_ISSOCK(path.stat().st_mode)
        answers = []
        for text in (b"one", b"two"):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(text)
            writer.write_eof()
            answers.append(await asyncio.wait_for(reader.read(), 5))
            writer.close()
        assert answers == [b"ONE", b"TWO"] and seen == [b"one", b"two"]
    finally:
        await relay.aclose()
        server.close()
    assert not folder.exists()


async def test_an_unreachable_target_closes_the_connection(tmp_path):
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    relay = await ProxySocket("127.0.0.1", port, tmp_path / "proxy").start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(relay.folder / SOCKET_NAME))
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
    finally:
        await relay.aclose()
