-- Extends the lock only if it still holds our token, and never shortens it.
-- KEYS[1] = resource, ARGV[1] = token, ARGV[2] = ttl in milliseconds.
-- Returns 1 extended (or already long enough), 0 held by another token, -1 gone (never re-created).
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  local ttl = tonumber(ARGV[2])
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return 1
elseif value == false then
  return -1
end
return 0
