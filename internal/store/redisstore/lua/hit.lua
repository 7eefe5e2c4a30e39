-- hit.lua adds ARGV[2] to the /hi counter KEYS[1] (a Sync /hi: 1; a
-- Batch reservation: a block), unless it is already at ARGV[1]
-- (store.MaxHits): then it returns -1 and the counter stays, so that
-- what it holds is a counter an import takes again. It returns the
-- counter after the add, as the string Redis holds: near 2^62 Lua's
-- numbers (doubles) are 512 apart, so the counter is never one here.
local cur = redis.call('GET', KEYS[1]) or '0'
if #cur > #ARGV[1] or (#cur == #ARGV[1] and cur >= ARGV[1]) then
  return -1
end
redis.call('INCRBY', KEYS[1], ARGV[2])
return redis.call('GET', KEYS[1])
