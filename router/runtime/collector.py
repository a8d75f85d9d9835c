"""The cycle collector's settings for a long-lived router process.

A router at load keeps a large live heap (open sessions, their histories, calls in
flight: 1,000 episodes stepped at load held 50,000–200,000 tracked objects), and CPython 3.13's collector is not
incremental: a full collection walks all of it on the event loop, 100–200 ms during
which no call is answered. Two settings keep those pauses out of the calls' latency:

- What is alive once started (modules, the config, compiled patterns, tables) lives as
  long as the process: frozen, out of the generations, so no collection walks it.
  Garbage is collected first: frozen cycles would never be.
- The young generation is collected after 20,000 net allocations instead of 2,000
  (a call's short-lived objects are freed by reference counting long before), the
  middle one after 20 young ones instead of 10, and a full collection after 100
  middle ones instead of 10: at 200 calls/s, minutes apart instead of seconds.
  Acyclic garbage is still freed at once; only cycles wait for a full collection.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # CPython's default: 2,000
MIDDLE_THRESHOLD = 20  # CPython's default: 10
FULL_THRESHOLD = 100  # CPython's default: 10


def settle_after_start() -> None:
    """Freeze what start-up built and space out the collections (see the module doc)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, FULL_THRESHOLD)
