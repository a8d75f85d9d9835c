"""The HTTP channel's test kit: `simroute http-proxy` launched as a user launches
it, its records, the config of a proxy in front of test upstreams, scripted DNS
answers for it, and raw TCP listeners that count who reached them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kit.launch import records_of, simroute_executable, write_config
from router.cli.launch import free_port, wait_for_port


@dataclass
class ProxyProcess:
    process: subprocess.Popen
    port: int
    config: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ca_cert(self) -> Path:
        return self.config.parent / "ca" / "mitmproxy-ca-cert.pem"

    def records(self) -> list[dict]:
        return records_of(self.config)

    def records_when_written(self, timeout_s: float = 10) -> list[dict]:
        """The records once there are some (a tunnel is recorded when it closes)."""
        deadline = time.monotonic() + timeout_s
        while not (rows := self.records()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return rows

    def stop(self) -> int:
        self.process.terminate()
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def http_config(directory: Path, **sections) -> Path:
    """A config whose HTTP channel trusts self-made upstream certificates and keeps its CA in `directory`."""
    http = {"ca_dir": str(directory / "ca"), "ssl_insecure": True, **sections.pop("http", {})}
    return write_config(directory, http=http, **sections)


def start_proxy(config: Path, *, env: dict | None = None) -> ProxyProcess:
    port = free_port()
    log = config.parent / f"http-proxy-{port}.log"
    process = subprocess.Popen(
        [simroute_executable(), "http-proxy", "--config", str(config), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    wait_for_port(port, process, describe=log.read_text)
    return ProxyProcess(process, port, config, log)


def scripted_dns(answers: dict[str, list[str]]) -> dict:
    """The environment of a proxy whose lookups of these names get these answers, in turn."""
    folder = Path(__file__).resolve().parents[1] / "scripted_dns"
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "SIMROUTE_TEST_DNS": json.dumps(answers)}


class Listener:
    """A raw TCP listener that echoes, counting connections and bytes it received."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = socket.create_server((host, port))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                self.greet(conn)
                while data := conn.recv(65536):
                    self.received += data
                    if not self.answer(conn, data):
                        break

    def greet(self, conn: socket.socket) -> None:
        """What the server says before the client does (nothing: an echo server)."""

    def answer(self, conn: socket.socket, data: bytes) -> bool:
        """Answers `data`; False ends the connection."""
        conn.sendall(data)
        return True

    def close(self) -> None:
        self.sock.close()
