-- end-leases.lua: ends leases of one organization (admit.lua) that admit no more: releases the part
-- of each lease's hold that no request took, takes the window entries of its unused slots out of its
-- key's window, and scores each used one at the admission it counted, so that the window is what it
-- would have been without the lease. The requests admitted under it keep their shares of the hold
-- until they settle (settle.lua). Ending a lease again, or one whose counters were rebuilt since,
-- releases nothing more.
-- KEYS[1] {o:ID}:acct   KEYS[2...] {o:ID}:k:<keyId>:win (as in admit.lua)
-- ARGV, per lease: its id (the request that asked for it), the index in KEYS of its key's window,
--   its slots, the uEGP no request took, the slots used (at least 1, the asking request's), then the
--   admission ms of each used slot after the first
-- Reply: how many leases had a hold to release from.
local account = open_view(KEYS[1])

-- The leases, parsed; and what they read of the account, in one HMGET.
local leases, fields = {}, {'held'}
local i = 1
while i <= #ARGV do
  local used = tonumber(ARGV[i + 4])
  leases[#leases + 1] = {
    id = ARGV[i], window_key = KEYS[tonumber(ARGV[i + 1])], slots = tonumber(ARGV[i + 2]),
    unused_money = tonumber(ARGV[i + 3]), used = used, first_time = i + 5,
  }
  fields[#fields + 1] = 'h|' .. ARGV[i]
  i = i + 5 + used - 1
end
view_prefetch(account, fields)
local held_fields = {}
for _, lease in ipairs(leases) do
  local record = view_get(account, 'h|' .. lease.id)
  if record then
    local _, month, key_id, project_id = parse_hold(record)
    held_fields[#held_fields + 1] = 'k|' .. month .. '|' .. key_id
    held_fields[#held_fields + 1] = 'p|' .. month .. '|' .. project_id
  end
end
view_prefetch(account, held_fields)

local released = 0
for _, lease in ipairs(leases) do
  local lease_field = 'h|' .. lease.id
  local record = view_get(account, lease_field)
  if record then
    view_release_part(account, lease_field, record, lease.unused_money)
    released = released + 1
  end
  -- XX: an entry the window dropped (its key expired) stays dropped.
  if lease.used > 1 then
    local rescored = {}
    for slot = 2, lease.used do
      rescored[#rescored + 1] = ARGV[lease.first_time + slot - 2]
      rescored[#rescored + 1] = lease.id .. '#' .. slot
    end
    redis.call('ZADD', lease.window_key, 'XX', unpack(rescored))
  end
  if lease.used < lease.slots then
    local unused_slots = {}
    for slot = lease.used + 1, lease.slots do
      unused_slots[#unused_slots + 1] = lease.id .. '#' .. slot
    end
    redis.call('ZREM', lease.window_key, unpack(unused_slots))
  end
end
view_commit(account)
return released
