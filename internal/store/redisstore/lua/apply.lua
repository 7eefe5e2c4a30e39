-- apply.lua adds one flush round's deltas of one group of counters, once.
--
-- KEYS[1] is the instance's sequence key for the group. Then, per
-- counter: its total key, its key for today, its generation, its lock,
-- then one key per earlier day it has a delta for.
-- ARGV[1] is the round's sequence number, ARGV[2] the sequence key's
-- lifetime in seconds, ARGV[3] how many seconds today's key lives on.
-- Then, per counter: the generation its deltas were counted under ('*':
-- any, for visits not yet answered), today's delta, the number n of
-- earlier days, then n pairs of (delta, seconds to live). Lifetimes are
-- durations from the instance's clock, never times on Redis's clock
-- (dayTTL in keys.go).
--
-- If the group already holds this round or a later one (a retry of a
-- round whose answer was lost), nothing is added. A counter's deltas are
-- also dropped while it is locked, or if its generation is not theirs: a
-- Set or Delete came after they were counted. Either way it returns, per
-- counter, the total, today's count, each earlier day's count, the
-- generation, and flags: 1 locked, 2 the counter exists, 4 this round
-- created it, 8 the generation did not match.
--
-- Lua's numbers are doubles, exact only to 2^53, and an owner may set a
-- total up to 2^62, so no count is added or compared as a Lua number:
-- Redis adds (INCRBY, exact in 64 bits), and the answer carries a count
-- past 2^53 as GET reads it, a decimal string the store parses; the
-- sequence numbers are compared as decimal strings. Only the deltas are
-- Lua numbers: one round's visits, far below 2^53.
local function more(a, b) -- the decimal a is larger than the decimal b
  return #a > #b or (#a == #b and a > b)
end
-- incrby adds d to the count at name and returns the count exactly:
-- INCRBY's answer, a double, if it is below 2^53 (rounding keeps a
-- count past 2^53 at or above 2^53, so one below it is exact), else the
-- decimal string GET reads. Most answers need no GET, so a round costs
-- what it did.
local function incrby(name, d)
  local n = redis.call('INCRBY', name, d)
  if n < 9007199254740992 then
    return n
  end
  return redis.call('GET', name)
end
local fresh = more(ARGV[1], redis.call('GET', KEYS[1]) or '0')
if fresh then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
local out = {}
local k, a = 2, 4
while k <= #KEYS do
  local tk, dk, gk, lk = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local want = ARGV[a]
  local todayDelta = tonumber(ARGV[a + 1])
  local n = tonumber(ARGV[a + 2])
  k, a = k + 4, a + 3
  local gen = redis.call('GET', gk) or '0'
  local locked = redis.call('EXISTS', lk) == 1
  local existed = redis.call('EXISTS', tk) == 1
  local stale = want ~= '*' and want ~= gen
  local land = fresh and not locked and not stale
  local sum = todayDelta
  local days = {}
  for i = 1, n do
    local d = tonumber(ARGV[a])
    if land then
      days[i] = incrby(KEYS[k], d)
      redis.call('EXPIRE', KEYS[k], ARGV[a + 1])
    else
      days[i] = redis.call('GET', KEYS[k]) or '0'
    end
    sum = sum + d
    k, a = k + 1, a + 2
  end
  local total
  local created = false
  if land and sum > 0 then
    total = incrby(tk, sum)
    if not existed then
      created = true
      redis.call('PERSIST', gk) -- a tombstone becomes the live generation
    end
  else
    total = redis.call('GET', tk) or '0'
  end
  local today
  if land and todayDelta > 0 then
    today = incrby(dk, todayDelta)
    redis.call('EXPIRE', dk, ARGV[3])
  else
    today = redis.call('GET', dk) or '0'
  end
  out[#out + 1] = total
  out[#out + 1] = today
  for i = 1, n do
    out[#out + 1] = days[i]
  end
  out[#out + 1] = gen
  local flags = 0
  if locked then flags = flags + 1 end
  if existed or created then flags = flags + 2 end
  if created then flags = flags + 4 end
  if stale then flags = flags + 8 end
  out[#out + 1] = flags
end
return out
