-- Shortens the lock's expiry to ARGV[2] milliseconds, only if it still holds our token; never
-- lengthens it and never re-creates it: a release that takes effect later ("keep it at least until").
-- KEYS[1] = resource, ARGV[1] = token, ARGV[2] = ttl in milliseconds (at least 1).
-- Returns 1 shortened (or already expiring sooner), 0 held by another token, -1 gone.
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  local ttl = tonumber(ARGV[2])
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 or left > ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return 1
elseif value == false then
  return -1
end
return 0
