-- snapshot.lua: every counter of an organization for one month, read at one instant; with a
-- watch's token, also the ids the watch recorded (watch-settled.lua), and the watch ends.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   KEYS[3] {o:ID}:res
-- KEYS[4] {o:ID}:watch (with a watch only)   (as in admit.lua and settle.lua)
-- ARGV[1] the watch's token   ARGV[2] now ms   (both with a watch only)
-- Reply: {} (nothing written) when not loaded, or when the watch ended by ARGV[2] or is another's; else
--   {acct, spend, res[, watch]}: flat field/value lists (HGETALL; the holds are the account's h|
--   fields, and res's until a release moves them), watch the recorded ids.
if redis.call('HEXISTS', KEYS[1], 'bal') == 0 then
  return {}
end
local reply = {
  redis.call('HGETALL', KEYS[1]),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[3]),
}
if ARGV[1] then
  local until_ms, token = string.match(redis.call('HGET', KEYS[1], 'watch') or '', '^(%d+)|(.+)$')
  if token ~= ARGV[1] or tonumber(until_ms) <= tonumber(ARGV[2]) then
    return {}
  end
  reply[4] = redis.call('SMEMBERS', KEYS[4])
  redis.call('HDEL', KEYS[1], 'watch')
  redis.call('DEL', KEYS[4])
end
return reply
