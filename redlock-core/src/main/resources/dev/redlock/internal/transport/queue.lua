-- A waiter's acquire of one resource at its gate master, in turn (the lease layer's Masters: a
-- waiter's round asks one master, the gate, first, and the others only once it granted). Waiters
-- queue at the gate in the order they first asked; the key is set, when free, only for the first
-- of them still waiting, and any other is refused as if the key were held. So the lock passes to
-- the waiter that has waited longest, whichever of them a release wakes first. Safety does not
-- rest on it: a lease still needs a majority of masters, and a client that is not waiting (its
-- first round asks every master at once) is not queued.
-- KEYS[1] = the lock key, KEYS[2] = the master's fence counter, KEYS[3] = the dataset-birth
-- marker, KEYS[4] = the admitted server run, KEYS[5] = the resource's queue (a sorted set: waiter
-- -> when it first asked, in microseconds), KEYS[6] = when each waiter goes stale (a sorted set
-- likewise: when it last asked plus its own stale window).
-- ARGV[1] = 'acquire', 'join' or 'leave', ARGV[2] = the lease's token, ARGV[3] = its TTL in
-- milliseconds, ARGV[4] = the waiter, ARGV[5] = how long (ms) a waiter that has stopped asking
-- stays queued.
-- An acquire answers as keyset.lua's does: {time, 'OK' or false, {counter, marker, admitted}}; a
-- leave, 1 (the first waiter leaving while the key is free tells the next one its turn). A join
-- queues a waiter on a set of resources (keyset.lua takes its keys on every master at once) as an
-- acquire queues one: the waiters behind it are refused while it is first, and the release names
-- it, but the key is never set here. It answers 1 if the waiter is first, else 0; first with the
-- key free for the first time since it queued, it is told its turn at once, as a release would
-- tell it, on its client's channel (the notice after that comes from a release, or its timer). A
-- waiter stays first while granted here: if its round then fails on
-- the other masters (it overtook the release there), it is still first when it asks again. It
-- leaves when it calls 'leave' (it got its lease, or gave up), or once it is stale, ARGV[5] ms of
-- its own after it last asked (it crashed). Each waiter's staleness is judged by the window it
-- gave, never by the asking client's: a client with shorter retry delays or node timeouts than
-- another's must not drop that other's live waiters, nor cut the queue's life short. The queue's
-- keys expire when the last of its waiters goes stale, so nothing is kept for a resource no one
-- waits on. The queue's commands are called by pcall: where an ACL refuses them, the key is set
-- for whoever asks when it is free, as the plain acquire does.
-- A first waiter that keeps being granted here without ever leaving (its round fails on the
-- others: its restart guard finds them too young, or its ACL or a partition keeps it from a
-- majority) would keep every other waiter out for its whole wait. So its first grant is noted (in
-- KEYS[6], as '>' and the waiter, scored with the time negated, so that no note is ever taken
-- for a stale waiter; gone when its waiter leaves or goes stale), and
-- once it is granted again more than twice ARGV[5] ms after that, with others queued, it yields
-- its place: it goes to the back of the queue, is refused, and the waiter now first is told that
-- it is its turn, as a release tells it. (Only commands of the minimal ACL: ZADD's XX LT CH says
-- whether the note is older than the bound.) A joined waiter's turns with the key free count as
-- grants: one whose set stays out of reach (another of its resources held) yields likewise.
local queue, seen, waiter = KEYS[5], KEYS[6], ARGV[4]
local function tellTurn(head)
  local message = 'turn:' .. head
  local client = 'redlock:wake:@' .. string.sub(head, 1, 16)
  local told = redis.pcall('PUBLISH', client, message .. KEYS[1])
  if type(told) ~= 'number' or told == 0 then
    redis.pcall('PUBLISH', 'redlock:wake:' .. KEYS[1], message)
  end
end
if ARGV[1] == 'leave' then
  local first = redis.pcall('ZRANGE', queue, 0, 0)
  redis.pcall('ZREM', queue, waiter)
  redis.pcall('ZREM', seen, waiter)
  redis.pcall('ZREM', seen, '>' .. waiter)
  -- The first waiter leaving while the key is free (its wait cancelled or out of time) tells the
  -- waiter now first that it is its turn, as a release or a yield would: else that one would learn
  -- it only at its timer. A waiter that leaves holding the key (granted) tells no one: its release
  -- will.
  if type(first) == 'table' and first.err == nil and first[1] == waiter
      and redis.call('GET', KEYS[1]) == false then
    local head = redis.pcall('ZRANGE', queue, 0, 0)
    if type(head) == 'table' and head.err == nil and head[1] ~= nil then
      tellTurn(head[1])
    end
  end
  return 1
end
redis.replicate_commands()
local now = redis.call('TIME')
local turn = true
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local window = tonumber(ARGV[5]) * 1000
if type(redis.pcall('ZADD', queue, 'NX', us, waiter)) == 'number' then
  redis.pcall('ZADD', seen, us + window, waiter)
  -- Waiters stale by their own windows (the notes, negative, are never in this range).
  local gone = redis.pcall('ZRANGEBYSCORE', seen, 0, us, 'LIMIT', 0, 16)
  if type(gone) == 'table' and gone.err == nil then
    for _, other in ipairs(gone) do
      redis.pcall('ZREM', queue, other)
      redis.pcall('ZREM', seen, other)
      redis.pcall('ZREM', seen, '>' .. other) -- a first grant's note goes with its waiter
    end
  end
  local head = redis.pcall('ZRANGE', queue, 0, 0)
  if type(head) == 'table' and head.err == nil and head[1] ~= nil then
    turn = head[1] == waiter
  end
end
local set = false
if turn and redis.call('GET', KEYS[1]) == false then
  local mark = '>' .. waiter
  local others = redis.pcall('ZRANGE', queue, 1, 1)
  -- Whether others wait and its note is older than the bound (then moved, it goes anyway).
  if type(others) == 'table' and others.err == nil and others[1] ~= nil
      and redis.pcall('ZADD', seen, 'XX', 'LT', 'CH', 2 * window - us, mark) == 1 then
    -- Granted here for two stale windows without leaving: it yields to the next waiter.
    redis.pcall('ZADD', queue, 'XX', us, waiter)
    redis.pcall('ZREM', seen, mark)
    turn = false
    local head = redis.pcall('ZRANGE', queue, 0, 0)
    if type(head) == 'table' and head.err == nil and head[1] ~= nil and head[1] ~= waiter then
      tellTurn(head[1])
    end
  elseif ARGV[1] == 'join' then
    -- Its first turn here with the key free since it queued: its client is told at once.
    if redis.pcall('ZADD', seen, 'NX', -us, mark) == 1 then
      tellTurn(waiter)
    end
  else
    redis.pcall('ZADD', seen, 'NX', -us, mark) -- its first grant since it queued, if it is
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    set = 'OK'
  end
end
-- The queue lives until its last waiter goes stale: at least this one's window.
local last = redis.pcall('ZRANGE', seen, -1, -1, 'WITHSCORES')
local life = window
if type(last) == 'table' and last.err == nil and last[2] ~= nil then
  life = math.max(window, tonumber(last[2]) - us)
end
life = math.ceil(life / 1000)
redis.pcall('PEXPIRE', queue, life)
redis.pcall('PEXPIRE', seen, life)
if ARGV[1] == 'join' then
  return turn and 1 or 0
end
return {now, set, {redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3]),
  redis.call('GET', KEYS[4])}}
