-- admit.lua: admits one request or refuses it, atomically: the key's sliding RPM window first, then
-- a hold of the worst-case cost against the balance, the key's and the project's monthly caps.
-- Expired holds of the organization are released first (at most ARGV[12] of them).
-- KEYS[1] {o:ID}:acct           hash: bal, held, k|<yyyymm>|<keyId>, p|<yyyymm>|<projectId> (holds.lua);
--                               no 'bal': counters not loaded
-- KEYS[2] {o:ID}:spend:<yyyymm> hash: k|<keyId>, p|<projectId> -> settled spend this month
-- KEYS[3] {o:ID}:k:<keyId>:win  sorted set: requestId scored by admission ms
-- KEYS[4] {o:ID}:res            hash: requestId -> "amount|yyyymm|keyId|projectId", open holds
-- KEYS[5] {o:ID}:rx             sorted set: requestId scored by hold expiry ms
-- ARGV[1] requestId   ARGV[2] keyId   ARGV[3] projectId   ARGV[4] yyyymm (this month)
-- ARGV[5] now ms      ARGV[6] window start ms (now - window)   ARGV[7] window ms
-- ARGV[8] rpm limit   ARGV[9] worst case uEGP   ARGV[10] key cap uEGP or ''   ARGV[11] project cap or ''
-- ARGV[12] most expired holds to release   ARGV[13] hold expiry ms
-- Reply: {'admitted', remaining} | {'rate_limit_exceeded', retryAfterS} | {'quota_exceeded'} |
--   {'insufficient_balance'} | {'spending_cap_reached'} | {'project_spend_cap_exceeded'} |
--   {'not_loaded'} | {'duplicate'}
-- A refusal records nothing for the request (expired holds and window entries may still be dropped).
local request_id, key_id, project_id, month = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now = tonumber(ARGV[5])
release_expired(KEYS[1], KEYS[4], KEYS[5], ARGV[5], tonumber(ARGV[12]))
local key_field, project_field = 'k|' .. month .. '|' .. key_id, 'p|' .. month .. '|' .. project_id
local account = redis.call('HMGET', KEYS[1], 'bal', 'held', key_field, project_field)
if not account[1] then
  return {'not_loaded'}
end
if redis.call('HEXISTS', KEYS[4], request_id) == 1 then
  return {'duplicate'}
end

-- The window holds the requests admitted in (now - window, now].
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[6])
local limit = tonumber(ARGV[8])
local count = redis.call('ZCARD', KEYS[3])
if count >= limit then
  -- Admits again when the entry `count - limit` (oldest first) leaves the window.
  local entry = redis.call('ZRANGE', KEYS[3], count - limit, count - limit, 'WITHSCORES')
  local wait_s = math.ceil((tonumber(entry[2]) + tonumber(ARGV[7]) - now) / 1000)
  return {'rate_limit_exceeded', math.max(1, math.min(60, wait_s))}
end

local worst = tonumber(ARGV[9])
local balance, held = tonumber(account[1]), tonumber(account[2] or '0')
local key_held, project_held = tonumber(account[3] or '0'), tonumber(account[4] or '0')
if worst > 0 then
  if balance <= 0 then
    return {'quota_exceeded'}
  end
  if worst > balance - held then
    return {'insufficient_balance'}
  end
  if ARGV[10] ~= '' or ARGV[11] ~= '' then
    local spent = redis.call('HMGET', KEYS[2], 'k|' .. key_id, 'p|' .. project_id)
    if ARGV[10] ~= '' and worst > tonumber(ARGV[10]) - tonumber(spent[1] or '0') - key_held then
      return {'spending_cap_reached'}
    end
    if ARGV[11] ~= '' and worst > tonumber(ARGV[11]) - tonumber(spent[2] or '0') - project_held then
      return {'project_spend_cap_exceeded'}
    end
  end
end

redis.call('ZADD', KEYS[3], ARGV[5], request_id)
redis.call('PEXPIRE', KEYS[3], ARGV[7])
redis.call('HSET', KEYS[4], request_id, ARGV[9] .. '|' .. month .. '|' .. key_id .. '|' .. project_id)
redis.call('ZADD', KEYS[5], ARGV[13], request_id)
if worst > 0 then
  write_account(KEYS[1], {'held', int(held + worst)}, {key_field, key_held + worst, project_field, project_held + worst})
end
return {'admitted', limit - count - 1}
