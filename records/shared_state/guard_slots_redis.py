"""The upstream guard's state shared by router replicas through Redis: the same rules
as `LocalGuardState` (guard_slots.py), each step one Lua script, so a check and its
claim are atomic across replicas.

Keys, per upstream: a hash for the breaker (`failures`, `opened_at`, `trial_until`),
a sorted set of concurrency slots scored by their lease's end (a dead replica's slots
drop out when their lease ends), and one counter per token and budget window that
expires with its window. Times are the replicas' clocks (seconds since the epoch),
passed in: replicas must keep their clocks in step (NTP), as their leases assume.
"""

from __future__ import annotations

from typing import Any

from records.shared_state.guard_slots import CLOSED, HALF_OPEN, OPEN, Limits, Refusal, Verdict, window_of
from records.store.redis.base import RedisBase

_BREAKER_TTL_S = 7 * 86400  # a breaker nobody calls through is forgotten (closed) after a week

# KEYS: breaker, slots, budget counter.
# ARGV: now, max_concurrent (0: off), budget (0: off), seconds left in the window,
#       breaker failures (0: off), cool-down, slot, lease, breaker ttl.
# Returns {admitted, refusal, retry_after, breaker state, trial}; floats as strings
# (Redis turns a Lua number into an integer).
_ACQUIRE = """
local now = tonumber(ARGV[1])
local cap, budget, left = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local threshold, cooldown = tonumber(ARGV[5]), tonumber(ARGV[6])
local slot, lease, ttl = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local state, trial = 'closed', 0
if threshold > 0 then
  local opened = tonumber(redis.call('HGET', KEYS[1], 'opened_at') or '')
  if opened then
    if now < opened + cooldown then
      return {0, 'breaker_open', tostring(opened + cooldown - now), 'open', 0}
    end
    local trial_until = tonumber(redis.call('HGET', KEYS[1], 'trial_until') or '') or 0
    if trial_until > now then
      return {0, 'breaker_trial', tostring(math.min(trial_until - now, cooldown)), 'half_open', 0}
    end
    state, trial = 'half_open', 1
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if cap > 0 and redis.call('ZCARD', KEYS[2]) >= cap then
  return {0, 'concurrency', '1', state, 0}
end
if budget > 0 then
  local used = tonumber(redis.call('GET', KEYS[3]) or '0')
  if used >= budget then
    return {0, 'budget', tostring(left), state, 0}
  end
  redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], math.ceil(left) + 1)
end
redis.call('ZADD', KEYS[2], now + lease, slot)
redis.call('EXPIRE', KEYS[2], math.ceil(lease) + 1)
if trial == 1 then
  redis.call('HSET', KEYS[1], 'trial_until', tostring(now + lease))
  redis.call('EXPIRE', KEYS[1], ttl)
end
return {1, '', '0', state, trial}
"""

# KEYS: breaker, slots. ARGV: now, breaker failures (0: off), cool-down, slot, trial (1/0),
# outcome, breaker ttl. Returns the breaker's state after.
_RELEASE = """
redis.call('ZREM', KEYS[2], ARGV[4])
local now, threshold, cooldown = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if threshold <= 0 then return 'closed' end
local trial, outcome = ARGV[5] == '1', ARGV[6]
if trial then redis.call('HDEL', KEYS[1], 'trial_until') end
local opened = tonumber(redis.call('HGET', KEYS[1], 'opened_at') or '')
if outcome == 'failure' then
  local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
  if trial or (not opened and failures >= threshold) then
    redis.call('HSET', KEYS[1], 'opened_at', ARGV[1])
    opened = now
  end
elseif outcome == 'success' then
  if trial then
    redis.call('HDEL', KEYS[1], 'opened_at')
    opened = nil
  end
  if not opened then redis.call('HSET', KEYS[1], 'failures', 0) end
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[7]))
if not opened then return 'closed' end
if now < opened + cooldown then return 'open' end
return 'half_open'
"""


class RedisGuardState:
    shared = True

    def __init__(self, store: RedisBase) -> None:
        self.store = store  # a RedisStore: its client, prefix and error translation
        self._scripts: tuple[Any, Any] | None = None

    def _script(self, client: Any, which: int) -> Any:
        if self._scripts is None:
            self._scripts = (client.register_script(_ACQUIRE), client.register_script(_RELEASE))
        return self._scripts[which]

    def _keys(self, upstream: str) -> tuple[str, str]:
        return self.store.key("guard", upstream, "breaker"), self.store.key("guard", upstream, "slots")

    async def acquire(
        self, upstream: str, token: str, limits: Limits, *, slot: str, lease_s: float, now: float
    ) -> Verdict:
        breaker, slots = self._keys(upstream)
        window, left_s = window_of(now, limits.budget_window_s)
        spent = self.store.key("guard", upstream, "budget", token or "-", str(window))
        args: list[float | str] = [
            now,
            limits.max_concurrent or 0,
            limits.budget or 0,
            left_s,
            limits.breaker_failures,
            limits.breaker_cooldown_s,
        ]
        args += [slot, lease_s, _BREAKER_TTL_S]
        admitted, refusal, retry_after, state, trial = await self.store.run(
            "checking the upstream guard", lambda r: self._script(r, 0)(keys=[breaker, slots, spent], args=args)
        )
        return Verdict(
            bool(int(admitted)), Refusal(refusal) if refusal else None, float(retry_after), str(state), bool(int(trial))
        )

    async def release(self, upstream: str, limits: Limits, *, slot: str, trial: bool, outcome: str, now: float) -> str:
        breaker, slots = self._keys(upstream)
        args = [now, limits.breaker_failures, limits.breaker_cooldown_s, slot, int(trial), str(outcome), _BREAKER_TTL_S]
        state = await self.store.run(
            "releasing an upstream guard slot", lambda r: self._script(r, 1)(keys=[breaker, slots], args=args)
        )
        return str(state) if state in (CLOSED, OPEN, HALF_OPEN) else CLOSED
