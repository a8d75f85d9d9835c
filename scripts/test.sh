#!/usr/bin/env bash
# The test suite on both cores (`make test` runs this after the set-up):
#   1. every test not marked `serial`, on two xdist workers; a module's tests stay on
#      one worker (--dist loadscope), so its module fixtures start once;
#   2. then the `serial` tests, one at a time: timing assertions, a fixed port (8766),
#      the GGUF world model against deadlines (they would measure the other worker).
# Tests marked `tune` (the training stack, a source package's download) are left to
# `make tune-check`.
# Both parts always run; the suite fails if either does. Extra arguments go to both
# pytest runs (`scripts/test.sh tests/unit`); a part they leave empty is no failure.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST=(.venv/bin/python -m pytest)
NO_TESTS=5  # pytest's exit status when a run selects no test

# --durations: each part names its slowest tests, so a slower suite says where.
"${PYTEST[@]}" -n 2 --dist loadscope -m "not serial and not tune" --durations=15 "$@"
parallel=$?
"${PYTEST[@]}" -m "serial and not tune" --durations=15 "$@"
serial=$?

if [[ $# -gt 0 ]]; then
    # With a selection, one part may be empty, never both.
    if [[ $parallel -eq $NO_TESTS && $serial -ne $NO_TESTS ]]; then parallel=0; fi
    if [[ $serial -eq $NO_TESTS && $parallel -ne $NO_TESTS ]]; then serial=0; fi
fi
echo "parallel part: exit $parallel; serial part: exit $serial"
if [[ $parallel -ne 0 ]]; then exit "$parallel"; fi
exit "$serial"
