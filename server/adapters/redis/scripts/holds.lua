-- holds.lua: functions shared by admit.lua, settle.lua and the other scripts the loader
-- puts after this text; not a script of its own.
--
-- Amounts are integers of magnitude below 2^53 (uEGP). Lua numbers are doubles, which hold them
-- exactly; sums stay below 2^53 because a hold never exceeds the balance. They are written back
-- with string.format('%d'), exact for such values (Redis's Lua formats %d as a 64-bit long).
--
-- The account hash ({o:ID}:acct) has the fields 'bal' (settled balance), 'held' (sum of open
-- holds), 'load' (the fence token of the rebuild that loaded it, see apply-late.lua), 'rev' (names
-- the counters' state for adjust.lua), 'watch' ("<until ms>|<token>" while the reconciler records
-- settled ids, see watch-settled.lua) and, per month, 'k|<yyyymm>|<keyId>' and
-- 'p|<yyyymm>|<projectId>' (what is held against that key's or project's cap; deleted at zero).
-- A hold is a field of the reservations hash: requestId -> "amount|yyyymm|keyId|projectId".

local function int(value)
  return string.format('%d', value)
end

-- The smallest number among ARGV[first], ARGV[first + step], ...; nil when there is none. Scripts
-- that take several requests use it for the earliest clock among them.
local function smallest_argv(first, step)
  local smallest = nil
  for i = first, #ARGV, step do
    local value = tonumber(ARGV[i])
    if smallest == nil or value < smallest then
      smallest = value
    end
  end
  return smallest
end

-- Adds a settled request id to the reconciler's watch set while the watch (the account's 'watch'
-- field, or nil) runs at `now_ms`.
local function record_watched(watch_key, watch, request_id, now_ms)
  if watch then
    local until_ms = tonumber(string.match(watch, '^(%d+)|'))
    if until_ms > tonumber(now_ms) then
      redis.call('SADD', watch_key, request_id)
      redis.call('PEXPIRE', watch_key, until_ms - tonumber(now_ms) + 60000)
    end
  end
end

local function parse_hold(record)
  local amount, month, key_id, project_id = string.match(record, '^(%d+)|(%d+)|([^|]+)|([^|]+)$')
  if amount == nil then
    error('corrupt hold record: ' .. record)
  end
  return tonumber(amount), month, key_id, project_id
end

-- Sets the account fields in `totals` (name, value pairs) and the per-month held fields in `held`
-- (name, number pairs), deleting those that reach zero.
local function write_account(account_key, totals, held)
  local emptied = {}
  for i = 1, #held, 2 do
    if held[i + 1] > 0 then
      totals[#totals + 1] = held[i]
      totals[#totals + 1] = int(held[i + 1])
    else
      emptied[#emptied + 1] = held[i]
    end
  end
  redis.call('HSET', account_key, unpack(totals))
  if #emptied > 0 then
    redis.call('HDEL', account_key, unpack(emptied))
  end
end

-- Takes a hold of `amount` off the account's held counters (the total, the key's and the project's).
local function unhold(account_key, amount, month, key_id, project_id)
  if amount == 0 then
    return
  end
  local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
  local held = redis.call('HMGET', account_key, 'held', key_field, project_field)
  write_account(account_key, {'held', int(tonumber(held[1] or '0') - amount)}, {
    key_field, tonumber(held[2] or '0') - amount,
    project_field, tonumber(held[3] or '0') - amount,
  })
end

-- Releases up to `limit` holds whose expiry is at or before `now_ms`; returns how many.
local function release_expired(account_key, holds_key, expiries_key, now_ms, limit)
  local expired = redis.call('ZRANGEBYSCORE', expiries_key, '-inf', now_ms, 'LIMIT', 0, limit)
  for _, request_id in ipairs(expired) do
    local record = redis.call('HGET', holds_key, request_id)
    if record then
      unhold(account_key, parse_hold(record))
      redis.call('HDEL', holds_key, request_id)
    end
    redis.call('ZREM', expiries_key, request_id)
  end
  return #expired
end
