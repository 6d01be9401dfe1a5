-- Takes the lock if it is free and this master's dataset is old enough to be trusted.
-- KEYS[1] = resource, KEYS[2] = its fence counter, KEYS[3] = this master's dataset-birth marker
-- ARGV[1] = token, ARGV[2] = ttl in milliseconds,
-- ARGV[3] = least dataset age in milliseconds for a vote to count (0: no restart guard)
-- Returns {code, fence, time}: code 1 granted, 0 held by another token, 2 dataset too young
-- (nothing set); fence = the stored fence counter (0 if none); time = server time in microseconds.
redis.replicate_commands() -- Redis 6: allow writes after TIME (a no-op from Redis 7)
local now = redis.call('TIME')
local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
local millis = math.floor(micros / 1000)
-- The marker is absent after a restart without persistence or a FLUSHALL: the dataset is new.
local born = tonumber(redis.call('GET', KEYS[3]))
if born == nil then
  born = millis
  redis.call('SET', KEYS[3], born)
end
local fence = tonumber(redis.call('GET', KEYS[2])) or 0
if millis - born < tonumber(ARGV[3]) then
  return {2, fence, micros}
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, fence, micros}
end
return {0, fence, micros}
