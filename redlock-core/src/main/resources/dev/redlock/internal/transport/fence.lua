-- Stores a fencing token, only while the lock still holds our token, never lowering the counter.
-- KEYS[1] = resource, KEYS[2] = this master's one fence counter; ARGV[1] = token, ARGV[2] = the
-- fencing token. Returns 1 stored (or already higher), 0 held by another token, -1 gone.
-- The counter never expires: an expiring counter would start again from zero. It is shared by
-- every resource, so the library keeps one counter per master however many resources it locks.
-- Tokens are compared as decimal strings, not with tonumber: Lua's numbers are doubles, exact only
-- below 2^53, and two tokens above that could compare equal and the counter stop rising.
local function digits(text)
  if text == false or not string.match(text, '^%d+$') then
    return nil -- no counter yet (or not a whole number: replaced)
  end
  return string.match(text, '^0*(%d-%d)$')
end
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  local fence = digits(redis.call('GET', KEYS[2]))
  local token = digits(ARGV[2])
  if fence == nil or #fence < #token or (#fence == #token and fence < token) then
    redis.call('SET', KEYS[2], token)
  end
  return 1
elseif value == false then
  return -1
end
return 0
