-- create.lua makes a counter, at 0, if it is not there: the check and
-- the creation of open creation (Store.Create) as one step.
--
-- KEYS[1] is the counter's total, present while the counter exists
-- (visits, set, add, lock and unlock all make it). On a standalone
-- Redis, KEYS[2] is the hash of tokens, and the token (ARGV[1] its id,
-- ARGV[2] its record) is stored in the same step; on a cluster the hash
-- is in a slot of its own, and the caller stores it next. It returns 1
-- if it made the counter, 0 if it was there (and stored nothing). The
-- generation is kept: deltas counted before a delete still find a
-- tombstone they do not match.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], '0')
if #KEYS == 2 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
