"""The shell channel's options (the `shell` section of the config file)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveFloat, PositiveInt

from backends.options import Strict


class ShellLimits(Strict):
    memory: str = "512m"  # Docker memory limit (swap included)
    cpus: PositiveFloat = 1.0
    pids: PositiveInt = 256  # stops fork bombs inside the sandbox
    workspace_size: str = "512m"  # tmpfs over /workspace
    tmp_size: str = "128m"  # tmpfs over /tmp


class ShellConfig(Strict):
    """The shell channel: `shell_exec` on simroute's MCP endpoint, backed by a
    hardened Docker sandbox per agent session (real) or the Terminal world model (sim)."""

    enabled: bool = True
    image: str = "simroute-sandbox:latest"  # built by scripts/build-images.sh
    workspace: str | None = None  # folder copied into /workspace at session start; relative to the config file
    network: bool = False  # opt in: the sandbox gets Docker's default bridge network
    pool_size: int = Field(default=2, ge=0)  # pre-started sandboxes: a new session starts without `docker run`
    default_timeout_s: PositiveFloat = 30.0  # per command, when the agent gives none
    max_timeout_s: PositiveFloat = 600.0  # cap on the agent's timeout_s
    screen_lines: PositiveInt = 200  # output kept per command: first and last lines, with a marker between
    screen_chars: PositiveInt = 16000
    limits: ShellLimits = ShellLimits()
    hostname: str = "sandbox"

    def command_timeout(self, requested: Any) -> float:
        """The deadline of one command: the agent's timeout_s, capped; else the default."""
        if isinstance(requested, (int, float)) and not isinstance(requested, bool) and requested > 0:
            return min(float(requested), self.max_timeout_s)
        return self.default_timeout_s
