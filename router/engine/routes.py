"""What each route answers when no addon answered first: `real` and `shadow` need the
real side (the front door's), `sim` asks the world model, `replay` serves a recorded
real answer (replay_modes.py says what a miss does), `fork` runs the call on a throwaway
copy of the session's state (or, where it cannot, simulates it and says why), `deny`
denies."""

from __future__ import annotations

import logging

from calls import Call, ForkRefused, Observation, Route, Session, Steer
from router.engine.parts import EngineParts
from router.engine.pending import Pending
from router.engine.replay_modes import replay_route

log = logging.getLogger("simroute.engine")

# MCP requests that are routed calls but not tool calls: the world model does not
# simulate them yet, so their sim route answers an error naming them.
_NOT_SIMULATED = frozenset({("mcp", "resources/read"), ("mcp", "prompts/get")})


async def execute(engine: EngineParts, pending: Pending) -> tuple[Observation | None, str]:
    """(observation, note) of the decided route; observation None: the real side answers."""
    decision, session = pending.decision, pending.session
    route = decision.route
    if route is Route.REAL or route is Route.SHADOW:
        return None, ""
    if route is Route.SIM:  # a paginated listing is asked for whole
        return await sim_route(engine, pending.stored_call, session, decision.deadline_s, pending.steer), ""
    if route is Route.FORK:
        return await fork_route(engine, pending)
    if route is Route.DENY:
        return Observation.error(f"simroute denied this call ({decision.policy}): {decision.reason}"), ""
    assert route is Route.REPLAY
    return await replay_route(
        pending,
        engine.replay,
        engine.replay_modes,
        lambda: sim_route(engine, pending.stored_call, session, decision.deadline_s, pending.steer),
    )


async def fork_route(engine: EngineParts, pending: Pending) -> tuple[Observation, str]:
    """The fork's answer; where the call cannot fork, the world model's, the reason noted."""
    call, session, decision = pending.call, pending.session, pending.decision
    try:
        if engine.forks is None or not engine.forks.can_fork(call.channel):
            raise ForkRefused(f"the {call.channel} channel cannot fork here")
        return await engine.forks.run(call, session, deadline_s=decision.deadline_s or engine.deadlines.real(call)), ""
    except ForkRefused as exc:
        note = f"not forked ({exc}): simulated instead"
    return await sim_route(engine, pending.stored_call, session, decision.deadline_s, pending.steer), note


async def sim_route(
    engine: EngineParts, call: Call, session: Session, deadline_s: float | None = None, steer: Steer | None = None
) -> Observation:
    """The world model's answer; never raises (an error observation says what failed)."""
    if (call.channel, call.tool) in _NOT_SIMULATED:
        return Observation.error(
            f"simroute: the sim route does not simulate {call.tool} yet (route it real, replay or deny)"
        )
    if engine.simulator is None:
        return Observation.error(
            "simroute: the sim route needs a world model, and none is configured (see the world_model section)"
        )
    try:
        return await engine.simulator.simulate(
            call, session, deadline_s=deadline_s or engine.deadlines.sim(call), steer=steer
        )
    except Exception as exc:
        log.exception("simulating %s.%s failed", call.server, call.tool)
        return Observation.error(f"simroute: the simulator failed: {type(exc).__name__}: {exc}")
