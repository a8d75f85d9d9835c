"""The call's trace span as the current context, for the work a call causes: the
real request (so what reaches the upstream continues the call's trace) and its
shadow work. The tracing addon (router/addons/tracing.py) sets `Pending.span`;
without it (tracing off) these do nothing. Only the OpenTelemetry API is imported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, MutableMapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

from router.engine.pending import Pending


@contextlib.contextmanager
def as_current(pending: Pending) -> Iterator[None]:
    """The call's span as the current one inside the block (nothing when it has none)."""
    if pending.span is None:
        yield
        return
    token = otel_context.attach(trace.set_span_in_context(pending.span))
    try:
        yield
    finally:
        otel_context.detach(token)


def inject(pending: Pending, carrier: MutableMapping[str, str]) -> bool:
    """Writes the call's trace context into `carrier` (the headers of the request sent
    to the real side): the same trace, the call's span as the parent. False (the
    carrier unchanged) when the call has no span."""
    if pending.span is None:
        return False
    propagate.inject(carrier, context=trace.set_span_in_context(pending.span))
    return True
