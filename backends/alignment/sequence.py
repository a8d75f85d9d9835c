"""Where a call stands in a recorded session: the pure part of sequence-aligned replay.

A session's calls to one environment (a channel and server) are its sequence; other
channels' calls between them change nothing there. This session's sequence so
far, then the call, align with a recorded session's sequence at position p when
the recorded calls before p are the same tools in the same order, the call is the
recorded call at p, and one renaming (renaming.py) turns every recorded call's
arguments into this session's.

Anchored (both sequences known from their start), the call stands at p = the
number of calls this session made before it. When this session's start is no
longer in memory (its oldest turns were dropped), or only the end of a long
recording was read, its known calls are matched as a window: the earliest p at
which they and the call align.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backends.alignment.renaming import Renaming
from calls import Call


@dataclass(frozen=True, slots=True)
class Alignment:
    position: int  # the call's index in the recorded sequence
    renaming: Renaming


def same_environment(call: Call, other: Call) -> bool:
    return call.channel == other.channel and call.server == other.server


def align(recorded: Sequence[Call], known: Sequence[Call], call: Call, *, anchored: bool) -> Alignment | None:
    """Where `call` stands in `recorded` (a recorded session's calls to the call's
    environment, in order) when `known` (this session's calls there before it, in
    order) lead up to it; None when nowhere."""
    width = len(known)
    tools = [step.tool for step in known]
    positions = [width] if anchored else range(width, len(recorded))
    for position in positions:
        if position >= len(recorded) or recorded[position].tool != call.tool:
            continue
        if [step.tool for step in recorded[position - width : position]] != tools:
            continue
        renaming = Renaming()
        pairs = zip(recorded[position - width : position + 1], [*known, call], strict=True)
        if all(renaming.pair(theirs.arguments, ours.arguments) for theirs, ours in pairs):
            return Alignment(position, renaming)
    return None
