"""The record filters the reading commands share (`records`, `export`, `judge`): one
declaration each, so a flag means and says the same everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

SinceOption = Annotated[str | None, typer.Option(help="Only records from the last 10m, 2h, 1d…, or since an ISO date.")]
UntilOption = Annotated[str | None, typer.Option(help="Only records before an ISO date (or 10m, 2h… ago).")]
ChannelOption = Annotated[str | None, typer.Option(help="Only this channel (mcp, shell, browser, http).")]
ToolOption = Annotated[str | None, typer.Option(help="Only this tool (TOOL or SERVER.TOOL).")]
ServerOption = Annotated[str | None, typer.Option(help="Only this server.")]
SessionOption = Annotated[str | None, typer.Option(help="Only this agent session.")]
