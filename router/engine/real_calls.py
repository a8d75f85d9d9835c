"""The real side's call as the engine makes it: under its deadline, behind the
upstream guard (upstream_guard.py). Front doors that send the real call themselves
(the HTTP proxy) use `admit_real` and `release_real` around it."""

from __future__ import annotations

import logging
import time

import anyio

from router.engine.guard_state import Outcome
from router.engine.pending import Pending
from router.engine.upstream_guard import Refused, Ticket, UpstreamGuard
from router.types import Call, CallNext, Observation, Provenance

log = logging.getLogger("simroute.engine")


async def call_real(call: Call, real: CallNext, deadline: float) -> tuple[Observation, bool]:
    """(observation, whether the real side raised or missed its deadline): never raises."""
    started = time.perf_counter()
    try:
        with anyio.fail_after(deadline):
            return await real(call), False
    except TimeoutError:
        # simroute's own answer (provenance none): never replayed as the upstream's.
        message = f"simroute: upstream {call.server!r} did not answer {call.tool!r} within its {deadline:g}s deadline"
        return Observation.error(message, Provenance.NONE, time.perf_counter() - started), True
    except Exception as exc:  # the real side's boundary (see engine.py): an error observation
        log.exception("the real side of %s.%s raised", call.server, call.tool)
        message = f"simroute: the real side of {call.tool!r} failed: {type(exc).__name__}: {exc}"
        return Observation.error(message, Provenance.NONE, time.perf_counter() - started), True


async def admit_real(guard: UpstreamGuard | None, pending: Pending, deadline_s: float) -> Ticket | Refused | None:
    """The guard's verdict on sending `pending` to the real side (None: no guard, or
    its shared state unreachable: sent unguarded); the record's note says why."""
    if guard is None:
        return None
    ticket = await guard.admit(pending.call, deadline_s=deadline_s)
    note = ticket.note if isinstance(ticket, Refused) else "upstream guard unavailable: sent unguarded" if ticket is None else ""
    if note:
        pending.route_note = "; ".join(n for n in (pending.route_note, note) if n)
    return ticket


async def release_real(guard: UpstreamGuard | None, ticket: Ticket, outcome: Outcome) -> None:
    """The real side answered (or not): the slot freed, the breaker told; never cancelled half-way."""
    if guard is None:
        return
    with anyio.CancelScope(shield=True):
        await guard.release(ticket, outcome)
