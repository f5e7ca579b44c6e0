-- release-expired.lua: releases the organization's holds that expired (their gateway died before
-- settling), at most ARGV[2] per call.
-- KEYS[1] {o:ID}:acct   KEYS[2] {o:ID}:res   (as in admit.lua)
-- ARGV[1] now ms   ARGV[2] most holds to release
-- Reply: how many holds were released; fewer than ARGV[2] means no expired hold is left.
return (release_expired(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2])))
