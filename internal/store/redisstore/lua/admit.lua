-- admit.lua registers a key in the sorted set of every key, if the set
-- has room.
--
-- KEYS[1] is the sorted set; ARGV[1] the key; ARGV[2] the most keys (<= 0:
-- no limit); ARGV[3], if 'claim', asks to admit the key only if it is
-- new (Store.Create); if 'visit', asks for a visit's admission
-- (Store.Visit), and ARGV[4] is '1' if the visit may make the key, '0'
-- if it may not. It returns how many keys the set holds with this one,
-- -1 if the key is new and the set is full, or -2 if a claim finds the
-- key there: a visit on some instance admitted it (before counting it),
-- or an owner's call, or another Create. A visit's admission returns
-- {n, made} instead: n as above, or -3 if the key is new and the visit
-- may not make it; made is 1 if this run added the key. Scripts run
-- alone, so of two instances racing for the last place exactly one gets
-- it, and of two visits racing to make one key exactly one is told it
-- made it. The numbers are counts of keys, far below 2^53, where Lua's
-- numbers (doubles) are exact.
local visit = ARGV[3] == 'visit'
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if ARGV[3] == 'claim' then
    return -2
  end
  if visit then
    return {redis.call('ZCARD', KEYS[1]), 0}
  end
  return redis.call('ZCARD', KEYS[1])
end
if visit and ARGV[4] ~= '1' then
  return {-3, 0}
end
local n = redis.call('ZCARD', KEYS[1])
local most = tonumber(ARGV[2])
if most > 0 and n >= most then
  if visit then
    return {-1, 0}
  end
  return -1
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
if visit then
  return {n + 1, 1}
end
return n + 1
