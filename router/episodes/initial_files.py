"""An episode's initial files (`options.files`): a real shell gets them written into its
sandbox; a simulated one is told them in its world document and holds them in its
world state (backends/world_state), so its first `cat` reads them from state. Which
one the episode has is what its route decides for a harmless command now."""

from __future__ import annotations

import base64
import logging
import shlex
from typing import TYPE_CHECKING

from backends.world_state.session import WorldState
from backends.world_state.shell import seed_files
from calls import WorldDocuments
from records.store.protocol import StoreError
from router.episodes.episode import Episode
from router.episodes.routes import shell_is_real

if TYPE_CHECKING:
    from router.runtime.parts import McpParts

log = logging.getLogger("simroute.episodes")


async def write_initial_files(parts: McpParts, episode: Episode) -> None:
    files = episode.options.files
    if not files:
        return
    if parts.shell is not None and shell_is_real(episode.session, parts.engine.policies):
        script = " && ".join(
            f"mkdir -p {shlex.quote(_parent(path))} "
            f"&& printf %s {shlex.quote(base64.b64encode(text.encode()).decode())} "
            f"| base64 -d > {shlex.quote(path)}"
            for path, text in files.items()
        )
        try:
            result = await parts.shell.exec(episode.session_id, f"(cd /workspace && {script})", timeout_s=60.0)
            problem = result.error or (result.output[-200:] if result.exit_code != 0 else None)
        except Exception as exc:  # noqa: BLE001 -- a reset's boundary: no sandbox (no Docker engine) flags the episode, it does not fail the reset
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            episode.infra_error = True
            log.warning("episode %s: writing its initial files failed: %s", episode.id, problem)
        return
    listing = "\n".join(f"--- /workspace/{path} ---\n{text}" for path, text in files.items())
    episode.session.slice(WorldDocuments).by_channel["shell"] = f"Files in /workspace at the start:\n{listing}"
    if parts.config.world_state.on_for("shell", "shell"):  # the simulated shell's state holds them too
        seed_files(episode.session.slice(WorldState).shell_world(), files)
        try:
            await parts.engine.session_state.save(episode.session, WorldState)
        except StoreError as exc:  # this replica's copy serves; another replica reads it once Redis is back
            log.warning("episode %s: its initial files not shared: %s", episode.id, exc)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."
