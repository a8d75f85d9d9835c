"""Two pieces of work timed back to back on the same input, many times: the
interleaved pairs the latency benchmarks compare (what is measured and its
baseline see the same machine state)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any


def paired_timings(
    inputs: Iterator[Any], first: Callable[[Any], Any], second: Callable[[Any], Any], *, iterations: int, warmup: int
) -> tuple[list[float], list[float]]:
    """Microseconds of `first(x)` and of `second(x)` for `iterations` inputs, after
    `warmup` untimed ones (caches, branch predictors, the allocator)."""
    firsts: list[float] = []
    seconds: list[float] = []
    for i in range(iterations + warmup):
        x = next(inputs)
        started = time.perf_counter_ns()
        first(x)
        middle = time.perf_counter_ns()
        second(x)
        ended = time.perf_counter_ns()
        if i >= warmup:
            firsts.append((middle - started) / 1000)
            seconds.append((ended - middle) / 1000)
    return firsts, seconds
