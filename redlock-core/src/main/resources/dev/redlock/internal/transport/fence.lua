-- Stores a fencing token, only while the lock still holds our token, never lowering the counter.
-- KEYS[1] = resource, KEYS[2] = this master's one fence counter; ARGV[1] = token, ARGV[2] = the
-- fencing token. Returns 1 stored (or already higher), 0 held by another token, -1 gone.
-- The counter never expires: an expiring counter would start again from zero. It is shared by
-- every resource, so the library keeps one counter per master however many resources it locks.
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  local fence = tonumber(redis.call('GET', KEYS[2])) or 0
  if fence < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[2], ARGV[2])
  end
  return 1
elseif value == false then
  return -1
end
return 0
