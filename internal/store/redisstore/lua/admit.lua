-- admit.lua registers a key in the set of every key, if the set has room.
--
-- KEYS[1] is the set; ARGV[1] the key; ARGV[2] the most keys (<= 0: no
-- limit). It returns how many keys the set holds with this one, or -1 if
-- the key is new and the set is full. Scripts run alone, so of two
-- instances racing for the last place exactly one gets it.
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return redis.call('SCARD', KEYS[1])
end
local n = redis.call('SCARD', KEYS[1])
local most = tonumber(ARGV[2])
if most > 0 and n >= most then
  return -1
end
redis.call('SADD', KEYS[1], ARGV[1])
return n + 1
