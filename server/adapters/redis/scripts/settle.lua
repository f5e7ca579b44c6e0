-- settle.lua: settles requests of one organization admitted in one month, each exactly once:
-- releases its hold (if it still has one) and debits the actual cost from the balance, adding it to
-- the key's and project's spend of the month. Several in one run cost Redis and the client one
-- command instead of one each; each is settled as if it ran alone, in the order given.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm> (the admissions' month)
-- KEYS[3] {o:ID}:res    holds as versions before kept them (as in admit.lua)
-- KEYS[4] {o:ID}:done   sorted set: settled requestId scored by the ms it is forgotten
-- KEYS[5] {o:ID}:fence  set by begin-load.lua while a rebuild reads the ledger
-- KEYS[6] {o:ID}:kept   hash: requestId -> "cost|yyyymm|keyId|projectId", settlements that came
--                       while the counters were absent (applied by finish-load.lua)
-- KEYS[7] {o:ID}:watch  set: ids settled while the reconciler watches (watch-settled.lua)
-- ARGV[1] yyyymm (the admissions' month)   ARGV[2] ms the month's spend counters live
-- ARGV[3] ms kept settlements live
-- then six per settlement: requestId, keyId, projectId, cost uEGP, now ms, ms the settled id is
-- forgotten (ARGV[4..9], ARGV[10..15], ...)
-- Reply: one per settlement, in order: {'settled', released uEGP} | {'settled_unreserved'}
--   | {'already_settled'} | {'pending'} (no counters: kept for the rebuild) | {'loading'} (a
--   rebuild is reading the ledger: nothing written, settle again shortly)
-- The cost is debited in full even when it exceeds the hold (the tokens were produced), so the
-- balance may go below zero; the next admission then answers quota_exceeded.
local month = ARGV[1]
-- Set once a settlement adds to the month's spends: their expiry is pushed out once per run.
local spent = false

local function settle(request_id, key_id, project_id, cost_text, now_ms, forget_at_ms)
  local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
  local hold_field = 'h|' .. request_id
  local account = redis.call('HMGET', KEYS[1], 'bal', 'held', key_field, project_field, 'watch', hold_field)
  if not account[1] then
    if redis.call('EXISTS', KEYS[5]) == 1 then
      return {'loading'}
    end
    if redis.call('HSETNX', KEYS[6], request_id, cost_text .. '|' .. month .. '|' .. key_id .. '|' .. project_id) == 0 then
      return {'already_settled'}
    end
    redis.call('PEXPIRE', KEYS[6], ARGV[3])
    return {'pending'}
  end
  if redis.call('ZADD', KEYS[4], 'NX', forget_at_ms, request_id) == 0 then
    return {'already_settled'}
  end
  record_watched(KEYS[7], account[5], request_id, now_ms)

  local cost = tonumber(cost_text)
  local new_balance = int(tonumber(account[1]) - cost) -- nil once written
  local released = nil
  local record, in_account = account[6], true
  if not record then
    -- A hold kept where versions before kept them, until a release moves it.
    record, in_account = redis.call('HGET', KEYS[3], request_id), false
    if record then
      redis.call('HDEL', KEYS[3], request_id)
    end
  end
  if record then
    local amount, hold_month, hold_key, hold_project = parse_hold(record)
    released = amount
    if amount > 0 and hold_month == month and hold_key == key_id and hold_project == project_id then
      -- The usual case: one write for the debit and the release, one delete for the hold.
      local held, key_held, project_held = tonumber(account[2] or '0'), tonumber(account[3] or '0'), tonumber(account[4] or '0')
      write_account(KEYS[1], {'bal', new_balance, 'held', int(held - amount)}, {key_field, key_held - amount, project_field, project_held - amount}, in_account and {hold_field} or nil)
      new_balance = nil
    else
      -- Settled under other ids than it was admitted with: release the hold where it was counted.
      if in_account then
        redis.call('HDEL', KEYS[1], hold_field)
      end
      unhold(KEYS[1], amount, hold_month, hold_key, hold_project)
    end
  end
  if new_balance and cost > 0 then
    redis.call('HSET', KEYS[1], 'bal', new_balance)
  end
  if cost_text ~= '0' then
    redis.call('HINCRBY', KEYS[2], 'k|' .. key_id, cost_text)
    redis.call('HINCRBY', KEYS[2], 'p|' .. project_id, cost_text)
    spent = true
  end
  if released then
    return {'settled', int(released)}
  end
  return {'settled_unreserved'}
end

-- Settled ids are forgotten once past their time, by the earliest clock of the run: an id kept a
-- moment longer only costs memory.
local earliest = smallest_argv(8, 6)
if earliest then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', int(earliest))
end

local replies = {}
for i = 4, #ARGV, 6 do
  replies[#replies + 1] = settle(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
end
if spent then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return replies
