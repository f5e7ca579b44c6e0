-- admit.lua: admits requests of one organization in one month, or refuses them, each atomically
-- and as if it ran alone, in the order given: the key's sliding RPM window first, then a hold of
-- the worst-case cost against the balance, the key's and the project's monthly caps. Expired holds
-- of the organization are released first (at most ARGV[3] of them). Several in one run cost Redis
-- and the client one command instead of one each, and the account and the month's spends are read
-- once for the run and written once at its end (holds.lua's views): what is left a request is its
-- window's commands.
-- A request may ask for a lease (slots > 1): room in the window and money for up to that many
-- requests of its key, which its gateway then admits itself until the lease ends (admission-leases.ts).
-- A lease takes at most a quarter of what is left of the window, of the balance not held and of each
-- cap, so that other gateways still find room; where that is less than two requests' worth, the
-- request is admitted alone. Its hold is the request's (h|<requestId>) for the lease's amount, living
-- past the request's own expiry by the lease's length; the window gets the request's entry and one
-- more, '<requestId>#<n>', for each other slot, scored at the lease's end: a request admitted under
-- the lease counts for at least the window from its admission (end-leases.lua scores it at its
-- admission once the lease is over). Later requests of the key in the same run take the lease's
-- slots, as its gateway would, when it has one and money left for them.
-- KEYS[1] {o:ID}:acct           hash: bal, held, k|<yyyymm>|<keyId>, p|<yyyymm>|<projectId>, hx,
--                               and the open holds h|<requestId> (holds.lua); no 'bal': not loaded
-- KEYS[2] {o:ID}:spend:<yyyymm> hash: k|<keyId>, p|<projectId> -> settled spend this month
-- KEYS[3] {o:ID}:res            hash: holds as versions before kept them (holds.lua)
-- KEYS[4] {o:ID}:lfence        set for a lease's length after a rebuild (finish-load.lua): while it
--                               lives, every request is answered {'fenced', ms it still lives}
-- KEYS[5...] {o:ID}:k:<keyId>:win  sorted set per key: requestId scored by admission ms
-- ARGV[1] yyyymm (this month)   ARGV[2] window ms   ARGV[3] most expired holds to release
-- then twelve per request (ARGV[4..15], ARGV[16..27], ...): requestId, keyId, projectId, now ms,
--   rpm limit, worst case uEGP, key cap uEGP or '', project cap uEGP or '', hold expiry ms, the
--   index in KEYS of its key's window, the slots asked for (1: this request alone) and the ms the
--   lease would end at
-- Reply: one per request, in order: {'admitted', remaining, reset ms (until the oldest entry of
--   the key's window leaves it), slots granted (1: this request alone)}
--   | {'leased', lease id, remaining, reset ms} (admitted under a lease granted earlier in the run)
--   | {'rate_limit_exceeded', retryAfterS}
--   | {'quota_exceeded'} | {'insufficient_balance'} | {'spending_cap_reached'}
--   | {'project_spend_cap_exceeded'} | {'not_loaded'} | {'duplicate'} | {'fenced', ms}
-- A refusal records nothing for the request (expired holds and window entries may still be dropped).
-- A run that fails writes no hold: only the window entries of the requests before the failure
-- stay, which can refuse early, never admit more.
local month, window_ms, release_limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- A window lives the window past its last admission, and 10 s more (the longest lease, maxLeaseMs
-- in admission-leases.ts): an entry of a lease is scored up to its end, and a request its gateway
-- admitted under it counts from then on, without a command that would push the expiry out.
local window_ttl_ms = int(window_ms + 10000)
-- The account's 'hx' (holds.lua), kept up to date as holds are added.
local hold_floor
-- The account and the month's spends, read once for the run and written once at its end.
local account, spends = open_view(KEYS[1]), open_view(KEYS[2])
-- The windows that got an entry in this run: their expiry is pushed out once, at the first entry
-- (a later PEXPIRE of the same run would move it by the script's run time at most).
local windows_expiring = {}
-- The leases granted in this run, by window key: what later requests of the key in the run may take.
local run_leases = {}

local function admit(request_id, key_id, project_id, now_text, limit_text, worst_text, key_cap, project_cap, expiry_text, window_key, slots_text, lease_end_text)
  local now = tonumber(now_text)
  local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
  local hold_field = 'h|' .. request_id
  if not view_has(account, 'bal') then
    return {'not_loaded'}
  end
  if view_get(account, hold_field) then
    return {'duplicate'}
  end
  local worst = tonumber(worst_text)
  local lease = run_leases[window_key]
  if lease and lease.used < lease.slots and worst <= lease.money and tonumber(expiry_text) <= lease.expiry and lease.limits == limit_text .. '|' .. key_cap .. '|' .. project_cap .. '|' .. project_id then
    lease.used = lease.used + 1
    lease.money = lease.money - worst
    return {'leased', lease.id, lease.remaining - (lease.used - 1), lease.reset}
  end

  -- The window holds the requests admitted in (now - window, now].
  redis.call('ZREMRANGEBYSCORE', window_key, '-inf', int(now - window_ms))
  local limit = tonumber(limit_text)
  local count = redis.call('ZCARD', window_key)
  if count >= limit then
    -- Admits again when the entry `count - limit` (oldest first) leaves the window.
    local entry = redis.call('ZRANGE', window_key, count - limit, count - limit, 'WITHSCORES')
    local wait_s = math.ceil((tonumber(entry[2]) + window_ms - now) / 1000)
    return {'rate_limit_exceeded', math.max(1, math.min(60, wait_s))}
  end

  local balance, held = view_number(account, 'bal'), view_number(account, 'held')
  local key_held, project_held = view_number(account, key_field), view_number(account, project_field)
  local slots = tonumber(slots_text)
  -- The requests' worth a lease may take of what is left, `left`: a quarter of it.
  local function quarter(left)
    return math.floor(left / (4 * worst))
  end
  if worst > 0 then
    if balance <= 0 then
      return {'quota_exceeded'}
    end
    local available = balance - held
    if worst > available then
      return {'insufficient_balance'}
    end
    slots = math.min(slots, quarter(available))
    if key_cap ~= '' then
      local key_left = tonumber(key_cap) - view_number(spends, 'k|' .. key_id) - key_held
      if worst > key_left then
        return {'spending_cap_reached'}
      end
      slots = math.min(slots, quarter(key_left))
    end
    if project_cap ~= '' then
      local project_left = tonumber(project_cap) - view_number(spends, 'p|' .. project_id) - project_held
      if worst > project_left then
        return {'project_spend_cap_exceeded'}
      end
      slots = math.min(slots, quarter(project_left))
    end
  end
  slots = math.min(slots, math.floor((limit - count) / 4))
  if slots < 2 then
    slots = 1
  end

  redis.call('ZADD', window_key, now_text, request_id)
  if slots > 1 then
    local entries = {}
    for slot = 2, slots do
      entries[#entries + 1] = lease_end_text
      entries[#entries + 1] = request_id .. '#' .. slot
    end
    redis.call('ZADD', window_key, unpack(entries))
  end
  if not windows_expiring[window_key] then
    windows_expiring[window_key] = true
    redis.call('PEXPIRE', window_key, window_ttl_ms)
  end
  local amount, amount_text = worst, worst_text
  local expiry = tonumber(expiry_text)
  if slots > 1 then
    amount = worst * slots
    amount_text = int(amount)
    expiry = expiry + tonumber(lease_end_text) - now
    expiry_text = int(expiry)
  end
  view_set(account, hold_field, amount_text .. '|' .. month .. '|' .. key_id .. '|' .. project_id .. '|' .. expiry_text)
  if expiry < hold_floor then
    hold_floor = expiry
    view_set(account, 'hx', expiry_text)
  end
  if amount > 0 then
    view_set_number(account, 'held', held + amount)
    view_set_held(account, key_field, key_held + amount)
    view_set_held(account, project_field, project_held + amount)
  end
  -- The oldest entry is this one when the window was empty: no read for a key's first request a minute.
  local oldest = now
  if count > 0 then
    oldest = tonumber(redis.call('ZRANGE', window_key, 0, 0, 'WITHSCORES')[2])
  end
  local reset_ms = math.max(0, math.min(window_ms, oldest + window_ms - now))
  if slots > 1 then
    run_leases[window_key] = {
      id = request_id, slots = slots, used = 1, money = worst * (slots - 1), expiry = expiry,
      limits = limit_text .. '|' .. key_cap .. '|' .. project_cap .. '|' .. project_id,
      remaining = limit - count - 1, reset = reset_ms,
    }
  end
  return {'admitted', limit - count - 1, reset_ms, slots}
end

local fenced_ms = redis.call('PTTL', KEYS[4])
if fenced_ms > 0 then
  local replies = {}
  for _ = 4, #ARGV, 12 do
    replies[#replies + 1] = {'fenced', fenced_ms}
  end
  return replies
end

-- Holds expired by the earliest clock of the run are released first: one a later request of the
-- run would see expired is released by the next run (never an admission on a hold's money).
local earliest = smallest_argv(7, 12)
if earliest then
  hold_floor = select(2, release_expired(KEYS[1], KEYS[3], int(earliest), release_limit))
end

-- What the requests will read, in one HMGET each for the account and the spends.
local account_fields, spend_fields = {'bal', 'held'}, {}
for i = 4, #ARGV, 12 do
  local key_id, project_id = ARGV[i + 1], ARGV[i + 2]
  account_fields[#account_fields + 1] = 'h|' .. ARGV[i]
  account_fields[#account_fields + 1] = 'k|' .. month .. '|' .. key_id
  account_fields[#account_fields + 1] = 'p|' .. month .. '|' .. project_id
  if ARGV[i + 6] ~= '' then
    spend_fields[#spend_fields + 1] = 'k|' .. key_id
  end
  if ARGV[i + 7] ~= '' then
    spend_fields[#spend_fields + 1] = 'p|' .. project_id
  end
end
view_prefetch(account, account_fields)
view_prefetch(spends, spend_fields)

local replies = {}
for i = 4, #ARGV, 12 do
  replies[#replies + 1] = admit(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], KEYS[tonumber(ARGV[i + 9])], ARGV[i + 10], ARGV[i + 11])
end
view_commit(account)
return replies
