-- watch-settled.lua: starts recording which requests settle.lua settles and apply-late.lua debits
-- for the organization, until a time, for the reconciler (snapshot.lua returns them with the
-- counters). A watch that runs is joined and lasts until the later end; one that ended is begun
-- anew, its ids forgotten.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:watch   (as in settle.lua)
-- ARGV[1] now ms   ARGV[2] ms the watch ends   ARGV[3] the token of a watch begun anew
-- Reply: the watch's token; nil (nothing written) when the counters are absent
if redis.call('HEXISTS', KEYS[1], 'bal') == 0 then
  return nil
end
local now, until_ms, token = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local current = redis.call('HGET', KEYS[1], 'watch')
local running_until, running_token = nil, nil
if current then
  running_until, running_token = string.match(current, '^(%d+)|(.+)$')
  running_until = tonumber(running_until)
end
if running_until and running_until > now then
  token = running_token
  until_ms = math.max(until_ms, running_until)
else
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'watch', string.format('%d', until_ms) .. '|' .. token)
return token
