"""The Redis store for router replicas: `store.py` (`RedisStore`, composed of
`base.py` and the `writes`, `reads`, `maintenance`, `noise_table` and `models`
mixins), its Lua scripts and dashboard aggregates. The state router replicas share
beside the records (sessions, the guard, idempotency keys, episodes, leases) is
records/shared_state/, through the store's public `key` and `run`."""
