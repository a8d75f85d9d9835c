"""What the policies raise, and who handles it.

Policies raise only while they are built or loaded, never while deciding:

- `PolicyConfigError` (a `ValueError`): a rule, pattern, mode or rehearsal setting
  that cannot work. Raised by `policies.rules.parse_rule`, `policies.matching`,
  `policies.chain.default_policies` and `RehearsalGate`; the config loader reports
  it with the setting's place in the file, and the router does not start.
- `ModelLoadError`: a learned model file that cannot be read, is not a simroute
  model or holds types it may not (`policies.learned.persistence`). The learned
  model service and the CLI catch it; a running router keeps its previous model.

`decide(call, session)` is pure and raises nothing by contract. Two boundaries
make a failure there safe anyway: the safety gate records a classifier that
raised as `unknown`, not analysed (rehearsal then keeps the call away from the
real side), and the engine turns any exception out of the chain into a denial —
a call is never served undecided.
"""

from __future__ import annotations


class PolicyError(Exception):
    """The base of what policies raise on purpose."""


class PolicyConfigError(PolicyError, ValueError):
    """A policy's configuration is invalid; the message names the setting and why."""


class ModelLoadError(PolicyError, RuntimeError):
    """A model file could not be read, is not a simroute model, or holds types it may not."""
