"""The Redis store's Lua scripts: each runs atomically in one round trip.

UPSERT writes one record with every index entry and aggregate (see
records/store/redis/store.py for what they hold); PRUNE takes one record and its counts
back; WRITES_BETWEEN answers the noise learner's question about a server's writes.
"""

# One record, written with its index entries and the aggregates counted at write time.
UPSERT = """
local p, id, body = ARGV[1], ARGV[2], ARGV[3]
local ts, session, step = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local rkey, occ, recording = ARGV[7], ARGV[8], ARGV[9]
local prov, status, ckey, tkey = ARGV[10], ARGV[11], ARGV[7], ARGV[13]
local channel, route, maxlen, cap = ARGV[14], ARGV[15], ARGV[16], tonumber(ARGV[17])
local prev = redis.call('HGET', p .. ':status', id)
redis.call('SET', p .. ':rec:' .. id, body)
redis.call('HSET', p .. ':status', id, status)
redis.call('XADD', p .. ':log', 'MAXLEN', '~', maxlen, '*', 'id', id, 'status', status)
redis.call('ZADD', p .. ':all', ts, id)
redis.call('ZADD', p .. ':session:' .. session, step, id)
redis.call('HSET', p .. ':occ:' .. rkey .. ':' .. session, occ, id)
local servable = ARGV[24] == '1'
redis.call('ZADD', p .. ':made:' .. rkey, ts, session)
if servable then redis.call('ZADD', p .. ':sources:' .. rkey, ts, session) end
if recording ~= '' then
  if servable then redis.call('ZADD', p .. ':recsrc:' .. recording .. ':' .. rkey, ts, session) end
  redis.call('SADD', p .. ':recordings', recording)
  redis.call('SADD', p .. ':recording:' .. recording .. ':sessions', session)
  redis.call('HSETNX', p .. ':recording:' .. recording, 'first', ts)
  redis.call('HSET', p .. ':recording:' .. recording, 'last', ts)
  if not prev then redis.call('HINCRBY', p .. ':recording:' .. recording, 'records', 1) end
end
if prov == 'real' then
  for _, k in ipairs({p .. ':ex:tool:' .. tkey, p .. ':ex:call:' .. ckey}) do
    redis.call('ZADD', k, ts, id)
    redis.call('ZREMRANGEBYRANK', k, 0, -(cap + 1))
  end
end
-- A call that may have written to its server, by the end of its span (records/store/server_writes.py).
local server, writes_until = ARGV[21], ARGV[22]
if writes_until ~= '' then redis.call('ZADD', p .. ':writes:' .. server, writes_until, id) end
if status == 'pending' then redis.call('ZADD', p .. ':pending', ts, id) else redis.call('ZREM', p .. ':pending', id) end
if status == 'started' then redis.call('ZADD', p .. ':started', ts, id) else redis.call('ZREM', p .. ':started', id) end
if (not prev or prev == 'started') and status ~= 'started' then
  local agg = p .. ':agg'
  redis.call('HINCRBY', agg, 'total', 1)
  redis.call('HINCRBY', agg, 'channel:' .. channel, 1)
  redis.call('HINCRBY', agg, 'route:' .. route, 1)
  redis.call('HINCRBY', agg, 'provenance:' .. prov, 1)
end
-- The dashboard's aggregates (records/store/redis/dashboard.py): calls per minute by
-- route, channel and provenance; per hour by tool; a shadow pair once per record.
local tool, div, kind, sep = ARGV[18], ARGV[19], ARGV[20], string.char(31)
local minute, hour = math.floor(ts / 60) * 60, math.floor(ts / 3600) * 3600
local dim = sep .. route .. sep .. channel .. sep .. prov
local mkey, hkey = p .. ':dash:m:' .. minute, p .. ':dash:h:' .. hour
if (not prev or prev == 'started') and status ~= 'started' then
  redis.call('HINCRBY', mkey, 'calls' .. dim, 1)
  redis.call('ZADD', p .. ':dash:minutes', minute, minute)
  redis.call('HINCRBY', hkey, tool .. sep .. 'calls', 1)
  redis.call('ZADD', p .. ':dash:hours', hour, hour)
end
if div ~= '' and redis.call('HSETNX', p .. ':dash:shadowed', id, 1) == 1 then
  redis.call('HINCRBY', mkey, 'shadowed' .. dim, 1)
  if tonumber(div) > 0 then redis.call('HINCRBY', mkey, 'divergent' .. dim, 1) end
  redis.call('HINCRBY', hkey, tool .. sep .. 'pairs', 1)
  redis.call('HINCRBYFLOAT', hkey, tool .. sep .. 'divsum', div)
  redis.call('HINCRBY', hkey, tool .. sep .. 'kind:' .. kind, 1)
  -- Per hour, tool and the simulated side's sub-provenance, in a hash of their own
  -- (a reader of the tool hash above meets only the fields it knows).
  local skey, sdim = p .. ':dash:s:' .. hour, tool .. sep .. ARGV[23] .. sep
  redis.call('HINCRBY', skey, sdim .. 'pairs', 1)
  if tonumber(div) > 0 then redis.call('HINCRBY', skey, sdim .. 'divergent', 1) end
  redis.call('HINCRBYFLOAT', skey, sdim .. 'divsum', div)
end
return prev
"""


# One pruned record: its keys and index entries go, and what the write script added
# to the aggregates (store totals, the dashboard's minutes and hours) is taken back,
# so the dashboard and /metrics count what the store holds.
PRUNE = """
local p, id, ts, session = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local rkey, occ, tkey = ARGV[5], ARGV[6], ARGV[7]
local channel, route, prov, tool, div, kind = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local prev = redis.call('HGET', p .. ':status', id)
if not prev then return 0 end
redis.call('DEL', p .. ':rec:' .. id)
redis.call('ZREM', p .. ':all', id)
redis.call('HDEL', p .. ':status', id)
redis.call('ZREM', p .. ':session:' .. session, id)
redis.call('HDEL', p .. ':occ:' .. rkey .. ':' .. session, occ)
redis.call('ZREM', p .. ':ex:call:' .. rkey, id)
redis.call('ZREM', p .. ':ex:tool:' .. tkey, id)
redis.call('ZREM', p .. ':writes:' .. ARGV[14], id)
local sep = string.char(31)
local dim = sep .. route .. sep .. channel .. sep .. prov
local minute, hour = math.floor(ts / 60) * 60, math.floor(ts / 3600) * 3600
local mkey, hkey = p .. ':dash:m:' .. minute, p .. ':dash:h:' .. hour
-- A count that reaches zero is removed, so an emptied minute or hour reads as absent.
local function down(key, field)
  if redis.call('HINCRBY', key, field, -1) <= 0 then redis.call('HDEL', key, field) end
end
if prev ~= 'started' then
  local agg = p .. ':agg'
  for _, field in ipairs({'total', 'channel:' .. channel, 'route:' .. route, 'provenance:' .. prov}) do \
down(agg, field) end
  down(mkey, 'calls' .. dim)
  down(hkey, tool .. sep .. 'calls')
end
if redis.call('HDEL', p .. ':dash:shadowed', id) == 1 then
  down(mkey, 'shadowed' .. dim)
  if div ~= '' and tonumber(div) > 0 then down(mkey, 'divergent' .. dim) end
  if redis.call('HINCRBY', hkey, tool .. sep .. 'pairs', -1) <= 0 then
    redis.call('HDEL', hkey, tool .. sep .. 'pairs', tool .. sep .. 'divsum')
  elseif div ~= '' then
    redis.call('HINCRBYFLOAT', hkey, tool .. sep .. 'divsum', -tonumber(div))
  end
  down(hkey, tool .. sep .. 'kind:' .. kind)
  local skey, sdim = p .. ':dash:s:' .. hour, tool .. sep .. ARGV[15] .. sep
  if redis.call('HINCRBY', skey, sdim .. 'pairs', -1) <= 0 then
    redis.call('HDEL', skey, sdim .. 'pairs', sdim .. 'divergent', sdim .. 'divsum')
  else
    if div ~= '' and tonumber(div) > 0 then down(skey, sdim .. 'divergent') end
    if div ~= '' then redis.call('HINCRBYFLOAT', skey, sdim .. 'divsum', -tonumber(div)) end
  end
end
if redis.call('EXISTS', mkey) == 0 then redis.call('ZREM', p .. ':dash:minutes', minute) end
if redis.call('EXISTS', hkey) == 0 then redis.call('ZREM', p .. ':dash:hours', hour) end
return 1
"""

# Whether a call that may have written to a server spans a moment from `since` to
# `until`: its end (the score) is at or after `since`, and its start (its score in
# the time index) at or before `until`. The range holds the writes since `since`
# only, as the learner asks soon after the answers it compares.
WRITES_BETWEEN = """
local p, writes, since, upto = ARGV[1], KEYS[1], ARGV[2], tonumber(ARGV[3])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', writes, since, '+inf')) do
  local start = redis.call('ZSCORE', p .. ':all', id)
  if start and tonumber(start) <= upto then return 1 end
end
return 0
"""
