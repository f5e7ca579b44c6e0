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
-- 'p|<yyyymm>|<projectId>' (what is held against that key's or project's cap; deleted at zero),
-- 'hx': no open hold expires before this time (ms; a lower bound, so settling a hold leaves it be;
-- absent: unknown, and the next release reads every hold to set it), and the open holds.
-- A hold is a field of the account: 'h|<requestId>' -> "amount|yyyymm|keyId|projectId|expiry ms".
-- In the account, a hold is checked, written, read and deleted by the commands that read and write
-- the counters anyway; its expiry in the record, rather than in a sorted set, saves a ZADD and a
-- ZREM; releasing reads the holds only once the earliest of them may have expired.
-- Versions before kept holds in a hash of their own ({o:ID}:res, requestId -> record): a settlement
-- still finds its hold there, and the first release moves the rest into the account.

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

-- The hold's amount, month, key, project and expiry. A hold without its expiry (written before
-- holds kept one) counts as expired: its request settles unreserved, debited once all the same.
-- A kept settlement ("cost|yyyymm|keyId|projectId", settle.lua) reads the same, expiry unused.
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

-- Lua's unpack gives at most some thousands of values: bulk writes go in slices of this many.
local unpack_slice = 1000

-- HSET of `fields` (name, value pairs) on `key`, in slices that unpack can give.
local function hset_all(key, fields)
  for first = 1, #fields, unpack_slice do
    redis.call('HSET', key, unpack(fields, first, math.min(first + unpack_slice - 1, #fields)))
  end
end

-- HDEL of `names` on `key`, in slices that unpack can give.
local function hdel_all(key, names)
  for first = 1, #names, unpack_slice do
    redis.call('HDEL', key, unpack(names, first, math.min(first + unpack_slice - 1, #names)))
  end
end

-- Sets the account fields in `totals` (name, value pairs) and the per-month held fields in `held`
-- (name, number pairs), deleting those that reach zero and the fields named in `deleted`.
local function write_account(account_key, totals, held, deleted)
  local emptied = deleted or {}
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

-- Releases up to `limit` holds whose expiry is at or before `now_ms`, after moving those of
-- `legacy_key` (the reservations hash of versions before) into the account. Returns how many, and
-- the account's 'hx' afterwards. Nothing is read beyond 'hx' until `now_ms` reaches it.
local function release_expired(account_key, legacy_key, now_ms, limit)
  local now = tonumber(now_ms)
  local floor = tonumber(redis.call('HGET', account_key, 'hx') or '-1')
  if floor > now then
    return 0, floor
  end
  local legacy = redis.call('HGETALL', legacy_key)
  if #legacy > 0 then
    for i = 1, #legacy, 2 do
      legacy[i] = 'h|' .. legacy[i]
    end
    hset_all(account_key, legacy)
    redis.call('DEL', legacy_key)
  end
  local fields = redis.call('HGETALL', account_key)
  local released, earliest = 0, no_hold_expiry
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'h|' then
      local amount, month, key_id, project_id, expiry = parse_hold(fields[i + 1])
      if expiry <= now and released < limit then
        redis.call('HDEL', account_key, fields[i])
        unhold(account_key, amount, month, key_id, project_id)
        released = released + 1
      elseif expiry < earliest then
        -- Expired ones over the limit too: the next release takes them.
        earliest = expiry
      end
    end
  end
  redis.call('HSET', account_key, 'hx', int(earliest))
  return released, earliest
end
