"""Launching simroute and its neighbours as processes (the demo, tests,
benchmarks): a free loopback port, waiting until a started process listens,
and stopping it."""

from __future__ import annotations

import os
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, *, timeout_s: float = 30, describe=lambda: "") -> None:
    """Until something listens on 127.0.0.1:`port`. Raises RuntimeError, with
    `describe()` (e.g. the process's log) appended, when `process` exits first or
    nothing listens within `timeout_s`; the process is then killed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{program(process)} exited with {process.returncode} before listening on {port}\n{describe()}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{program(process)} did not listen on {port} within {timeout_s:g}s\n{describe()}")


def program(process: subprocess.Popen) -> str:
    """The program `process` runs, for messages (its command is a list or a string)."""
    args = process.args
    first = args if isinstance(args, str | bytes | os.PathLike) else args[0]
    return os.fsdecode(first)


def stop(process: subprocess.Popen, *, timeout_s: float = 15) -> int:
    """SIGTERM, then SIGKILL if it has not exited within `timeout_s`; its exit code."""
    process.terminate()
    try:
        return process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
