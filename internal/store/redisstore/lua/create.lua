-- create.lua makes a counter, at 0, if it is not there: the check and
-- the creation of open creation (Store.Create) as one step.
--
-- KEYS[1] is the counter's total, present while the counter exists
-- (visits, set, add, lock and unlock all make it). It returns 1 if it
-- made the counter, 0 if it was there. The generation is kept: deltas
-- counted before a delete still find a tombstone they do not match.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], '0')
return 1
