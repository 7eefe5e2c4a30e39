-- tokendel.lua removes one token if it is the one the caller read.
--
-- KEYS[1] is the hash of tokens, ARGV[1] the token's id, ARGV[2] the
-- SHA-256 of its secret in hex, as its record holds it. It deletes the
-- field ARGV[1] only if its record's sha256 is ARGV[2], so that a token
-- that replaced it under the same id stays, and returns 1 if it did, 0
-- if not.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 0
end
local ok, r = pcall(cjson.decode, v)
if not ok or type(r) ~= 'table' or r.sha256 ~= ARGV[2] then
  return 0
end
return redis.call('HDEL', KEYS[1], ARGV[1])
