"""simroute launched as a user launches it: the console script, configs, the MCP
servers it fronts in the tests, a real MCP client, and its records read back."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from router.cli.launch import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TOOLBOX = ROOT / "tests" / "servers" / "toolbox.py"


def simroute_executable() -> str:
    """The console script the set-up installed beside this interpreter."""
    candidate = Path(sys.executable).parent / "simroute"
    found = str(candidate) if candidate.exists() else shutil.which("simroute")
    if not found:
        raise RuntimeError("the `simroute` console script is not installed: run scripts/setup.sh")
    return found


def time_server(count_file: Path | None = None) -> dict:
    """The reference time server from PyPI; with `count_file`, every start of it
    appends a line there (one line = one upstream session)."""
    server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    if count_file is None:
        return {"command": server[0], "args": server[1:]}
    script = f'echo started >> "{count_file}"; exec "$@"'
    return {"command": "/bin/sh", "args": ["-c", script, "sh", *server]}


def toolbox_server(**env: str) -> dict:
    return {"command": sys.executable, "args": [str(TOOLBOX)], **({"env": env} if env else {})}


@contextlib.contextmanager
def remote_toolbox(log: Path) -> Iterator[dict]:
    """The toolbox served over streamable HTTP on loopback, one process for every agent
    session; yields its config entry (a remote server: `url`)."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, str(TOOLBOX), "--http", str(port)], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(port, process, describe=log.read_text)
        yield {"url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        stop(process)


def catalog_server() -> dict:
    """The shop catalog test server (tests/servers/catalog.py): tools with output schemas."""
    return {"command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "catalog.py")]}


def write_config(directory: Path, **sections) -> Path:
    """A config file in `directory`. simroute's own channels (shell, browser) are off
    unless a test asks for them: the shell's warm pool would start Docker sandboxes for
    every launch, and their tools would crowd the upstream tool lists tests compare."""
    # The CA (of the HTTP channel and the browser's proxy) stays in the test's folder.
    http = {"ca_dir": str(directory / "ca"), **sections.pop("http", {})}
    config = {
        "store": {"path": str(directory / "records.db")},
        "shell": {"enabled": False},
        "browser": {"enabled": False},
        "http": http,
        **sections,
    }
    path = directory / "simroute.yaml"
    # JSON is YAML: no quoting surprises for paths and patterns.
    path.write_text(json.dumps(config, indent=2))
    return path


def stdio_client(config: Path, **client_kwargs) -> Client:
    """A real MCP client that launches `simroute mcp --config` over stdio."""
    transport = StdioTransport(
        command=simroute_executable(), args=["mcp", "--config", str(config)], env=_child_environment(), keep_alive=False
    )
    return Client(transport, **client_kwargs)


def _child_environment() -> dict[str, str]:
    """What an MCP client passes a server (a few safe variables), plus PYTHONPATH when
    set: a checkout other than the installed one (a worktree) is then the code tested."""
    import os

    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def records_of(config: Path, *args: str) -> list[dict]:
    """The records of `config`'s store, oldest first, through `simroute records --json` (as a user reads them)."""
    import subprocess

    out = subprocess.run(
        [simroute_executable(), "records", "--json", "--config", str(config), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    # JSON Lines end at "\n" only: str.splitlines would also cut at U+2028, \x85… inside a value.
    return [json.loads(line) for line in out.stdout.split("\n") if line]


def meta_of(result) -> dict:
    return (result.meta or {}).get("simroute", {})


def model_path() -> Path:
    """The bundled GGUF world model (installed by scripts/setup.sh). A missing file
    fails the tests that need it: it is part of the set-up, not optional."""
    import os

    path = Path(
        os.environ.get("SIMROUTE_TEST_MODEL", "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ).expanduser()
    if not path.is_file():
        raise RuntimeError(f"world model {path} is missing: run scripts/setup.sh")
    return path


NOTES_STORE = ROOT / "tests" / "servers" / "notes_store.py"


def notes_server(state: Path | None = None) -> dict:
    """The stateful notes store written for the tests (empty at every start); with
    `state`, it writes its notes there after every change."""
    return {
        "command": sys.executable,
        "args": [str(NOTES_STORE)],
        **({"env": {"NOTES_STATE": str(state)}} if state else {}),
    }


def child_commands(pid: int) -> list[str]:
    """The command lines of the processes `pid` started (e.g. simroute's upstream MCP servers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
        if parent == pid:
            found.append(command)
    return found
