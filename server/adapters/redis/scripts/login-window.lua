-- login-window.lua: one exact sliding window of events (failed logins, sign-ups and verifications of
-- an IP, verification mails of a user), shared by every gateway.
-- KEYS[1] sorted set: an event per member, scored by its time in ms
-- ARGV[1] now ms   ARGV[2] window ms   ARGV[3] limit ('0': none)
-- ARGV[4] 'record' (add this event when under the limit) or 'check' (add nothing)
-- ARGV[5] the event's member, unique
-- Reply: 0 when under the limit (and the event added for 'record'), else the ms until the event
-- that must leave for one more to fit leaves the window. A refused event is not added.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if limit > 0 then
  local count = redis.call('ZCARD', KEYS[1])
  if count >= limit then
    local entry = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
    return math.max(1, tonumber(entry[2]) + window - now)
  end
end
if ARGV[4] == 'record' then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], window)
end
return 0
