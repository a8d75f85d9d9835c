"""Pure routing decisions: `decide(call, session) -> Decision | None`, run in order,
first answer wins (`base.py`).

`chain.py` builds the chain (`default_policies()`); `safety/` classifies every call
(safe, side effect, destructive) and gates it; `rules.py` parses and applies the
config's rules; `rehearsal.py` diverts what rehearsal must not send real; `sticky.py`
keeps a stateful channel on one side for a session; `tunnels.py` refuses raw TCP;
`mode.py` is the default route; `learned/` is the learned router. What policies
raise, and who handles it: `errors.py`.

May import: `calls`, `shadow` (divergence labels) and `records` (a record's
sub-provenance), nothing else of the project; no I/O on the decision path. This `__init__` imports nothing, so importing
one policy never loads the rest.
"""
