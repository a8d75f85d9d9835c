"""The upstream guard: the addon and its checks (guard.py), what it hands around
(state.py: tickets, refusals), and its refusals in each channel's shape (shapes.py).
The rules and their state, kept in the process or shared through Redis, are
records/shared_state/guard_slots.py and guard_slots_redis.py."""
