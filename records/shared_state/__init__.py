"""Shared state: what a router keeps per session, per upstream, per key or per
replica, in this process with the embedded store (SQLite: one router) or in Redis
with a Redis store (replicas). The choice is made once, here: `StoreLocation`
(location.py) says where the configured store lives and opens it; `SharedState`
(deployment.py) hands out each kind of shared state for the store opened. Nothing
outside this room asks whether the store is Redis (it reads the `shared` flag).

Each kind is one protocol with its local and Redis implementations side by side:

- `session_state.py` / `session_state_redis.py`: a session's step, replay-key
  occurrences and slices (routing marks, facts, counters).
- `guard_slots.py` / `guard_slots_redis.py`: the upstream guard's breakers, slots
  and budgets, and their rules.
- `answers_redis.py`: answers kept by idempotency key (one router keeps them in the
  session: router/mcp/idempotency_keys.py).
- `episode_rows.py` / `episode_rows_redis.py`: the rows another replica takes an
  episode over from.
- `replicas_redis.py`: replica leases and backend claims (one router has none:
  router/runtime/replica.py).

The Redis implementations go through the store's public methods (`key`, `run`),
never its private helpers. May import: `calls` and
`records.store`.
"""
