-- begin-load.lua: starts rebuilding an organization's absent counters from the ledger. Sets the
-- fence (or joins the one another rebuilder set), so settlements arriving from now on wait instead
-- of being kept, and answers the settlements kept so far: the rebuild asks the ledger which of
-- them it records, in the same read as the counters.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:fence   KEYS[3] {o:ID}:kept   (as in settle.lua)
-- ARGV[1] a fresh token   ARGV[2] ms the fence lasts
-- Reply: {} when the counters are loaded, else {token, kept requestId ...}
if redis.call('HEXISTS', KEYS[1], 'bal') == 1 then
  return {}
end
local token = redis.call('GET', KEYS[2])
if not token then
  token = ARGV[1]
  redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
end
local reply = redis.call('HKEYS', KEYS[3])
table.insert(reply, 1, token)
return reply
