"""Where, within its provenance, an observation came from (`calls.Observation.source`).

A leaf module of `calls` (which re-exports `Source`): it imports nothing
from simroute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Source:
    """Where, within its provenance, an observation came from: one extensible value
    that records, exports, `_meta.simroute` and the HTTP headers carry as it is (and
    /metrics by its `sub`), so a new kind of answer is a new value here, not a new
    column anywhere.

    `sub`: how a simulated answer was made (`model`: the world model wrote it).
    `model`: the model that answered (a GGUF file's name, a served model's name).
    `extra`: any other key (written by a newer simroute, or a later feature such as
    a fork's id), kept as it came so that a record round-trips unchanged. Immutable
    by contract: do not change `extra` in place."""

    sub: str | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """Only the keys that are set ({} for an empty source, which is left out)."""
        known = {name: value for name, value in (("sub", self.sub), ("model", self.model)) if value is not None}
        return {**known, **self.extra}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Source:
        # A known key of another type (a newer format) stays in `extra`: kept, not misread.
        known = {name: data[name] for name in ("sub", "model") if isinstance(data.get(name), str)}
        return cls(**known, extra={key: value for key, value in data.items() if key not in known})
