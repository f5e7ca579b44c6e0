-- snapshot.lua: every counter of an organization for one month, read at one instant.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   KEYS[3] {o:ID}:res   KEYS[4] {o:ID}:rx
-- (as in admit.lua)
-- Reply: {} when not loaded, else {acct, spend, res, rx}: flat field/value lists (HGETALL), and
-- rx as a flat requestId/expiry-ms list.
if redis.call('HEXISTS', KEYS[1], 'bal') == 0 then
  return {}
end
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[3]),
  redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES'),
}
