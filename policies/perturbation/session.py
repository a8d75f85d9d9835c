"""A session's perturbation state, as a slice (calls.SessionSlice): an
episode's own plan (kept in the process: the episode's options rebuild it), the call
numbers its rules claimed (counters, shared by replicas: a seeded plan gives the same
perturbations whichever replica serves a call), and the pages of paginated listings
still to be served, by cursor (shared: a follow-up call gets its page anywhere)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from calls import CountingSlice
from policies.perturbation.plan import Plan


@dataclass(slots=True)
class PerturbationState(CountingSlice):
    key: ClassVar[str] = "perturbation"
    plan: Plan | None = None
    counts: dict[str, int] = field(default_factory=dict)
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def fields(self) -> dict[str, str]:
        return {cursor: json.dumps(page, ensure_ascii=False) for cursor, page in self.pages.items()}

    def field(self, name: str) -> str | None:
        page = self.pages.get(name)
        return json.dumps(page, ensure_ascii=False) if page is not None else None

    def merge(self, fields: Mapping[str, str]) -> None:
        self.pages.update({cursor: json.loads(page) for cursor, page in fields.items()})
