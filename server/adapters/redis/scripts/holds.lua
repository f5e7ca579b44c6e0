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
-- 'p|<yyyymm>|<projectId>' (what is held against that key's or project's cap; deleted at zero), and
-- 'hx': no open hold expires before this time (ms; a lower bound, so settling a hold leaves it be).
-- An absent 'hx' is unknown, and the next release reads every hold to set it.
-- A hold is a field of the reservations hash: requestId -> "amount|yyyymm|keyId|projectId|expiry ms".
-- Keeping the expiry in the hold, rather than in a sorted set of its own, saves each request a ZADD
-- and a ZREM; releasing reads the holds only once the earliest of them may have expired.

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

-- The hold's amount, month, key, project and expiry. A record without its expiry (written before
-- holds kept one) counts as expired: its request settles unreserved, debited once all the same.
local function parse_hold(record)
  local amount, month, key_id, project_id, expiry = string.match(record, '^(%d+)|(%d+)|([^|]+)|([^|]+)|(%d+)$')
  if amount == nil then
    amount, month, key_id, project_id = string.match(record, '^(%d+)|(%d+)|([^|]+)|([^|]+)$')
    expiry = 0
  end
  if amount == nil then
    error('corrupt hold record: ' .. record)
  end
  return tonumber(amount), month, key_id, project_id, tonumber(expiry)
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

-- 'hx' when no hold is open: later than any expiry.
local no_hold_expiry = 9007199254740991

-- Releases up to `limit` holds whose expiry is at or before `now_ms`. Returns how many, and the
-- account's 'hx' afterwards. Nothing is read beyond 'hx' until `now_ms` reaches it.
local function release_expired(account_key, holds_key, now_ms, limit)
  local now = tonumber(now_ms)
  local floor = tonumber(redis.call('HGET', account_key, 'hx') or '-1')
  if floor > now then
    return 0, floor
  end
  local records = redis.call('HGETALL', holds_key)
  local released, earliest = 0, no_hold_expiry
  for i = 1, #records, 2 do
    local amount, month, key_id, project_id, expiry = parse_hold(records[i + 1])
    if expiry <= now and released < limit then
      unhold(account_key, amount, month, key_id, project_id)
      redis.call('HDEL', holds_key, records[i])
      released = released + 1
    elseif expiry < earliest then
      -- Expired ones over the limit too: the next release takes them.
      earliest = expiry
    end
  end
  redis.call('HSET', account_key, 'hx', int(earliest))
  return released, earliest
end
