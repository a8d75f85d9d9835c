"""What the learned router knows besides its model, held in memory and replaced
whole (one reference swap) when refreshed off the decision path: per-tool
statistics (and per sub-provenance of sim answers, subs.py), the few-label estimates
(prior.py), the replay keys that have a real recording, and which writes leave which
reads unchanged (write_effects.py).
With tokens on, statistics are per token namespace, each merged with the shared
namespaces' (tenancy.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from policies.learned.echoes import EchoIndex
from policies.learned.features import ToolStats
from policies.learned.labels import ROUTES, LabelBuilder
from policies.learned.prior import fit_prior
from policies.learned.subs import sub_priors
from policies.learned.tenancy import NO_TOKENS, Tenancy

DEFAULT_PRIOR_STRENGTH = 4.0


@dataclass(frozen=True, slots=True)
class LearnedState:
    stats: dict[str, ToolStats] = field(default_factory=dict)
    # (tool key, route) -> the estimate of P(acceptable) from the tool's labels and its kind's prior
    priors: dict[tuple[str, str], float] = field(default_factory=dict)
    recorded_keys: frozenset[str] = frozenset()
    sim_latency_s: float = 1.0  # mean simulated answer time over all tools (a tool with none yet)
    labels: int = 0
    # read tool key -> the write tool keys of its server known to leave its answers unchanged
    independent: dict[str, frozenset[str]] = field(default_factory=dict)
    echoes: EchoIndex = EchoIndex()  # recordings replayable for another value of an echoed argument
    tenancy: Tenancy = NO_TOKENS  # how the keys above are kept per token namespace
    # Per (tool, sub-provenance) of sim answers (subs.py): statistics, keyed `sub_key(tool key, sub)`,
    # and the estimate of P(acceptable); per tool key, the sub most of its simulated answers came with.
    sub_stats: dict[str, ToolStats] = field(default_factory=dict)
    sub_priors: dict[str, float] = field(default_factory=dict)
    usual_subs: dict[str, str] = field(default_factory=dict)

    def recorded(self, replay_key: str, session_id: str) -> bool:
        """Whether replay has a real recording of `replay_key` the session may be served
        (its own namespace's or a shared one's)."""
        return any(key in self.recorded_keys for key in self.tenancy.visible_keys(replay_key, session_id))


EMPTY_STATE = LearnedState()


class StateBuilder:
    """Feeds records to a `LabelBuilder` as they come and makes state snapshots."""

    def __init__(
        self, *, max_divergence: float, prior_strength: float = DEFAULT_PRIOR_STRENGTH, tenancy: Tenancy = NO_TOKENS
    ) -> None:
        self.labels = LabelBuilder(max_divergence=max_divergence, tenancy=tenancy)
        self.tenancy = tenancy
        self.prior_strength = prior_strength
        self.count = 0
        self._recorded: frozenset[str] = frozenset()
        self._recorded_version = -1

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.add_row(row)

    def add_row(self, row: dict[str, Any]) -> list:
        labels = self.labels.add(row)
        self.count += len(labels)
        return labels

    def snapshot(self) -> LearnedState:
        stats = self.tenancy.views({key: replace(s) for key, s in self.labels.stats.items()})
        sub_stats = self.tenancy.views({key: replace(s) for key, s in self.labels.subs.stats.items()})
        # The world model's own speed (not any token's data): over every namespace, once each.
        sim_time = sum(s.sim_latency for s in self.labels.stats.values())
        sim_answers = sum(s.sim_answers for s in self.labels.stats.values())
        priors: dict[tuple[str, str], float] = {}
        for route in ROUTES:
            by_kind: dict[str, list[tuple[str, int, int]]] = {}
            for key, s in stats.items():
                n, ok = s.labels(route), s.successes(route)
                # The kind (channel), in its namespace: priors are per token too.
                by_kind.setdefault(key.split("\x1f", 1)[0], []).append((key, ok, n - ok))
            for tools in by_kind.values():
                prior = fit_prior(((ok, bad) for _, ok, bad in tools), strength=self.prior_strength)
                for key, ok, bad in tools:
                    priors[(key, route)] = prior.mean(ok, bad)
        if self._recorded_version != self.labels.recorded_version:  # copied only when it changed
            self._recorded, self._recorded_version = frozenset(self.labels.recorded_keys), self.labels.recorded_version
        return LearnedState(
            stats,
            priors,
            self._recorded,
            sim_time / sim_answers if sim_answers else 1.0,
            self.count,
            self.labels.writes.independent(),
            self.labels.echoes.index(),
            self.tenancy,
            sub_stats,
            sub_priors(sub_stats, strength=self.prior_strength),
            self.labels.subs.usual(),
        )
