"""The world's state, kept outside the world model (issue 37).

A simulated tool answer is only as good as the world it describes: a model that tracks
files, listings and counters in its tokens forgets and contradicts them. Here each kind
of world keeps its state as plain, JSON-serialisable data, learns it from every answer
the agent gets (real, replayed or simulated, each with its provenance), and answers
itself whatever the state determines, so the model only writes what the state cannot.

One folder per kind of world, each a pure library (no I/O, no clock, no model):
`shell/` (a virtual filesystem, working directory, environment and last exit code,
driven by parsed bash command lines), `http/` (the resources of JSON APIs, by
collection and id, driven by each call's method and path). Who keeps a state per
session, and when the model is asked instead, is the engine's business, not this
package's (`session.py` the session slice, `simulation.py` the sim route's order,
`http_state.py` the HTTP answers and the recordings they start from).

May import: `calls`, `records` and `shadow` (as every backend), never `policies` or the
rest of `router`.
"""
