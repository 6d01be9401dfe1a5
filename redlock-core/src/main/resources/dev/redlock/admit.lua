-- Admits this master's dataset at once, as if it were ARGV[1] milliseconds old: for a brand-new
-- cluster, by an explicit operator decision. KEYS[1] = the dataset-birth marker.
-- Returns 1 if the marker was moved back, 0 if the dataset was already old enough.
redis.replicate_commands()
local now = redis.call('TIME')
local millis = math.floor((tonumber(now[1]) * 1000000 + tonumber(now[2])) / 1000)
local born = tonumber(redis.call('GET', KEYS[1]))
local admitted = millis - tonumber(ARGV[1])
if born == nil or born > admitted then
  redis.call('SET', KEYS[1], admitted)
  return 1
end
return 0
