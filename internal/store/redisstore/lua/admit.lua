-- admit.lua registers a key in the sorted set of every key, if the set
-- has room.
--
-- KEYS[1] is the sorted set; ARGV[1] the key; ARGV[2] the most keys (<= 0:
-- no limit). It returns how many keys the set holds with this one, or -1
-- if the key is new and the set is full. Scripts run alone, so of two
-- instances racing for the last place exactly one gets it. The numbers
-- are counts of keys, far below 2^53, where Lua's numbers (doubles) are
-- exact.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return redis.call('ZCARD', KEYS[1])
end
local n = redis.call('ZCARD', KEYS[1])
local most = tonumber(ARGV[2])
if most > 0 and n >= most then
  return -1
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return n + 1
