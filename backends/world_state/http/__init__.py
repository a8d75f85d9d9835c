"""The resource state of the JSON APIs a session talks to over HTTP, and answers from it.

`store.py` the state (`HttpWorld`: per API, its collections of resources by id, and
how it writes its answers; JSON in and out); `messages.py` a call and its answer as the
state reads them; `shapes.py` listings, creates and updates as JSON; `ids.py` the ids a
collection hands out; `observe.py` learns the state from an answer the agent got
(`observe`); `executor.py` answers a call from it (`answer`); `caps.py` the bounds on
what one session keeps.

Pure and deterministic: no I/O, no clock, no randomness (new ids come from a digest).
"""

from backends.world_state.http.executor import HttpOutcome, answer
from backends.world_state.http.observe import observe
from backends.world_state.http.store import HttpWorld

__all__ = ["HttpOutcome", "HttpWorld", "answer", "observe"]
