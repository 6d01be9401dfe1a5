-- Deletes the lock only if it still holds our token, and tells the clients waiting on it.
-- KEYS[1] = resource, KEYS[2] and KEYS[3] (only at the resource's gate master) = its queue of
-- waiters and when each goes stale (queue.lua), ARGV[1] = token, ARGV[2] = 'quiet' (optional): tell no one, as for the cleanup
-- of an acquire that failed (its competitors retry on their own; a notice would wake them all),
-- or 'next': tell no one, and answer 3 instead of 1 if some client is subscribed to the resource's
-- channel here (a waiter: the release at the master after the gate, whose waiters are told here
-- only if the gate does not take the release; PUBSUB NUMSUB by pcall: refused, 3 too), or
-- 'notice': delete nothing, only tell the resource's waiters (that fallback).
-- Returns 1 released, 2 released and some client was told (a waiter), 3 (see 'next'), 0 held by
-- another token, -1 already gone; a notice returns 2 if some client heard it, else 1.
-- The notice is published in the same script as the delete, so no waiter can miss the delete and
-- still see the notice before it. By pcall: a user whose ACL denies PUBLISH or the channel still
-- releases (its waiters retry on their timers). The resource's channel holds the key: only clients
-- waiting on this resource hear it. The message names the release (the SHA-1 of its token, which
-- does not reveal the token), for whoever watches the channel. On the master where waiters queue
-- for the resource in turn (queue.lua: its gate), only the first of them is told: on its client's
-- own channel (a waiter's name starts with its client's 16 hex digits), 'turn:', the waiter and
-- the key, so that one release costs one notice however many clients wait; if that client does
-- not hear it (not subscribed yet, or gone), 'turn:' and the waiter on the resource's channel, as
-- before. The waiter named is the first not stale by its own window: the stale ones ahead of it
-- (crashed, or gone without leaving) are dropped first, as queue.lua drops them, so that the
-- notice wakes a waiter that is there to hear it. It reads the queue by pcall: without the
-- permission, the plain message, which wakes every waiter.
local function tell(message)
  local told = redis.pcall('PUBLISH', 'redlock:wake:' .. KEYS[1], message)
  return type(told) == 'number' and told > 0
end
if ARGV[2] == 'notice' then
  return tell(redis.sha1hex(ARGV[1])) and 2 or 1
end
if KEYS[3] ~= nil then
  redis.replicate_commands() -- TIME, then writes (the default since Redis 5)
end
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == 'next' then
    local counts = redis.pcall('PUBSUB', 'NUMSUB', 'redlock:wake:' .. KEYS[1])
    if type(counts) == 'table' and counts.err == nil and tonumber(counts[2]) == 0 then
      return 1
    end
    return 3
  elseif ARGV[2] ~= 'quiet' then
    local message = redis.sha1hex(ARGV[1])
    -- PTTL first: an integer, where the queue's ZRANGE builds a table; -2 when no one queues,
    -- the uncontended release.
    if KEYS[2] ~= nil and redis.pcall('PTTL', KEYS[2]) ~= -2 then
      local head = redis.pcall('ZRANGE', KEYS[2], 0, 0)
      if KEYS[3] ~= nil and type(head) == 'table' and head.err == nil and head[1] ~= nil then
        local now = redis.call('TIME')
        local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
        local gone = redis.pcall('ZRANGEBYSCORE', KEYS[3], 0, us, 'LIMIT', 0, 16)
        if type(gone) == 'table' and gone.err == nil and gone[1] ~= nil then
          for _, other in ipairs(gone) do
            redis.pcall('ZREM', KEYS[2], other)
            redis.pcall('ZREM', KEYS[3], other)
            redis.pcall('ZREM', KEYS[3], '>' .. other)
          end
          head = redis.pcall('ZRANGE', KEYS[2], 0, 0)
        end
      end
      if type(head) == 'table' and head.err == nil and head[1] ~= nil then
        message = 'turn:' .. head[1]
        local client = 'redlock:wake:@' .. string.sub(head[1], 1, 16)
        local told = redis.pcall('PUBLISH', client, message .. KEYS[1])
        if type(told) == 'number' and told > 0 then
          return 2
        end
      end
    end
    if tell(message) then
      return 2
    end
  end
  return 1
elseif value == false then
  return -1
end
return 0
