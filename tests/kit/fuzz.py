"""What the fuzz suites share (tests/fuzz): how many cases a surface gets, the seed,
the settings for fuzzing a live process, and a tally of the cases each surface ran.

`SIMROUTE_FUZZ_EXAMPLES` sets the cases per surface (CI's default is a smoke count;
`make fuzz` runs 5,000). `SIMROUTE_FUZZ_SEED` reruns a run: every suite prints the
seed it used, so a failure in CI can be replayed exactly.
"""

from __future__ import annotations

import os
import random
from collections import Counter

from hypothesis import HealthCheck, seed, settings

EXAMPLES = int(os.environ.get("SIMROUTE_FUZZ_EXAMPLES", "150"))
SEED = int(os.environ.get("SIMROUTE_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
CASES: Counter[str] = Counter()

# A live process answers in milliseconds, not microseconds: no per-example deadline
# (a slow case is a latency question, not a fuzz failure), no example database (a
# clean clone must behave like any other run), and the process fixture is shared.
_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)


def fuzz(test=None, *, share: float = 1.0):
    """A Hypothesis test with the suites' settings and seed; `share` scales the cases
    (a surface driven through process I/O runs fewer: `@fuzz(share=1 / 3)`)."""

    def apply(function):
        return seed(SEED)(settings(_SETTINGS, max_examples=max(int(EXAMPLES * share), 10))(function))

    return apply(test) if test is not None else apply


def tally(surface: str) -> None:
    CASES[surface] += 1


def report() -> str:
    rows = "\n".join(f"  {surface}: {count} cases" for surface, count in sorted(CASES.items()))
    return f"fuzz seed {SEED} (SIMROUTE_FUZZ_SEED={SEED} reruns it)\n{rows}"
