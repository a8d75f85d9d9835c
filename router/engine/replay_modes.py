"""What replay does on a miss and whether it records: VCR's record modes.

- `new_episodes` (default): replay what is recorded; a miss goes real (recorded).
- `none`: replay only; a miss is an error.
- `once`: a call nothing recorded yet goes real (recorded); a call that has a
  recording is replayed, and running past it is an error: recording stops.
- `all`: the replay route always goes real, and is recorded.
`on_miss` (`real`, `sim`, `error`), when given, decides misses whatever the mode.
An episode's own `on_miss` (its reset's option, else `episodes.on_miss`, default
`error`) comes first: an episode's replay never goes real unless it asked to.
A virtual MCP server has no real side: its calls replay its own recording (when it has
one), never record real, and a miss is simulated whatever the modes say.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from backends.replay import ReplayBackend, ReplayHit, ReplayMiss
from calls import Observation
from policies.virtual import VirtualServers
from records.store.protocol import ReplaySource

if TYPE_CHECKING:
    from router.engine.pending import Pending

RecordMode = Literal["once", "new_episodes", "none", "all"]
MissAction = Literal["real", "sim", "error"]


class Miss(Protocol):
    @property
    def has_source(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ReplayModes:
    record_mode: RecordMode = "new_episodes"
    on_miss: MissAction | None = None
    recording: str | None = None  # sessions recorded now are tagged with this name
    # The virtual MCP servers: their replays come from their own recordings, and a miss
    # is simulated (they have no real side).
    virtual: VirtualServers = field(default_factory=VirtualServers)

    def on_miss_for(self, miss: Miss) -> MissAction:
        if self.on_miss is not None:
            return self.on_miss
        if self.record_mode == "none":
            return "error"
        if self.record_mode == "once":
            return "error" if miss.has_source else "real"
        return "real"

    def describe_miss_policy(self) -> str:
        if self.on_miss is not None:
            return f"replay.on_miss is {self.on_miss!r}"
        return f"replay.record_mode is {self.record_mode!r}"


async def replay_route(
    pending: Pending,
    replay: ReplayBackend,
    modes: ReplayModes,
    simulate: Callable[[], Awaitable[Observation]],
) -> tuple[Observation | None, str]:
    """(observation, note) of the replay route; observation None: the real side answers."""
    call, occurrence, virtual = pending.call, pending.occurrence, modes.virtual
    no_real_side = virtual.is_virtual(call)
    if modes.record_mode == "all" and not no_real_side:
        return None, "replay.record_mode is 'all': served real and recorded"
    alias = pending.decision.replay_as  # a recording made for another value of an argument the tool only echoes
    recording = virtual.recording_of(call)
    source = ReplaySource(recording) if recording is not None else None  # a virtual server's own recording
    key = alias.key if alias is not None else pending.keys.replay
    found = await replay.lookup(call, pending.session, occurrence=occurrence, key=key, substitute=alias, source=source)
    if isinstance(found, ReplayHit):
        also = f", made for {alias.argument} {alias.recorded!r}, the value substituted" if alias is not None else ""
        return found.observation, f"replayed record {found.record_id} (occurrence {occurrence}{also})"
    assert isinstance(found, ReplayMiss)
    miss = f"replay miss (occurrence {occurrence}: {found.reason})"
    if no_real_side:  # the world model answers, flagged sim: never passed off as recorded
        return await simulate(), f"{miss}; virtual server {call.server!r}: served sim"
    setup = pending.session.episode
    episode_rule = setup.on_miss if setup is not None else None
    action: str = episode_rule or modes.on_miss_for(found)
    if action == "real":
        return None, f"{miss}; served real"
    if action == "sim":
        return await simulate(), f"{miss}; served sim"
    policy = f"the episode's on_miss is {episode_rule!r}" if episode_rule else modes.describe_miss_policy()
    return Observation.error(f"simroute: {miss}, and {policy}"), miss
