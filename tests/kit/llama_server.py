"""llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`), as a
user serves a GGUF model to simroute or to a judge."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def llama_cpp_server(model: Path, *, n_ctx: int = 4096, port: int | None = None) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) on
    `model`, on `port` of loopback (a free one by default); yields its base URL, and stops it."""
    import httpx2

    from router.cli.launch import free_port

    port = port or free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, "llama_cpp.server exited"
            try:
                if httpx2.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not come up within 90s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(10)
