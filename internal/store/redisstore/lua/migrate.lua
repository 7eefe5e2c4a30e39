-- migrate.lua moves the set of every key, kept by stores before List,
-- into the sorted set that replaces it (every score 0, so ZRANGE BYLEX
-- is byte order), and deletes the set. A store runs it when it opens; it
-- does nothing when there is no set.
--
-- KEYS[1] is the old set, KEYS[2] the sorted set. It returns the sorted
-- set's size.
local members = redis.call('SMEMBERS', KEYS[1])
local batch = {}
for i, m in ipairs(members) do
  batch[#batch + 1] = 0
  batch[#batch + 1] = m
  if #batch >= 1000 or i == #members then
    redis.call('ZADD', KEYS[2], unpack(batch))
    batch = {}
  end
end
redis.call('DEL', KEYS[1])
return redis.call('ZCARD', KEYS[2])
