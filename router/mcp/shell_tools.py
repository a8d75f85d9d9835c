"""The shell channel's tool surface on simroute's MCP endpoint: `shell_exec`.

The tool function is the real side (the session's Docker sandbox); the routing
middleware decides per call whether it runs or the Terminal world model answers
instead, with an observation of the same shape.
"""

# No `from __future__ import annotations`: the tool signature below is read at run time.

from typing import Annotated

from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field

from backends.errors import BackendUnavailable
from backends.shell.sandboxes import Sandboxes
from router.config import ShellConfig
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.results import own_answer_meta

CHANNEL = "shell"

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "output": {"type": "string", "description": "stdout and stderr as a terminal shows them, trimmed"},
        "exit_code": {
            "type": ["integer", "null"],
            "description": "null when unknown (timed out, shell exited, not shown by a simulation)",
        },
        "cwd": {"type": ["string", "null"], "description": "working directory after the command; null when unknown"},
        "timed_out": {"type": "boolean"},
        "truncated": {"type": "boolean"},
        "reset": {"type": "string", "description": "present when the sandbox was reset before this command, and why"},
        "error": {"type": "string", "description": "present when something around the command failed"},
    },
    "required": ["output", "exit_code", "cwd", "timed_out", "truncated"],
}


def shell_tools(sandboxes: Sandboxes, config: ShellConfig) -> list[LocalTool]:
    async def shell_exec(
        command: Annotated[
            str, Field(min_length=1, description="A bash command line; runs in the session's persistent shell.")
        ],
        timeout_s: Annotated[
            float | None,
            Field(
                gt=0,
                description=(
                    f"Deadline in seconds (default {config.default_timeout_s:g}, at most {config.max_timeout_s:g})."
                ),
            ),
        ] = None,
    ) -> ToolResult:
        session_id = agent_session_id(get_context())
        try:
            result = await sandboxes.exec(session_id, command, timeout_s=config.command_timeout(timeout_s))
        except BackendUnavailable as exc:
            # No sandbox to run in (no Docker engine, a failed preparation, stopping): simroute's
            # own answer, said in the result rather than raised (a traceback logged per call).
            return ToolResult(
                content=[TextContent(type="text", text=f"simroute: {exc}")], is_error=True, meta=own_answer_meta()
            )
        return ToolResult(
            content=[TextContent(type="text", text=result.text())],
            structured_content=result.structured(),
            is_error=result.is_error,
        )

    tool = Tool.from_function(
        shell_exec,
        name="shell_exec",
        description=(
            "Run a shell command in this session's Linux sandbox (Debian, bash, user agent, /workspace). "
            "The working directory, environment variables and background jobs persist between calls. "
            "Returns the output (trimmed like a terminal screen), the exit code and the working directory."
        ),
        annotations=ToolAnnotations(title="Run a shell command", destructiveHint=True, openWorldHint=False),
        output_schema=OUTPUT_SCHEMA,
    )
    return [LocalTool(tool, channel=CHANNEL, server=CHANNEL)]
