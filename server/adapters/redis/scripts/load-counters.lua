-- load-counters.lua: sets an organization's balance and one month's settled spends from the
-- ledger; open holds are left as they are.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   (as in admit.lua)
-- ARGV[1] '1': only when no balance is loaded, '0': always   ARGV[2] balance uEGP (may be negative)
-- ARGV[3] ms the month's spend counters live
-- ARGV[4 ..] field, spend pairs for the month hash ('k|<keyId>', 'p|<projectId>')
-- Reply: 1 when written, 0 when left as it was
if ARGV[1] == '1' and redis.call('HEXISTS', KEYS[1], 'bal') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'bal', ARGV[2])
redis.call('DEL', KEYS[2])
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
