-- atleast.lua raises the /hi counter to ARGV[1] if it is lower, so that
-- an import never makes a number repeat. It returns the counter, as
-- Redis's decimal string: an imported number may pass 2^53, past which
-- Lua's numbers (doubles) are not exact, so it compares decimals.
local function more(a, b) -- the decimal a is larger than the decimal b
  return #a > #b or (#a == #b and a > b)
end
local cur = redis.call('GET', KEYS[1]) or '0'
if more(ARGV[1], cur) then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return cur
