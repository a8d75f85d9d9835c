"""Whether the configured MCP servers can start: what `simroute check-config` says.

Without starting anything, a stdio server's command must be found on the `PATH` it will
run with (its entry's own `PATH`, else simroute's) and its `cwd` must exist. Started
(`--start`), each real server must finish its handshake within the start deadline and
list its tools.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from backends.mcp.servers import RealServerSpec, StdioServer
from backends.mcp.upstream import UpstreamError, UpstreamPool


def command_problem(spec: RealServerSpec, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why a stdio server cannot be started (its command or folder is missing), or None."""
    if not isinstance(spec, StdioServer):
        return None
    path = spec.env.get("PATH", environ.get("PATH", ""))
    if shutil.which(spec.command, path=path) is None:
        return (
            f"command {spec.command!r} not found on PATH ({path or 'empty'}): "
            "install it, put it on PATH, or give its absolute path"
        )
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        return f"cwd {spec.cwd!r} is not a folder"
    return None


async def start_problem(server: str, spec: RealServerSpec, *, timeout_s: float) -> tuple[str | None, int]:
    """(why the server failed to start or list its tools, or None; how many tools it listed)."""
    pool = UpstreamPool({server: spec}, connect_timeout_s=timeout_s)
    try:
        client = await pool.client_for("check-config", server)
        tools = await client.list_tools()
    except UpstreamError as exc:
        return str(exc), 0
    except Exception as exc:  # noqa: BLE001 -- a check's boundary: whatever the started server did wrong is reported, not raised
        return f"upstream {server!r} started but did not list its tools: {type(exc).__name__}: {exc}", 0
    finally:
        await pool.aclose()
    return None, len(tools)
