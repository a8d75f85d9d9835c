"""What replay does on a miss and whether it records: VCR's record modes.

- `new_episodes` (default): replay what is recorded; a miss goes real (recorded).
- `none`: replay only; a miss is an error.
- `once`: a call nothing recorded yet goes real (recorded); a call that has a
  recording is replayed, and running past it is an error: recording stops.
- `all`: the replay route always goes real, and is recorded.
`on_miss` (`real`, `sim`, `error`), when given, decides misses whatever the mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

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
