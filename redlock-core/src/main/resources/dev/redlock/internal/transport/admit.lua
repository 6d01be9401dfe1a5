-- Admits this master's server run together with its dataset, by an explicit operator decision: a
-- statement that this run, with this dataset, can have lost no lock it granted (a brand-new
-- cluster). It is not dated and names no lease time, so it holds for every client, whatever its
-- maxLeaseTime, for as long as the run and the dataset last.
-- KEYS[1] = the dataset-birth marker, KEYS[2] = the admission record.
-- ARGV[1] = the server run to admit (its run_id), or '' to only store a missing marker, dated now by
-- the master's clock: what an acquire does on a master that has none.
-- The record is '<run_id> <marker>': the run and the marker it vouches for. A restart (a new
-- run_id, whatever snapshot it reloads) or a marker stored later (after a FLUSHALL, an eviction or a
-- DEL) no longer matches it, and the guard's clock applies again.
-- Returns 1 if anything was changed, 0 if the master was already admitted (or had a marker).
redis.replicate_commands()
local changed = 0
local born = redis.call('GET', KEYS[1])
if born == false then
  local now = redis.call('TIME')
  local ms = math.floor((tonumber(now[1]) * 1000000 + tonumber(now[2])) / 1000)
  -- A marker stored after the admitted one was lost is never the one the record names, even in
  -- the same millisecond: the record would vouch for a dataset that lost its keys. One more
  -- millisecond only makes the dataset look younger.
  local record = redis.call('GET', KEYS[2])
  if record and string.sub(record, -(string.len(tostring(ms)) + 1)) == ' ' .. tostring(ms) then
    ms = ms + 1
  end
  born = tostring(ms)
  redis.call('SET', KEYS[1], born)
  changed = 1
end
if ARGV[1] ~= '' then
  local record = ARGV[1] .. ' ' .. born
  if redis.call('GET', KEYS[2]) ~= record then
    redis.call('SET', KEYS[2], record)
    changed = 1
  end
end
return changed
