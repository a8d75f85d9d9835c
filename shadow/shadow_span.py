"""The span of a call's shadow work: the simulated side run off the agent's path and
compared with the real answer. A child of the call's span (router/addons/tracing.py),
which ended when the agent was answered; this one ends when the divergence is scored,
and carries it (`simroute.divergence`, `simroute.divergence_kind`).

Only when tracing is on (the runner is given a tracer) and the work was submitted by a
traced call: work drained from the store after a restart has no trace to continue.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode

from records.record import Record


@contextlib.contextmanager
def shadow_span(tracer: trace.Tracer | None, parent: Context | None, record: Record) -> Iterator[None]:
    if tracer is None or parent is None:
        yield
        return
    call = record.call
    span = tracer.start_span(
        f"shadow {call.tool}",
        context=parent,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "simroute.channel": call.channel,
            "simroute.server": call.server,
            "simroute.record_id": record.id,
        },
    )
    try:
        yield
    except Exception as exc:  # recorded on the span, then raised on to the runner's own boundary
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.set_attribute("error.type", type(exc).__qualname__)
        raise
    finally:
        if record.shadow is not None:
            span.set_attribute("simroute.provenance", str(record.shadow.provenance))
        if record.divergence is not None:
            span.set_attributes(
                {"simroute.divergence": record.divergence, "simroute.divergence_kind": record.divergence_kind or ""}
            )
        span.end()
