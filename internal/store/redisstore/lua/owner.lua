-- owner.lua runs an owner's operation on one counter: set, add, lock,
-- unlock or del.
--
-- KEYS[1] is the counter's total, KEYS[2] its generation, KEYS[3] its
-- lock, KEYS[4] its count today, then its other days' counts (every day
-- Redis may still hold). ARGV[1] is the operation, ARGV[2] the total
-- (set), ARGV[3] a new generation (set, del), ARGV[4] how long a deleted
-- counter's generation is kept, in seconds, ARGV[5] how many seconds
-- today's count lives on (add), ARGV[6] and ARGV[7] the most a total and
-- a day's count may be (add).
--
-- set makes the total ARGV[2], deletes every day and writes the new
-- generation: deltas counted before it no longer match and are dropped
-- (lua/apply.lua). lock and unlock create the counter if needed (total
-- 0). add adds ARGV[2], a signed integer, to the total and today's
-- count, each clamped at 0, keeping the generation, so that deltas
-- counted before it still add; a negative one deletes the other days. It
-- creates the counter if needed, and returns {-1, 0, 0}, changing
-- nothing, if a total or day would pass its most. All four return
-- {total, today, locked}, the counts as Redis's decimal strings: Lua's
-- numbers are doubles, exact only to 2^53, and a total may be up to
-- 2^62, so no count is ever a Lua number here (INCRBY's answer, a
-- double, is only tested for its sign). del deletes the counter,
-- its days and lock, keeps the new generation as a tombstone, and
-- returns {existed}.
local op = ARGV[1]
if op == 'del' then
  local existed = redis.call('EXISTS', KEYS[1]) + redis.call('EXISTS', KEYS[3])
  redis.call('DEL', KEYS[1], KEYS[3])
  local i = 4
  while i <= #KEYS do
    redis.call('DEL', unpack(KEYS, i, math.min(i + 499, #KEYS)))
    i = i + 500
  end
  redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4])
  if existed > 0 then
    return {1}
  end
  return {0}
end
-- more reports whether the decimal a is larger than the decimal b, both
-- non-negative: Lua's numbers are doubles, exact only to 2^53.
local function more(a, b)
  return #a > #b or (#a == #b and a > b)
end
if op == 'add' then
  local created = redis.call('SETNX', KEYS[1], '0') == 1
  if string.sub(ARGV[2], 1, 1) == '-' then
    if redis.call('INCRBY', KEYS[1], ARGV[2]) < 0 then
      redis.call('SET', KEYS[1], '0')
    end
    if redis.call('INCRBY', KEYS[4], ARGV[2]) <= 0 then
      redis.call('DEL', KEYS[4])
    else
      redis.call('EXPIRE', KEYS[4], ARGV[5])
    end
    local i = 5
    while i <= #KEYS do
      redis.call('DEL', unpack(KEYS, i, math.min(i + 499, #KEYS)))
      i = i + 500
    end
  else
    local total = redis.call('GET', KEYS[1])
    local today = redis.call('GET', KEYS[4]) or '0'
    redis.call('INCRBY', KEYS[1], ARGV[2])
    redis.call('INCRBY', KEYS[4], ARGV[2])
    if more(redis.call('GET', KEYS[1]), ARGV[6]) or more(redis.call('GET', KEYS[4]), ARGV[7]) then
      redis.call('SET', KEYS[1], total)
      if today == '0' then
        redis.call('DEL', KEYS[4])
      else
        redis.call('SET', KEYS[4], today, 'KEEPTTL')
      end
      if created then
        redis.call('DEL', KEYS[1])
      end
      return {-1, 0, 0}
    end
    redis.call('EXPIRE', KEYS[4], ARGV[5])
  end
  if created then
    redis.call('PERSIST', KEYS[2]) -- a tombstone becomes the live generation
  end
elseif op == 'set' then
  redis.call('SET', KEYS[1], ARGV[2])
  local i = 4
  while i <= #KEYS do
    redis.call('DEL', unpack(KEYS, i, math.min(i + 499, #KEYS)))
    i = i + 500
  end
  redis.call('SET', KEYS[2], ARGV[3])
else
  if redis.call('SETNX', KEYS[1], '0') == 1 then
    redis.call('PERSIST', KEYS[2]) -- a tombstone becomes the live generation
  end
  if op == 'lock' then
    redis.call('SET', KEYS[3], '1')
  else
    redis.call('DEL', KEYS[3])
  end
end
return {redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[4]) or '0', redis.call('EXISTS', KEYS[3])}
