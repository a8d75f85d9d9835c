"""A real redis-server for tests: started on a free loopback port, no persistence."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from router.cli.launch import free_port, stop, wait_for_port


class RedisServer:
    def __init__(self, folder: Path, port: int | None = None, *, persistent: bool = False) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.persistent = persistent  # an append-only file fsynced per write: data survives a kill
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run scripts/setup.sh")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.folder),
                *(["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.process, timeout_s=15)
        return self

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None
