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

-- When the reconciler's watch (the account's 'watch' field, or nil) runs at `now_ms`: the ms its
-- set of ids must live from then on. Otherwise nil.
local function watch_set_ttl(watch, now_ms)
  if watch then
    local until_ms = tonumber(string.match(watch, '^(%d+)|'))
    if until_ms > tonumber(now_ms) then
      return until_ms - tonumber(now_ms) + 60000
    end
  end
  return nil
end

-- Adds a settled request id to the reconciler's watch set while the watch runs at `now_ms`.
local function record_watched(watch_key, watch, request_id, now_ms)
  local ttl_ms = watch_set_ttl(watch, now_ms)
  if ttl_ms then
    redis.call('SADD', watch_key, request_id)
    redis.call('PEXPIRE', watch_key, ttl_ms)
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

-- Runs `command` on `key` with `values` after it, in slices that unpack can give (an even size, so
-- name, value pairs stay whole). Returns the slices' replies joined, for a command that answers a
-- list (one entry per value: HMGET, ZMSCORE).
local function call_sliced(command, key, values)
  local replies = {}
  for first = 1, #values, unpack_slice do
    local reply = redis.call(command, key, unpack(values, first, math.min(first + unpack_slice - 1, #values)))
    if type(reply) == 'table' then
      for i = 1, #reply do
        replies[#replies + 1] = reply[i]
      end
    end
  end
  return replies
end

-- HSET of `fields` (name, value pairs) on `key`.
local function hset_all(key, fields)
  call_sliced('HSET', key, fields)
end

-- HDEL of `names` on `key`.
local function hdel_all(key, names)
  call_sliced('HDEL', key, names)
end

-- A write-back view of one hash for the length of a script run: each field is read from Redis at
-- most once (`view_prefetch` reads many with one HMGET), and what changed is written once, by
-- `view_commit` (one HSET, one HDEL). A run that decides many requests reads what the ones before
-- it wrote from the view, so each is still decided as if it ran alone, in order; a Redis command
-- costs Lua and Redis a few microseconds before it does any work. Nothing else may touch the hash
-- between the view's first read and its commit. An amount is parsed once and formatted once, at
-- the commit (`view_number`, `view_set_number`), not at every request that moves it.
local function open_view(key)
  -- values: field -> string, false when absent, or true when the value is numbers[field], not yet
  -- formatted; numbers: field -> the value as a number, once read or set as one; written: the
  -- fields set, in the order first set.
  return {key = key, values = {}, numbers = {}, written = {}, changed = {}}
end

-- Reads those of `fields` the view has not read yet, with one HMGET (a few, for thousands).
local function view_prefetch(view, fields)
  local missing, asked = {}, {}
  for _, field in ipairs(fields) do
    if view.values[field] == nil and not asked[field] then
      asked[field] = true
      missing[#missing + 1] = field
    end
  end
  local values = call_sliced('HMGET', view.key, missing)
  for i = 1, #missing do
    view.values[missing[i]] = values[i] or false
  end
end

-- The field's value, or nil when it is absent.
local function view_get(view, field)
  local value = view.values[field]
  if value == true then
    return int(view.numbers[field])
  end
  if value == nil then
    value = redis.call('HGET', view.key, field) or false
    view.values[field] = value
  end
  return value or nil
end

-- Whether the field is present, without formatting a number the view holds for it.
local function view_has(view, field)
  local value = view.values[field]
  if value == nil then
    return view_get(view, field) ~= nil
  end
  return value ~= false
end

-- The field as a number, 0 when absent.
local function view_number(view, field)
  local number = view.numbers[field]
  if number == nil then
    number = tonumber(view_get(view, field) or '0')
    view.numbers[field] = number
  end
  return number
end

local function view_mark_written(view, field)
  if not view.changed[field] then
    view.changed[field] = true
    view.written[#view.written + 1] = field
  end
end

-- Sets the field to `value` (a string), or deletes it when `value` is nil.
local function view_set(view, field, value)
  view_mark_written(view, field)
  view.values[field] = value or false
  view.numbers[field] = nil
end

-- Sets the field to the integer `number`.
local function view_set_number(view, field, number)
  view_mark_written(view, field)
  view.values[field] = true
  view.numbers[field] = number
end

-- Sets a held amount (a number), deleting the field at zero.
local function view_set_held(view, field, amount)
  if amount > 0 then
    view_set_number(view, field, amount)
  else
    view_set(view, field, nil)
    view.numbers[field] = 0
  end
end

-- Takes a hold of `amount` off the held counters in the view (the total, the key's and the project's).
local function view_unhold(view, amount, month, key_id, project_id)
  if amount == 0 then
    return
  end
  local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
  view_set_number(view, 'held', view_number(view, 'held') - amount)
  view_set_held(view, key_field, view_number(view, key_field) - amount)
  view_set_held(view, project_field, view_number(view, project_field) - amount)
end

-- Releases up to `part` of the hold in `field` (a lease's, admit.lua): off the held counters, and off
-- the record, which goes once nothing is left. Returns what it released.
local function view_release_part(view, field, record, part)
  local amount, month, key_id, project_id, expiry = parse_hold(record)
  local released = math.min(part, amount)
  view_unhold(view, released, month, key_id, project_id)
  if released < amount then
    view_set(view, field, int(amount - released) .. '|' .. month .. '|' .. key_id .. '|' .. project_id .. '|' .. int(expiry))
  else
    view_set(view, field, nil)
  end
  return released
end

-- Writes what the view changed: one HSET and one HDEL (in slices that unpack can give).
local function view_commit(view)
  local writes, deletes = {}, {}
  for _, field in ipairs(view.written) do
    local value = view.values[field]
    if value == true then
      value = int(view.numbers[field])
    end
    if value then
      writes[#writes + 1] = field
      writes[#writes + 1] = value
    else
      deletes[#deletes + 1] = field
    end
  end
  hset_all(view.key, writes)
  hdel_all(view.key, deletes)
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
  local account = open_view(account_key)
  for i = 1, #fields, 2 do
    account.values[fields[i]] = fields[i + 1]
  end
  local released, earliest = 0, no_hold_expiry
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'h|' then
      local amount, month, key_id, project_id, expiry = parse_hold(fields[i + 1])
      if expiry <= now and released < limit then
        view_set(account, fields[i], nil)
        view_unhold(account, amount, month, key_id, project_id)
        released = released + 1
      elseif expiry < earliest then
        -- Expired ones over the limit too: the next release takes them.
        earliest = expiry
      end
    end
  end
  view_set(account, 'hx', int(earliest))
  view_commit(account)
  return released, earliest
end
