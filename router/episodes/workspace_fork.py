"""An episode started from a fork of a workspace folder (`options.fork: NAME`, one of
the config's `fork.workspaces`): the folder is copied into the episode's sandbox at
reset (backends/shell/workspace_fork.py), before its initial files, which overlay it.
The folder is only read; the copy goes with the episode's sandbox."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import ForkUnavailable
from backends.shell.workspace_fork import copy_folder
from router.episodes.episode import Episode
from router.episodes.routes import shell_is_real

if TYPE_CHECKING:
    from router.runtime.parts import McpParts

log = logging.getLogger("simroute.episodes")


async def fork_workspace(parts: McpParts, episode: Episode) -> None:
    name = episode.options.fork
    if name is None:
        return
    folder = Path(parts.config.fork.workspaces[name])
    section = parts.config.fork
    try:
        if parts.shell is None or not shell_is_real(episode.session, parts.engine.policies):
            raise ForkUnavailable("the episode's shell is simulated: a workspace fork needs its real sandbox")
        await parts.shell.exec(episode.session_id, "true", timeout_s=60.0)  # the episode's sandbox, started
        shell = parts.shell.real_shell(episode.session_id)
        if shell is None:
            raise ForkUnavailable("the episode has no sandbox")
        copied = await asyncio.to_thread(
            copy_folder, shell, folder, limit=section.max_bytes, timeout_s=section.copy_timeout_s
        )
    except Exception as exc:  # noqa: BLE001 -- a reset's boundary: a failed copy flags the episode, it does not fail the reset
        episode.infra_error = True
        log.warning("episode %s: forking workspace %r failed: %s", episode.id, name, exc)
        return
    log.info("episode %s: started from a fork of workspace %r (%d bytes)", episode.id, name, copied)
