-- Admits this master's dataset and server run at once, as if the dataset were ARGV[1] milliseconds
-- old and the run ARGV[2] had been up that long: for a brand-new cluster, by an explicit operator
-- decision. With an empty ARGV[2], only stores a missing marker (dated now): what an acquire does
-- on a master that has none.
-- KEYS[1] = the dataset-birth marker, KEYS[2] = the admitted server run.
-- Returns 1 if anything was changed, 0 if the master was already admitted (or had a marker).
redis.replicate_commands()
local now = redis.call('TIME')
local millis = math.floor((tonumber(now[1]) * 1000000 + tonumber(now[2])) / 1000)
local born = tonumber(redis.call('GET', KEYS[1]))
local admitted = millis - tonumber(ARGV[1])
local changed = 0
if born == nil or born > admitted then
  redis.call('SET', KEYS[1], admitted)
  changed = 1
end
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[2] then
  redis.call('SET', KEYS[2], ARGV[2])
  changed = 1
end
return changed
