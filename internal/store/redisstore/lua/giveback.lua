-- giveback.lua returns the unused rest of an instance's block of /hi
-- numbers at a clean stop, if no one reserved after it.
--
-- KEYS[1] is the /hi counter; ARGV[1] the end of the instance's block;
-- ARGV[2] the last number it handed out. It returns 1 if it gave back.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
