"""Shared state: what a router keeps per session, per upstream, per key or per
replica, in this process with the embedded store (SQLite: one router) or in Redis
with a Redis store (replicas). The choice is made once, here: `StoreLocation`
(location.py) says where the configured store lives and opens it; `SharedState`
(deployment.py) hands out each kind of shared state for the store opened. Nothing
outside this room asks whether the store is Redis; the one rule that is not a kind
of state (other replicas take turns in a session: its history is in the store) is
`SharedState.replicas_share_sessions`.

Each kind is one protocol with its local and Redis implementations side by side:

- `session_state.py` / `session_state_redis.py`: a session's step, replay-key
  occurrences and slices (routing marks, facts, counters).
- `guard_slots.py` / `guard_slots_redis.py`: the upstream guard's breakers, slots
  and budgets, and their rules.
- `answers.py` / `answers_redis.py`: answers kept by idempotency key (one router
  keeps them in the session); `answered_once.py`, a request answered once per key in
  this process.
- `episode_rows.py` / `episode_rows_redis.py`: the rows another replica takes an
  episode over from.
- `shadow_stream.py` / `shadow_stream_redis.py`: the stream replicas put shadow work
  on for `simroute worker` (one router has none: it does its own; the work itself is
  shadow/worker.py's).
- `replicas.py` / `replicas_redis.py`: replica leases and backend claims (one router:
  no lease, every claim its own; what a replica does with them:
  router/runtime/replica.py).
- `published_models.py` / `published_models_redis.py`: the learned router's model
  as `simroute reload` publishes it (one router: its file, which it watches).
- `adopted_world_model.py` / `adopted_world_model_redis.py`: the world model
  `simroute tune --adopt` made routers use, and the ones before it (`--revert`).

The Redis implementations go through the store's public methods (`key`, `run`,
`bodies`), never its private helpers. May import: `calls`, `records.owners`,
`records.errors` and `records.store`.
"""
