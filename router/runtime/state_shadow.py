"""The shadow side of a shell call the session's world state answers: what the sim route
would have served (backends/world_state/simulation.py answers such a line from state),
made when the call is answered, on a copy of the state as it stood before the call's
real answer is learnt (the world-state addon learns after, at `finished`), so the
session's state is unchanged and no model is asked. A line the state cannot answer
gets no shadow side here: its shadow work asks the world model as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from backends.world_state.session import FROM_STATE, WorldState
from backends.world_state.shell import run
from calls import Call, Observation, Provenance, Session, Source


def state_answer(
    on_for: Callable[[str, str], bool], *, screen_lines: int, screen_chars: int
) -> Callable[[Call, Session], Observation | None]:
    """The hook for `ShadowSampling(state_answer=…)`; `on_for`: the world_state section's switch."""

    def answer(call: Call, session: Session) -> Observation | None:
        command = call.arguments.get("command")
        if call.channel != "shell" or not isinstance(command, str) or not on_for(call.channel, call.server):
            return None
        world = session.slice(WorldState).shell
        if world is None:
            return None
        started = time.perf_counter()
        copy = world.copy()
        copy.clock = max(copy.clock, time.time())  # `ls -l` dates, as the sim route sets them
        outcome = run(copy, command, screen_lines=screen_lines, screen_chars=screen_chars)
        if outcome is None:
            return None
        result = outcome.to_result()
        extra = {"invented": True} if outcome.invented else {}
        return Observation(
            [{"type": "text", "text": result.text()}],
            Provenance.SIM,
            is_error=result.is_error,
            structured=result.structured(),
            latency_s=time.perf_counter() - started,
            source=Source(sub=FROM_STATE, extra=extra),
        )

    return answer
