"""The Redis store for router replicas: `store.py` (`RedisStore`, composed of
`base.py` and the `writes`, `reads`, `maintenance`, `noise_table` and `models`
mixins), its Lua scripts, dashboard aggregates and shared session state."""
