"""The Redis store for router replicas: `store.py` (`RedisStore`, Streams and
indexes), its Lua scripts, dashboard aggregates and shared session state."""
