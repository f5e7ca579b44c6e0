-- settle.lua: settles requests of one organization admitted in one month, each exactly once:
-- releases its hold (if it still has one) and debits the actual cost from the balance, adding it to
-- the key's and project's spend of the month. Several in one run cost Redis and the client one
-- command instead of one each; each is settled as if it ran alone, in the order given. The run
-- reads the account once and writes it, the settled ids and the spends once, at its end (holds.lua's
-- views): a run that fails writes none of its settlements, and their retry settles them.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:spend:<yyyymm> (the admissions' month)
-- KEYS[3] {o:ID}:res    holds as versions before kept them (as in admit.lua)
-- KEYS[4] {o:ID}:done   sorted set: settled requestId scored by the ms it is forgotten
-- KEYS[5] {o:ID}:fence  set by begin-load.lua while a rebuild reads the ledger
-- KEYS[6] {o:ID}:kept   hash: requestId -> "cost|yyyymm|keyId|projectId", settlements that came
--                       while the counters were absent (applied by finish-load.lua)
-- KEYS[7] {o:ID}:watch  set: ids settled while the reconciler watches (watch-settled.lua)
-- ARGV[1] yyyymm (the admissions' month)   ARGV[2] ms the month's spend counters live
-- ARGV[3] ms kept settlements live
-- then eight per settlement: requestId, keyId, projectId, cost uEGP, now ms, ms the settled id is
-- forgotten, the lease it was admitted under or '', and the worst case it was admitted with under
-- that lease (ARGV[4..11], ARGV[12..19], ...)
-- A request admitted under a lease (admit.lua) has no hold of its own: its share of the lease's hold
-- (its worst case) is released as its own hold would be, and the field goes once nothing is left
-- (end-leases.lua releases the share no request took).
-- Reply: one per settlement, in order: {'settled', released uEGP} | {'settled_unreserved'}
--   | {'already_settled'} | {'pending'} (no counters: kept for the rebuild) | {'loading'} (a
--   rebuild is reading the ledger: nothing written, settle again shortly)
-- The cost is debited in full even when it exceeds the hold (the tokens were produced), so the
-- balance may go below zero; the next admission then answers quota_exceeded.
local month = ARGV[1]
-- The account, read once for the run and written once at its end (holds.lua's views).
local account = open_view(KEYS[1])
-- What the run adds to the month's spends, by field ('k|<keyId>', 'p|<projectId>'), summed as
-- numbers and written once at its end; and those fields in the order first added.
local spend_added, spend_fields = {}, {}

-- Adds `cost` to the month's spend `field` at the end of the run.
local function add_spend(field, cost)
  local added = spend_added[field]
  if not added then
    spend_fields[#spend_fields + 1] = field
    added = 0
  end
  spend_added[field] = added + cost
end
-- The ids this run settles, with the ms each is forgotten, for one ZADD at the end; and those the
-- settled set already held, from one ZMSCORE at the start.
local settled_now, settled_args, settled_before = {}, {}, {}
-- The ids settled while the reconciler watches, for one SADD at the end, and how long it must keep them.
local watched, watch_ttl_ms = {}, 0
-- Holds found where versions before kept them, deleted there at the end.
local legacy_released = {}

local function settle(request_id, key_id, project_id, cost_text, now_ms, forget_at_ms, lease_id, share_text)
  local hold_field = 'h|' .. request_id
  if not view_has(account, 'bal') then
    if redis.call('EXISTS', KEYS[5]) == 1 then
      return {'loading'}
    end
    if redis.call('HSETNX', KEYS[6], request_id, cost_text .. '|' .. month .. '|' .. key_id .. '|' .. project_id) == 0 then
      return {'already_settled'}
    end
    redis.call('PEXPIRE', KEYS[6], ARGV[3])
    return {'pending'}
  end
  if settled_before[request_id] or settled_now[request_id] then
    return {'already_settled'}
  end
  settled_now[request_id] = true
  settled_args[#settled_args + 1] = forget_at_ms
  settled_args[#settled_args + 1] = request_id
  local ttl_ms = watch_set_ttl(view_get(account, 'watch'), now_ms)
  if ttl_ms then
    watched[#watched + 1] = request_id
    watch_ttl_ms = math.max(watch_ttl_ms, ttl_ms)
  end

  local cost = tonumber(cost_text)
  local released = nil
  local record = nil
  if lease_id ~= '' then
    local lease_field = 'h|' .. lease_id
    local lease = view_get(account, lease_field)
    if lease then
      released = view_release_part(account, lease_field, lease, tonumber(share_text))
    end
  else
    record = view_get(account, hold_field)
    if record then
      view_set(account, hold_field, nil)
    else
      -- A hold kept where versions before kept them, until a release moves it.
      record = redis.call('HGET', KEYS[3], request_id)
      if record then
        legacy_released[#legacy_released + 1] = request_id
      end
    end
  end
  if record then
    -- Released where it was counted: under the ids it was admitted with.
    local amount, hold_month, hold_key, hold_project = parse_hold(record)
    released = amount
    view_unhold(account, amount, hold_month, hold_key, hold_project)
  end
  if cost > 0 then
    view_set_number(account, 'bal', view_number(account, 'bal') - cost)
  end
  if cost_text ~= '0' then
    add_spend('k|' .. key_id, cost)
    add_spend('p|' .. project_id, cost)
  end
  if released then
    return {'settled', int(released)}
  end
  return {'settled_unreserved'}
end

-- Settled ids are forgotten once past their time, by the earliest clock of the run: an id kept a
-- moment longer only costs memory.
local earliest = smallest_argv(8, 8)
if earliest then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', int(earliest))
end

-- What the settlements will read: the account's totals and their holds and held amounts in one
-- HMGET, and which of them were settled before in one ZMSCORE (when the counters are loaded).
local account_fields, ids = {'bal', 'held', 'watch'}, {}
for i = 4, #ARGV, 8 do
  ids[#ids + 1] = ARGV[i]
  account_fields[#account_fields + 1] = 'h|' .. (ARGV[i + 6] ~= '' and ARGV[i + 6] or ARGV[i])
  account_fields[#account_fields + 1] = 'k|' .. month .. '|' .. ARGV[i + 1]
  account_fields[#account_fields + 1] = 'p|' .. month .. '|' .. ARGV[i + 2]
end
view_prefetch(account, account_fields)
if view_has(account, 'bal') then
  local scores = call_sliced('ZMSCORE', KEYS[4], ids)
  for i = 1, #ids do
    if scores[i] then
      settled_before[ids[i]] = true
    end
  end
end

local replies = {}
for i = 4, #ARGV, 8 do
  replies[#replies + 1] = settle(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7])
end
view_commit(account)
hdel_all(KEYS[3], legacy_released)
call_sliced('ZADD', KEYS[4], settled_args)
if #watched > 0 then
  call_sliced('SADD', KEYS[7], watched)
  redis.call('PEXPIRE', KEYS[7], watch_ttl_ms)
end
if #spend_fields > 0 then
  local current, spends = call_sliced('HMGET', KEYS[2], spend_fields), {}
  for i, field in ipairs(spend_fields) do
    spends[#spends + 1] = field
    spends[#spends + 1] = int(tonumber(current[i] or '0') + spend_added[field])
  end
  hset_all(KEYS[2], spends)
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return replies
