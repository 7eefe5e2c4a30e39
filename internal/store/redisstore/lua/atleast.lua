-- atleast.lua raises the /hi counter to ARGV[1] if it is lower, so that
-- an import never makes a number repeat. It returns the counter.
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local want = tonumber(ARGV[1])
if cur < want then
  redis.call('SET', KEYS[1], ARGV[1])
  return want
end
return cur
