-- admit.lua: admits requests of one organization in one month, or refuses them, each atomically
-- and as if it ran alone, in the order given: the key's sliding RPM window first, then a hold of
-- the worst-case cost against the balance, the key's and the project's monthly caps. Expired holds
-- of the organization are released first (at most ARGV[3] of them). Several in one run cost Redis
-- and the client one command instead of one each.
-- KEYS[1] {o:ID}:acct           hash: bal, held, k|<yyyymm>|<keyId>, p|<yyyymm>|<projectId>, hx,
--                               and the open holds h|<requestId> (holds.lua); no 'bal': not loaded
-- KEYS[2] {o:ID}:spend:<yyyymm> hash: k|<keyId>, p|<projectId> -> settled spend this month
-- KEYS[3] {o:ID}:res            hash: holds as versions before kept them (holds.lua)
-- KEYS[4...] {o:ID}:k:<keyId>:win  sorted set per key: requestId scored by admission ms
-- ARGV[1] yyyymm (this month)   ARGV[2] window ms   ARGV[3] most expired holds to release
-- then ten per request (ARGV[4..13], ARGV[14..23], ...): requestId, keyId, projectId, now ms,
--   rpm limit, worst case uEGP, key cap uEGP or '', project cap uEGP or '', hold expiry ms, and
--   the index in KEYS of its key's window
-- Reply: one per request, in order: {'admitted', remaining, reset ms (until the oldest entry of
--   the key's window leaves it)} | {'rate_limit_exceeded', retryAfterS}
--   | {'quota_exceeded'} | {'insufficient_balance'} | {'spending_cap_reached'}
--   | {'project_spend_cap_exceeded'} | {'not_loaded'} | {'duplicate'}
-- A refusal records nothing for the request (expired holds and window entries may still be dropped).
local month, window_ms, release_limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- The account's 'hx' (holds.lua), kept up to date as holds are added.
local hold_floor

local function admit(request_id, key_id, project_id, now_text, limit_text, worst_text, key_cap, project_cap, expiry_text, window_key)
  local now = tonumber(now_text)
  local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
  local hold_field = 'h|' .. request_id
  local account = redis.call('HMGET', KEYS[1], 'bal', 'held', key_field, project_field, hold_field)
  if not account[1] then
    return {'not_loaded'}
  end
  if account[5] then
    return {'duplicate'}
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

  local worst = tonumber(worst_text)
  local balance, held = tonumber(account[1]), tonumber(account[2] or '0')
  local key_held, project_held = tonumber(account[3] or '0'), tonumber(account[4] or '0')
  if worst > 0 then
    if balance <= 0 then
      return {'quota_exceeded'}
    end
    if worst > balance - held then
      return {'insufficient_balance'}
    end
    if key_cap ~= '' or project_cap ~= '' then
      local spent = redis.call('HMGET', KEYS[2], 'k|' .. key_id, 'p|' .. project_id)
      if key_cap ~= '' and worst > tonumber(key_cap) - tonumber(spent[1] or '0') - key_held then
        return {'spending_cap_reached'}
      end
      if project_cap ~= '' and worst > tonumber(project_cap) - tonumber(spent[2] or '0') - project_held then
        return {'project_spend_cap_exceeded'}
      end
    end
  end

  redis.call('ZADD', window_key, now_text, request_id)
  redis.call('PEXPIRE', window_key, ARGV[2])
  local totals = {hold_field, worst_text .. '|' .. month .. '|' .. key_id .. '|' .. project_id .. '|' .. expiry_text}
  local expiry = tonumber(expiry_text)
  if expiry < hold_floor then
    hold_floor = expiry
    totals[3], totals[4] = 'hx', expiry_text
  end
  local held_fields = {}
  if worst > 0 then
    totals[#totals + 1] = 'held'
    totals[#totals + 1] = int(held + worst)
    held_fields = {key_field, key_held + worst, project_field, project_held + worst}
  end
  write_account(KEYS[1], totals, held_fields)
  -- The oldest entry is this one when the window was empty: no read for a key's first request a minute.
  local oldest = now
  if count > 0 then
    oldest = tonumber(redis.call('ZRANGE', window_key, 0, 0, 'WITHSCORES')[2])
  end
  local reset_ms = math.max(0, math.min(window_ms, oldest + window_ms - now))
  return {'admitted', limit - count - 1, reset_ms}
end

-- Holds expired by the earliest clock of the run are released first: one a later request of the
-- run would see expired is released by the next run (never an admission on a hold's money).
local earliest = smallest_argv(7, 10)
if earliest then
  hold_floor = select(2, release_expired(KEYS[1], KEYS[3], int(earliest), release_limit))
end

local replies = {}
for i = 4, #ARGV, 10 do
  replies[#replies + 1] = admit(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], KEYS[tonumber(ARGV[i + 9])])
end
return replies
