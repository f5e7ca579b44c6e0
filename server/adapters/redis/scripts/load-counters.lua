-- load-counters.lua: sets an organization's balance and one month's settled spends as given (the
-- reconciler's repair); open holds are left as they are, kept settlements are forgotten, and the
-- counters no longer belong to the rebuild that loaded them (its follow-up must not apply rows this
-- ledger read counts). They get a new revision, and a reconciler's watch ends.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   KEYS[3] {o:ID}:kept   (as in settle.lua)
-- ARGV[1] balance uEGP (may be negative)   ARGV[2] ms the month's spend counters live
-- ARGV[3] the new revision
-- ARGV[4 ..] field, spend pairs for the month hash ('k|<keyId>', 'p|<projectId>')
-- Reply: 1
redis.call('HSET', KEYS[1], 'bal', ARGV[1], 'rev', ARGV[3])
redis.call('HDEL', KEYS[1], 'load', 'watch')
redis.call('DEL', KEYS[2], KEYS[3])
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
