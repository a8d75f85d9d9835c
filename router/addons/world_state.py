"""Keeps each session's world state (backends/world_state) from every answer the agent
gets, on every route, so real, replayed and simulated steps tell one consistent world:
a real `echo x > f` is in the state a later simulated `cat f` reads, a real `POST
/items` in the state a later simulated `GET /items/{id}` reads.

- `decided`: a shell or HTTP call about to run: with a Redis store, the session's
  world of that kind is read from the shared state first when another replica saved
  it since this one last held it (`WorldVersions`, a few bytes loaded with every
  call's claim, says so: the world itself, up to 256 KB, is read only then); a
  shell's is then made if there is none (a fresh sandbox's, with the configured
  workspace's files).
- `finished`: the answer's lesson learnt (the call's effects, what the answer shows, a
  simulated answer's marked invented: session.py `learn_call`), unless the answer came
  from the state itself (its effects are applied already), was perturbed, or was
  simroute's own; then shared. Learning from the record as stored means what the state holds, and what
  reaches Redis or a prompt from it, is redacted as records are.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from backends.world_state.session import WorldState
from backends.world_state.shell import seed_files
from calls import Provenance, SessionSlice
from records.record import Record
from records.store.protocol import StoreError
from router.engine.addons import CallAddon
from router.engine.pending import Pending

if TYPE_CHECKING:
    from router.engine.parts import EngineParts

log = logging.getLogger("simroute.world_state")

KINDS = ("shell", "http")  # the channels whose calls the state follows (a field of WorldState each)


@dataclass(slots=True)
class WorldVersions(SessionSlice):
    """Which save of each kind of the session's world the shared state holds (`shared`,
    loaded with every call's claim) and which one this replica's copy is (`held`): a
    replica reads a world from Redis only when the two differ."""

    key: ClassVar[str] = "worldv"
    shared: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)

    def fields(self) -> dict[str, str]:
        return dict(self.shared)

    def merge(self, fields: Mapping[str, str]) -> None:
        self.shared.update(fields)

    def stale(self, kind: str) -> bool:
        saved = self.shared.get(kind)
        return saved is not None and saved != self.held.get(kind)


class WorldStateKeeper(CallAddon):
    def __init__(
        self,
        *,
        on_for: Callable[[str, str], bool] = lambda channel, server: True,
        workspace_files: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        self.on_for = on_for  # the world_state section's switch, per (channel, server)
        self.workspace_files = workspace_files  # what a new sandbox's /workspace holds (shell.workspace)
        self.engine: EngineParts | None = None

    def load(self, engine: EngineParts) -> None:
        self.engine = engine

    async def decided(self, pending: Pending) -> None:
        call, session = pending.call, pending.session
        if call.channel not in KINDS or not self.on_for(call.channel, call.server) or self.engine is None:
            return
        state, versions = self.engine.session_state, session.slice(WorldVersions)
        if versions.stale(call.channel):  # (one router: never, its versions are its own)
            try:
                stored = await state.read(session, WorldState, call.channel)
            except StoreError as exc:  # this replica's own copy stands until Redis is back
                log.warning("world state of session %s not read: %s", session.id[:8], exc)
                stored = None
            if stored is not None:
                world = session.slice(WorldState)
                world.merge({call.channel: stored})
                world.synced = {**(world.synced or {}), call.channel: stored}
                versions.held[call.channel] = versions.shared[call.channel]
        world = session.slice(WorldState)
        if call.channel == "shell" and world.shell is None:
            seed_files(world.shell_world(), self.workspace_files())

    async def finished(self, pending: Pending, record: Record) -> None:
        call, served = record.call, record.served
        if call.channel not in KINDS or not self.on_for(call.channel, call.server) or self.engine is None:
            return
        if record.perturbation is not None or served.provenance is Provenance.NONE or record.status == "started":
            return
        if pending.session.slice(WorldState).learn_call(call, served, at=record.ts):
            await self._share(pending, call.channel)

    async def _share(self, pending: Pending, kind: str) -> None:
        assert self.engine is not None
        state, session = self.engine.session_state, pending.session
        # One router's `save` keeps nothing beyond the slices: its versions only agree with themselves.
        versions = session.slice(WorldVersions)
        version = uuid.uuid4().hex[:12]
        versions.shared[kind] = version
        try:
            await state.save(session, WorldState, WorldVersions)  # one transaction: the world and its version
        except StoreError as exc:  # kept on this replica; shared with its next save
            log.warning("world state of session %s not shared: %s", session.id[:8], exc)
            return
        versions.held[kind] = version


def workspace_reader(
    folder: object, *, max_files: int = 200, max_bytes: int = 256 * 1024
) -> Callable[[], Mapping[str, str]]:
    """The text files of the configured shell workspace (`shell.workspace`), as a new
    sandbox's /workspace holds them (relative path -> text), within the state's caps;
    read once, on the first session that needs them."""
    from pathlib import Path

    @functools.cache
    def read() -> Mapping[str, str]:
        if folder is None or not Path(str(folder)).is_dir():
            return {}
        root, used = Path(str(folder)), 0
        files: dict[str, str] = {}
        for path in sorted(root.rglob("*")):
            if len(files) >= max_files or used >= max_bytes:
                break
            if path.is_file():
                try:
                    text = path.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                files[path.relative_to(root).as_posix()] = text
                used += len(text.encode())
        return files

    return read
