"""The real side's call as the engine makes it (under its deadline, never raising),
and how the real side did (`RealOutcome`), which addons' `after_real` are told: the
upstream guard's breaker counts failures by it."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TYPE_CHECKING

import anyio

from calls import Call, CallNext, Observation, Provenance

if TYPE_CHECKING:
    from records.redaction import Redactor

log = logging.getLogger("simroute.engine")


class RealOutcome(StrEnum):
    SUCCESS = "success"  # the real side answered (a tool's own error included)
    FAILURE = "failure"  # the real side did not: timeout, connection error, 5xx, transport error
    NEUTRAL = "neutral"  # nothing learned about the real side (cancelled, never sent)


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


def outcome_of(
    call: Call, observation: Observation, *, raised: bool = False, session_closed: bool = False
) -> RealOutcome:
    """How the real side did. A failure: a deadline passed, a connection or transport
    error, a 5xx answer, i.e. an answer simroute made itself because the real side did
    not answer (provenance `none`) or an HTTP status >= 500. A tool's own error
    (`isError` from the upstream, a command's non-zero exit) is an answer: a success.
    A call whose session closed while it ran failed because simroute tore that
    session's upstream down: it says nothing of the upstream."""
    if session_closed:
        return RealOutcome.NEUTRAL
    if raised:
        return RealOutcome.FAILURE
    structured = observation.structured
    if call.channel == "http" and isinstance(structured, dict) and isinstance(structured.get("status"), int):
        return RealOutcome.FAILURE if structured["status"] >= 500 else RealOutcome.SUCCESS
    if call.channel == "browser":  # its own refusals (address policies) are provenance none too: only deadlines count
        return RealOutcome.SUCCESS
    return (
        RealOutcome.FAILURE
        if observation.is_error and observation.provenance is Provenance.NONE
        else RealOutcome.SUCCESS
    )


def bounded(
    again: Callable[[], Awaitable[Observation]], deadline_s: float, redactor: Redactor | None, session_id: str
) -> Callable[[], Awaitable[Observation]]:
    """`again` (a finished call sent again off the agent's path) under the call's
    deadline, its answer redacted like the record's."""

    async def answer() -> Observation:
        with anyio.fail_after(deadline_s):
            observation = await again()
        return redactor.observation(observation, session_id=session_id) if redactor is not None else observation

    return answer
