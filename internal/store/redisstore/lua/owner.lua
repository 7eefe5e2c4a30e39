-- owner.lua runs an owner's operation on one counter: set, lock, unlock
-- or del.
--
-- KEYS[1] is the counter's total, KEYS[2] its generation, KEYS[3] its
-- lock, KEYS[4] its count today, then its other days' counts (every day
-- Redis may still hold). ARGV[1] is the operation, ARGV[2] the total
-- (set), ARGV[3] a new generation (set, del), ARGV[4] how long a deleted
-- counter's generation is kept, in seconds.
--
-- set makes the total ARGV[2], deletes every day and writes the new
-- generation: deltas counted before it no longer match and are dropped
-- (lua/apply.lua). lock and unlock create the counter if needed (total
-- 0). All three return {total, today, locked}. del deletes the counter,
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
if op == 'set' then
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
return {tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(redis.call('GET', KEYS[4]) or '0'),
  redis.call('EXISTS', KEYS[3])}
