"""The shell channel's options (the `shell` section of the config file)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveFloat, PositiveInt

from backends.options import Strict


class ShellLimits(Strict):
    memory: str = Field(default="512m", description="Docker memory limit (swap included).")
    cpus: PositiveFloat = Field(default=1.0, description="CPUs the sandbox may use.")
    pids: PositiveInt = Field(default=256, description="Process limit; stops fork bombs inside the sandbox.")
    workspace_size: str = Field(default="512m", description="tmpfs size of `/workspace`.")
    tmp_size: str = Field(default="128m", description="tmpfs size of `/tmp`.")


class ShellConfig(Strict):
    """The shell channel: `shell_exec` on simroute's MCP endpoint, backed by a
    hardened Docker sandbox per agent session (real) or the Terminal world model (sim)."""

    enabled: bool = Field(default=True, description="Serve `shell_exec`.")
    image: str = Field(
        default="simroute-sandbox:latest", description="The sandbox image (built by `scripts/build-images.sh`)."
    )
    workspace: str | None = Field(
        default=None, description="A folder copied into `/workspace` at session start; relative to the config file."
    )
    network: bool = Field(default=False, description="Give sandboxes Docker's bridge network (off: no network at all).")
    pool_size: int = Field(
        default=2, ge=0, description="Sandboxes kept started, so a new session starts without `docker run`."
    )
    default_timeout_s: PositiveFloat = Field(
        default=30.0, description="A command's deadline when the agent gives none."
    )
    max_timeout_s: PositiveFloat = Field(default=600.0, description="The cap on the agent's `timeout_s`.")
    screen_lines: PositiveInt = Field(
        default=200,
        description="Output lines kept per command: the first quarter and the last lines, a marker between.",
    )
    screen_chars: PositiveInt = Field(default=16000, description="Output characters kept per command.")
    limits: ShellLimits = Field(default=ShellLimits(), description="Per-sandbox limits.")
    hostname: str = Field(default="sandbox", description="The sandbox's host name (also in the simulated prompt).")

    def command_timeout(self, requested: Any) -> float:
        """The deadline of one command: the agent's timeout_s, capped; else the default."""
        if isinstance(requested, (int, float)) and not isinstance(requested, bool) and requested > 0:
            return min(float(requested), self.max_timeout_s)
        return self.default_timeout_s
