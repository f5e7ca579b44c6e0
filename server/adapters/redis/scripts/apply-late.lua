-- apply-late.lua: debits usage rows that a rebuild's ledger read did not hold, unless their
-- requests were settled in these counters since (their ids are in the settled set): the costs of
-- requests settled before the counters were lost, whose rows were still on their way to the
-- ledger. Each applied id is remembered as settled, so a repeat changes nothing. Spends count only
-- rows of the month of KEYS[2], as kept settlements do in finish-load.lua. The rows are late for
-- one rebuild's read only: counters rebuilt or replaced since (another fence token in 'load')
-- counted them already, and are left alone.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   KEYS[3] {o:ID}:done   KEYS[4] {o:ID}:watch
-- (as in settle.lua)
-- ARGV[1] yyyymm of KEYS[2]   ARGV[2] now ms   ARGV[3] ms the applied ids are forgotten
-- ARGV[4] ms the month's spend counters live   ARGV[5] the fence token of the rebuild whose read
-- the rows are late for   ARGV[6] the counters' new revision if a row is applied (a reconciler's
-- repair computed before would count it again, see adjust.lua)
-- ARGV[7 ..] five per row: requestId, cost uEGP, yyyymm, keyId, projectId
-- Reply: {} when the counters are absent or not that rebuild's (nothing written), else
--   {rows applied, uEGP debited}
if redis.call('HGET', KEYS[1], 'load') ~= ARGV[5] then
  return {}
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[2])
local watch = redis.call('HGET', KEYS[1], 'watch')
local month = ARGV[1]
local applied, debited, spent = 0, 0, false
for i = 7, #ARGV, 5 do
  if redis.call('ZADD', KEYS[3], 'NX', ARGV[3], ARGV[i]) == 1 then
    local cost = tonumber(ARGV[i + 1])
    applied = applied + 1
    record_watched(KEYS[4], watch, ARGV[i], ARGV[2])
    debited = debited + cost
    if cost > 0 and ARGV[i + 2] == month then
      redis.call('HINCRBY', KEYS[2], 'k|' .. ARGV[i + 3], ARGV[i + 1])
      redis.call('HINCRBY', KEYS[2], 'p|' .. ARGV[i + 4], ARGV[i + 1])
      spent = true
    end
  end
end
if debited > 0 then
  redis.call('HSET', KEYS[1], 'bal', int(tonumber(redis.call('HGET', KEYS[1], 'bal')) - debited))
end
if applied > 0 then
  redis.call('HSET', KEYS[1], 'rev', ARGV[6])
end
if spent then
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return {applied, int(debited)}
