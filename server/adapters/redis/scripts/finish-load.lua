-- finish-load.lua: completes a rebuild begun with begin-load.lua: sets the balance and the month's
-- spends read from the ledger, and applies every kept settlement whose usage row was not in that
-- read (its request id is not among the recorded ones). The month's spends count only kept
-- settlements of that month. Kept ids are remembered as settled, so a repeat changes nothing.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm>   KEYS[3] {o:ID}:fence   KEYS[4] {o:ID}:kept
-- KEYS[5] {o:ID}:done   (as in settle.lua)   KEYS[6] {o:ID}:lfence (as in admit.lua)
-- ARGV[1] fence token   ARGV[2] balance uEGP (may be negative)   ARGV[3] yyyymm
-- ARGV[4] ms the month's spend counters live   ARGV[5] ms the settled ids are forgotten
-- ARGV[6] ms admissions wait once loaded (the leases' length; 0: none)
-- ARGV[7] n, the count of recorded request ids   ARGV[8 .. 7+n] the recorded request ids
-- ARGV[8+n ..] field, spend pairs for the month hash ('k|<keyId>', 'p|<projectId>')
-- With leases, counters that were lost may have had leases that gateways still admit from, whose
-- holds the rebuilt counters do not have: admissions wait until every such lease has ended.
-- Reply: 1 when loaded; 0, nothing written, when the counters are loaded already or the fence is
-- not this token's (it expired, or a credit removed it)
if redis.call('HEXISTS', KEYS[1], 'bal') == 1 or redis.call('GET', KEYS[3]) ~= ARGV[1] then
  return 0
end
local month = ARGV[3]
local recorded = {}
local n = tonumber(ARGV[7])
for i = 8, 7 + n do
  recorded[ARGV[i]] = true
end
local balance = tonumber(ARGV[2])
local spend = {}
for i = 8 + n, #ARGV, 2 do
  spend[ARGV[i]] = tonumber(ARGV[i + 1])
end
local kept = redis.call('HGETALL', KEYS[4])
for i = 1, #kept, 2 do
  local request_id = kept[i]
  redis.call('ZADD', KEYS[5], ARGV[5], request_id)
  if not recorded[request_id] then
    local cost, kept_month, key_id, project_id = parse_hold(kept[i + 1])
    balance = balance - cost
    if kept_month == month and cost > 0 then
      spend['k|' .. key_id] = (spend['k|' .. key_id] or 0) + cost
      spend['p|' .. project_id] = (spend['p|' .. project_id] or 0) + cost
    end
  end
end
-- 'load' names these counters for apply-late.lua: the rows a follow-up finds are late for this read
-- only; the token is their first revision too.
redis.call('HSET', KEYS[1], 'bal', int(balance), 'load', ARGV[1], 'rev', ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
local fields = {}
for field, amount in pairs(spend) do
  fields[#fields + 1] = field
  fields[#fields + 1] = int(amount)
end
hset_all(KEYS[2], fields)
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if ARGV[6] ~= '0' then
  redis.call('SET', KEYS[6], '1', 'PX', ARGV[6])
end
return 1
