"""Sequence-aligned replay: a simulated call answered from a recorded real session
that made the same calls under a renaming of their values (issue 37, item 3).

`renaming.py` (a one-to-one renaming of values and path prefixes, and writing it
into a recorded answer), `sequence.py` (where a call stands in a recorded session),
`aligned_replay.py` (`AlignedReplay`: the store lookups and what may be served).
"""

from backends.alignment.aligned_replay import AlignedAnswer, AlignedReplay

__all__ = ["AlignedAnswer", "AlignedReplay"]
