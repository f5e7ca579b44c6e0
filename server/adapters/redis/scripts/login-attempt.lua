-- login-attempt.lua: admits a password check of one e-mail address from one client IP, counting it
-- as a failure until it succeeds (the caller then takes it back). Both keys carry the address's
-- hash tag, so this runs on one cluster slot.
-- KEYS[1] sorted set: failures of the address from this IP (the pair), one member each, scored by ms
-- KEYS[2] sorted set: failures of the address from every IP
-- ARGV[1] now ms   ARGV[2] window ms   ARGV[3] failures that lock the pair
-- ARGV[4] failures of the address before its backoff starts   ARGV[5] longest backoff ms
-- ARGV[6] the attempt's member, unique
-- Reply: {0, 0} when admitted (the attempt added to both sets); {1, ms} while the pair is locked,
-- ms until its oldest failure that must leave does; {2, ms} while the address backs off this pair
-- (it failed here before), ms until the backoff after the address's last failure ends. A refused
-- attempt is not added.
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local pairLimit, threshold, maxBackoff = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local pairFailures = redis.call('ZCARD', KEYS[1])
if pairFailures >= pairLimit then
  local entry = redis.call('ZRANGE', KEYS[1], pairFailures - pairLimit, pairFailures - pairLimit, 'WITHSCORES')
  return {1, math.max(1, tonumber(entry[2]) + window - now)}
end
if pairFailures > 0 then
  -- Mirrors backoffMs in core/login-limiter.ts.
  local failures = redis.call('ZCARD', KEYS[2])
  if failures >= threshold then
    local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
    local backoff = math.min(1000 * 2 ^ math.min(failures - threshold, 30), maxBackoff)
    local wait = tonumber(last[2]) + backoff - now
    if wait > 0 then return {2, math.ceil(wait)} end
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[6])
redis.call('ZADD', KEYS[2], now, ARGV[6])
redis.call('PEXPIRE', KEYS[1], window)
redis.call('PEXPIRE', KEYS[2], window)
return {0, 0}
