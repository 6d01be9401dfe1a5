-- The multi-resource lease's one script: acts on every lock key of a set at once, in one atomic
-- call, so a master never holds part of a set. ARGV[1] = the operation, ARGV[2] = the lease's
-- token, ARGV[3] = its number (a TTL in milliseconds, or the fencing token), ARGV[4] = n, how many
-- lock keys; KEYS[1..n] = the lock keys, distinct, in the same sorted order on every master.
-- Only GET, SET, DEL, PTTL, PEXPIRE, TIME and (by pcall) PUBLISH are called: the single-resource
-- scripts' permissions.
local op = ARGV[1]
local token = ARGV[2]
local n = tonumber(ARGV[4])

-- Whose the keys are: 'ours' if every key holds our token, 'taken' if any holds another token,
-- else 'gone' (some key is missing, none is another's). Counts how many hold ours.
local function owner()
  local mine, gone = 0, false
  for i = 1, n do
    local value = redis.call('GET', KEYS[i])
    if value == token then
      mine = mine + 1
    elseif value == false then
      gone = true
    else
      return 'taken', mine
    end
  end
  return gone and 'gone' or 'ours', mine
end

local function code(state)
  return state == 'ours' and 1 or (state == 'taken' and 0 or -1)
end

if op == 'acquire' then
  -- KEYS[n+1] = the master's fence counter, KEYS[n+2] = the dataset-birth marker, KEYS[n+3] = the
  -- admitted server run. Sets every key only if none exists. Answers as the single acquire's TIME,
  -- SET and MGET do: {time, 'OK' or false, {counter, marker, admitted}}.
  redis.replicate_commands()
  local now = redis.call('TIME')
  local free = true
  for i = 1, n do
    if redis.call('GET', KEYS[i]) ~= false then
      free = false
      break
    end
  end
  local set = false
  if free then
    for i = 1, n do
      redis.call('SET', KEYS[i], token, 'PX', ARGV[3])
    end
    set = 'OK'
  end
  return {now, set, {redis.call('GET', KEYS[n + 1]), redis.call('GET', KEYS[n + 2]),
    redis.call('GET', KEYS[n + 3])}}
elseif op == 'release' then
  -- Deletes each key that holds our token, and tells the clients waiting on each deleted key as
  -- release.lua does (same channel, same message, by pcall; not if ARGV[5] = 'quiet', the cleanup
  -- of an acquire that failed). 2 if any was deleted and some client heard, 1 if any was deleted,
  -- else 0 if any holds another token, -1.
  local deleted, taken, told = 0, false, false
  for i = 1, n do
    local value = redis.call('GET', KEYS[i])
    if value == token then
      redis.call('DEL', KEYS[i])
      deleted = deleted + 1
      if ARGV[5] ~= 'quiet' then
        local heard = redis.pcall('PUBLISH', 'redlock:wake:' .. KEYS[i], redis.sha1hex(token))
        if type(heard) == 'number' and heard > 0 then
          told = true
        end
      end
    elseif value ~= false then
      taken = true
    end
  end
  if deleted > 0 then
    return told and 2 or 1
  end
  return taken and 0 or -1
elseif op == 'extend' then
  -- Only if every key holds our token: lengthens each to ARGV[3] ms, never shortening one.
  local state = owner()
  if state == 'ours' then
    local ttl = tonumber(ARGV[3])
    for i = 1, n do
      if redis.call('PTTL', KEYS[i]) < ttl then
        redis.call('PEXPIRE', KEYS[i], ttl)
      end
    end
  end
  return code(state)
elseif op == 'shorten' then
  -- Shortens each key that holds our token to ARGV[3] ms, never lengthening one. As release.
  local ttl = tonumber(ARGV[3])
  local done, taken = 0, false
  for i = 1, n do
    local value = redis.call('GET', KEYS[i])
    if value == token then
      local left = redis.call('PTTL', KEYS[i])
      if left < 0 or left > ttl then
        redis.call('PEXPIRE', KEYS[i], ttl)
      end
      done = done + 1
    elseif value ~= false then
      taken = true
    end
  end
  return done > 0 and 1 or (taken and 0 or -1)
elseif op == 'fence' then
  -- Only if every key holds our token: stores ARGV[3] in the master's one fence counter,
  -- KEYS[n+1], never lowering it (compared as decimal strings, as fence.lua does).
  local state = owner()
  if state == 'ours' then
    local function digits(text)
      if text == false or not string.match(text, '^%d+$') then
        return nil
      end
      return string.match(text, '^0*(%d-%d)$')
    end
    local fence = digits(redis.call('GET', KEYS[n + 1]))
    local wanted = digits(ARGV[3])
    if fence == nil or #fence < #wanted or (#fence == #wanted and fence < wanted) then
      redis.call('SET', KEYS[n + 1], wanted)
    end
  end
  return code(state)
end
return redis.error_reply('ERR unknown key-set operation')
