-- adjust.lua: the reconciler's repair: adds amounts to the balance and to one month's spends, if
-- the counters are still in the state the repair was computed from ('rev'); what settled since
-- stays. The counters get a new revision and no longer belong to the rebuild that loaded them
-- (its follow-up must not apply rows the repair's ledger read counted).
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   (as in settle.lua)
-- ARGV[1] the revision the repair was computed from   ARGV[2] the new revision
-- ARGV[3] amount added to the balance, uEGP (may be negative)   ARGV[4] ms the month's spend counters live
-- ARGV[5] the largest magnitude held exactly (2^53 - 1)
-- ARGV[6 ..] field, amount pairs for the month hash ('k|<keyId>', 'p|<projectId>'; may be
-- negative; a spend brought to zero is deleted)
-- Reply: 1 adjusted | 0 the counters are absent or at another revision | -1 a result would leave
--   the range (a balance within ±ARGV[5], spends from 0 to ARGV[5]); nothing written on 0 or -1
local account = redis.call('HMGET', KEYS[1], 'bal', 'rev')
if not account[1] or (account[2] or '') ~= ARGV[1] then
  return 0
end
local limit = tonumber(ARGV[5])
-- Both terms are below 2^53 in magnitude, so a sum out of range stays out of range after rounding.
local balance = tonumber(account[1]) + tonumber(ARGV[3])
if balance > limit or balance < -limit then
  return -1
end
local fields, emptied = {}, {}
for i = 6, #ARGV, 2 do
  local spend = tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0') + tonumber(ARGV[i + 1])
  if spend > limit or spend < 0 then
    return -1
  end
  if spend == 0 then
    emptied[#emptied + 1] = ARGV[i]
  else
    fields[#fields + 1] = ARGV[i]
    fields[#fields + 1] = string.format('%d', spend)
  end
end
redis.call('HSET', KEYS[1], 'bal', string.format('%d', balance), 'rev', ARGV[2])
redis.call('HDEL', KEYS[1], 'load')
hdel_all(KEYS[2], emptied)
if #fields > 0 then
  hset_all(KEYS[2], fields)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return 1
