"""Which writes change which reads, learned from real answers over time.

A real call not classed `safe` may have changed its server. Without evidence the
learned router assumes it changed everything there (no recording of that server
is replayed to the session afterwards). With evidence it is scoped: when a read's
real answer is compared with its previous real answer (same replay key, any
session) and writes of the same server ran in between, an unchanged answer says
those writes leave that read alone, a changed one says they may not. A read is
free of a write once it stayed unchanged across it and never changed across it
(so a counter's `current_ticket` stays bound to `next_ticket`, while
`server_version` replays after it).
"""

from __future__ import annotations

from collections import Counter, OrderedDict

from calls import Observation

MAX_KEYS = 100_000  # replay keys whose last real answer is kept (oldest forgotten first)


class WriteEffects:
    def __init__(self) -> None:
        # (channel, server) -> write tool key -> real runs so far.
        self._writes: dict[tuple[str, str], Counter[str]] = {}
        # replay key -> (last real answer, the server's write counts when it was given)
        self._last: OrderedDict[str, tuple[Observation, dict[str, int]]] = OrderedDict()
        # (read tool key, write tool key) -> answers unchanged across it.
        self.unchanged: Counter[tuple[str, str]] = Counter()
        self.changed: Counter[tuple[str, str]] = Counter()  # ... -> answers changed across it

    def wrote(self, channel: str, server: str, write_key: str) -> None:
        self._writes.setdefault((channel, server), Counter())[write_key] += 1

    def read(self, channel: str, server: str, read_key: str, replay_key: str, observation: Observation, same) -> None:
        """A real answer of a read. `same(previous, observation)`: whether two answers agree."""
        writes = self._writes.get((channel, server))
        now = dict(writes) if writes else {}
        previous = self._last.get(replay_key)
        if previous is not None:
            before_answer, before_counts = previous
            between = [write for write, count in now.items() if count > before_counts.get(write, 0)]
            if between:
                tally = self.unchanged if same(before_answer, observation) else self.changed
                for write in between:
                    tally[(read_key, write)] += 1
            self._last.move_to_end(replay_key)
        self._last[replay_key] = (observation, now)
        while len(self._last) > MAX_KEYS:
            self._last.popitem(last=False)

    def independent(self) -> dict[str, frozenset[str]]:
        """read tool key -> the write tool keys known to leave its answers unchanged."""
        out: dict[str, set[str]] = {}
        for (read, write), count in self.unchanged.items():
            if count and not self.changed.get((read, write)):
                out.setdefault(read, set()).add(write)
        return {read: frozenset(writes) for read, writes in out.items()}
