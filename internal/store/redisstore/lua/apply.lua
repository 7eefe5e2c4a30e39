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
-- created it, 8 the generation did not match; and how many of its
-- visits were lost at the bounds of a count (store.MaxTotal in all,
-- store.MaxDay a day), where counts stop.
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
-- The bounds of a count: store.MaxTotal in all, store.MaxDay a day.
local MAXT, MAXD = '4611686018427387904', 549755813888
-- tail is the last 15 digits of the decimal a, exact as a Lua number.
local function tail(a)
  return tonumber(string.sub(a, -15))
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
  -- A count stops at its bound (MAXT in all, MAXD a day): the visits
  -- past it are lost, the latest first, from the day and the total
  -- alike, and returned as the counter's last value.
  -- A total already at (or, written before the bound, past) MAXT takes
  -- nothing, and is left as it is.
  local lost = 0
  local old = redis.call('GET', tk) or '0'
  local full = land and not more(MAXT, old)
  local names, exps, adds, days = {}, {}, {}, {}
  for i = 1, n do
    local d = tonumber(ARGV[a])
    names[i], exps[i] = KEYS[k], ARGV[a + 1]
    days[i] = redis.call('GET', KEYS[k]) or '0'
    if land then
      adds[i] = math.min(d, math.max(0, MAXD - tonumber(days[i])))
      if full then adds[i] = 0 end
      lost = lost + d - adds[i]
    end
    k, a = k + 1, a + 2
  end
  local today = redis.call('GET', dk) or '0'
  local addToday = 0
  if land then
    addToday = math.min(todayDelta, math.max(0, MAXD - tonumber(today)))
    if full then addToday = 0 end
    lost = lost + todayDelta - addToday
  end
  local sum = addToday
  for i = 1, n do
    if land then sum = sum + adds[i] end
  end
  local total
  local created = false
  if land and sum > 0 then
    total = incrby(tk, sum)
    if type(total) == 'string' and more(total, MAXT) then
      local over = tail(total) - tail(MAXT) -- below one round's visits
      if over < 0 then over = over + 1e15 end
      redis.call('SET', tk, MAXT, 'KEEPTTL')
      total = MAXT
      lost = lost + over
      local back = math.min(over, addToday)
      addToday, over = addToday - back, over - back
      for i = n, 1, -1 do
        back = math.min(over, adds[i])
        adds[i], over = adds[i] - back, over - back
      end
    end
    if not existed then
      created = true
      redis.call('PERSIST', gk) -- a tombstone becomes the live generation
    end
  else
    total = redis.call('GET', tk) or '0'
  end
  for i = 1, n do
    if land and adds[i] > 0 then
      days[i] = incrby(names[i], adds[i])
      redis.call('EXPIRE', names[i], exps[i])
    end
  end
  if addToday > 0 then
    today = incrby(dk, addToday)
    redis.call('EXPIRE', dk, ARGV[3])
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
  out[#out + 1] = lost
end
return out
