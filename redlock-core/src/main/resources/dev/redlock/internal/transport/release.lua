-- Deletes the lock only if it still holds our token.
-- KEYS[1] = resource, ARGV[1] = token.
-- Returns 1 released, 0 held by another token, -1 already gone.
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
elseif value == false then
  return -1
end
return 0
