"""The upstream guard: the addon and its checks (guard.py), their rules kept in the
process (state.py) or shared through Redis (redis_state.py), and its refusals in
each channel's shape (shapes.py)."""
