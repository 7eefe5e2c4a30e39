-- uniques.lua adds one flush round's unique visitors of one group of
-- counters to their HyperLogLogs, and counts them.
--
-- KEYS, per counter and day: its HyperLogLog of the day, its total.
-- ARGV, per counter and day: how many seconds the HyperLogLog lives on,
-- the number n of visitors, then the n visitors, each its
-- 64-bit keyed hash as 8 bytes.
--
-- A counter whose total does not exist (deleted, and not made again by
-- a round since) gets none: its visitors were counted before the
-- Delete. PFADD is idempotent, so a round sent again changes nothing.
-- It returns, per counter and day, PFCOUNT of the HyperLogLog: a Lua
-- number, exact below 2^53, which a day's unique visitors never near
-- (visits alone never do; an owner's Set and Add add none).
local out = {}
local a = 1
for k = 1, #KEYS, 2 do
  local hll, tk = KEYS[k], KEYS[k + 1]
  local exp = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  if n > 0 and redis.call('EXISTS', tk) == 1 then
    local i = a
    while i < a + n do
      redis.call('PFADD', hll, unpack(ARGV, i, math.min(i + 499, a + n - 1)))
      i = i + 500
    end
    redis.call('EXPIRE', hll, exp)
  end
  a = a + n
  out[#out + 1] = redis.call('PFCOUNT', hll)
end
return out
