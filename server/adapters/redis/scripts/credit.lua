-- credit.lua: adds a credit the ledger already records (an operator's top-up) to the loaded balance.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:fence   (as in settle.lua)
-- A credit ends the reconciler's watch (watch-settled.lua) and gives the counters a new revision:
-- its ledger row comes first, so a ledger read and a snapshot taken around it would disagree by
-- the credit, and a repair computed before it would add it again (adjust.lua).
-- ARGV[1] amount uEGP (positive)   ARGV[2] the largest balance held exactly (2^53 - 1)
-- ARGV[3] the counters' new revision
-- Reply: {'credited', new balance} | {'not_loaded'} (rebuilding the counters from the ledger
--   counts the credit; a rebuild in progress loses its fence, since its read may have missed the
--   credit, and reads again) | {'overflow'} (nothing written: the balance would pass ARGV[2])
local balance = redis.call('HGET', KEYS[1], 'bal')
if not balance then
  redis.call('DEL', KEYS[2])
  return {'not_loaded'}
end
-- Both terms are below 2^53, so a sum above the limit stays above it after rounding to a double.
local credited = tonumber(balance) + tonumber(ARGV[1])
if credited > tonumber(ARGV[2]) then
  return {'overflow'}
end
local written = string.format('%d', credited)
redis.call('HSET', KEYS[1], 'bal', written, 'rev', ARGV[3])
redis.call('HDEL', KEYS[1], 'watch')
return {'credited', written}
