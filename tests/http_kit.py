"""The HTTP channel's test kit: `simroute http-proxy` launched as a user launches
it, its records, and the config of a proxy in front of test upstreams."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kit import free_port, simroute_executable, write_config


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
        stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"simroute http-proxy exited early:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return ProxyProcess(process, port, config, log)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"simroute http-proxy did not listen within 30s:\n{log.read_text()}")


def records_of(config: Path) -> list[dict]:
    out = subprocess.run([simroute_executable(), "records", "--json", "--config", str(config)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]
