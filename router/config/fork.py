"""The `fork` section: throwaway copies of a session's real state that rehearsal runs
destructive calls against (backends/shell/forks.py)."""

from __future__ import annotations

from pydantic import Field, PositiveInt

from backends.options import Strict


class ForkConfig(Strict):
    """Forks: a session's shell state (`/workspace`, `/tmp`, `$HOME`, cwd, exported
    variables) copied into a fresh sandbox with no network, where calls routed `fork`
    run for real. A fork lives until its session closes."""

    max_bytes: PositiveInt = Field(
        default=256 * 1024 * 1024,
        description=(
            "The largest state a fork copies (bytes); a larger one is refused, the call simulated and the reason"
            " recorded."
        ),
    )
    max_per_token: PositiveInt = Field(
        default=8,
        description="Forks open at once per token (per router without tokens); a call past the cap is simulated.",
    )
    copy_timeout_s: PositiveInt = Field(
        default=60, description="Deadline of copying a session's state into its fork (seconds)."
    )
    workspaces: dict[str, str] = Field(
        default={},
        description=(
            "Host folders an episode may start from (name: path): `options.fork: NAME` at reset copies the folder into"
            " the episode's sandbox; the folder itself is only read."
        ),
    )
