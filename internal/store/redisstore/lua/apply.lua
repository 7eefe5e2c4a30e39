-- apply.lua adds one flush round's deltas of one group of counters, once.
--
-- KEYS[1] is the instance's sequence key for the group. Then, per
-- counter: its total key, its key for today, then one key per earlier
-- day it has a delta for.
-- ARGV[1] is the round's sequence number, ARGV[2] the sequence key's
-- lifetime in seconds, ARGV[3] the time (Unix seconds) today's key
-- expires at. Then, per counter: today's delta, the number n of earlier
-- days, then n pairs of (delta, expire-at).
--
-- If the group already holds this round or a later one (a retry of a
-- round whose answer was lost), nothing is added. Either way it returns,
-- per counter, the total, today's count and each earlier day's count.
local seq = tonumber(ARGV[1])
local fresh = tonumber(redis.call('GET', KEYS[1]) or '0') < seq
if fresh then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
local out = {}
local k, a = 2, 4
while k <= #KEYS do
  local tk, dk = KEYS[k], KEYS[k + 1]
  local todayDelta = tonumber(ARGV[a])
  local n = tonumber(ARGV[a + 1])
  k, a = k + 2, a + 2
  local sum = todayDelta
  local days = {}
  for i = 1, n do
    local d = tonumber(ARGV[a])
    if fresh then
      days[i] = redis.call('INCRBY', KEYS[k], d)
      redis.call('EXPIREAT', KEYS[k], ARGV[a + 1])
    else
      days[i] = tonumber(redis.call('GET', KEYS[k]) or '0')
    end
    sum = sum + d
    k, a = k + 1, a + 2
  end
  local total, today
  if fresh and sum > 0 then
    total = redis.call('INCRBY', tk, sum)
  else
    total = tonumber(redis.call('GET', tk) or '0')
  end
  if fresh and todayDelta > 0 then
    today = redis.call('INCRBY', dk, todayDelta)
    redis.call('EXPIREAT', dk, ARGV[3])
  else
    today = tonumber(redis.call('GET', dk) or '0')
  end
  out[#out + 1] = total
  out[#out + 1] = today
  for i = 1, n do
    out[#out + 1] = days[i]
  end
end
return out
