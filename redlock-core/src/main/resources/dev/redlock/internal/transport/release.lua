-- Deletes the lock only if it still holds our token, and tells the clients waiting on it.
-- KEYS[1] = resource, KEYS[2] (only at the resource's gate master) = its queue of waiters
-- (queue.lua), ARGV[1] = token, ARGV[2] = 'quiet' (optional): tell no one, as for the cleanup
-- of an acquire that failed (its competitors retry on their own; a notice would wake them all).
-- Returns 1 released, 2 released and some client was told (a subscriber of the resource's wake-up
-- channel: a waiter), 0 held by another token, -1 already gone.
-- The notice is published in the same script as the delete, so no waiter can miss the delete and
-- still see the notice before it. By pcall: a user whose ACL denies PUBLISH or the channel still
-- releases (its waiters retry on their timers). The channel holds the key: only clients waiting on
-- this resource hear it. The message names the release (the SHA-1 of its token, which does not
-- reveal the token), for whoever watches the channel; or, on the master where waiters queue for
-- the resource in turn (queue.lua: its gate), 'turn:' and the first of them, so that only that
-- waiter wakes and the others sleep on (it reads the queue by pcall: without the permission, the
-- plain message, which wakes every waiter).
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= 'quiet' then
    local message = redis.sha1hex(ARGV[1])
    if KEYS[2] ~= nil then
      local head = redis.pcall('ZRANGE', KEYS[2], 0, 0)
      if type(head) == 'table' and head.err == nil and head[1] ~= nil then
        message = 'turn:' .. head[1]
      end
    end
    local told = redis.pcall('PUBLISH', 'redlock:wake:' .. KEYS[1], message)
    if type(told) == 'number' and told > 0 then
      return 2
    end
  end
  return 1
elseif value == false then
  return -1
end
return 0
