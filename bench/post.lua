-- wrk script for bench/run.ts: POSTs one JSON body and prints a machine-readable summary.
--   BENCH_BODY_FILE  file holding the request body (required)
--   BENCH_KEYS_FILE  optional, one API key per line; requests rotate over them (Authorization: Bearer)
-- With at most one key no request() is defined, so wrk sends a prebuilt request (its fast path).

local function read_file(path)
  local file = assert(io.open(path, "rb"), "cannot open " .. path)
  local text = file:read("*a")
  file:close()
  return text
end

wrk.method = "POST"
wrk.body = read_file(assert(os.getenv("BENCH_BODY_FILE"), "BENCH_BODY_FILE is not set"))
wrk.headers["Content-Type"] = "application/json"

local keys = {}
local keys_file = os.getenv("BENCH_KEYS_FILE")
if keys_file and keys_file ~= "" then
  for line in read_file(keys_file):gmatch("[^\r\n]+") do keys[#keys + 1] = line end
end

if #keys == 1 then
  wrk.headers["Authorization"] = "Bearer " .. keys[1]
elseif #keys > 1 then
  local prebuilt = {}
  local next_index = 0
  -- Offsets differ per thread so threads do not march over the keys in step.
  function init(args)
    for i, key in ipairs(keys) do
      -- wrk.format replaces wrk.headers with the table it is given: copy them.
      local headers = {}
      for name, value in pairs(wrk.headers) do headers[name] = value end
      headers["Authorization"] = "Bearer " .. key
      prebuilt[i] = wrk.format(nil, nil, headers)
    end
    next_index = math.random(#prebuilt) - 1
  end
  function request()
    next_index = next_index % #prebuilt + 1
    return prebuilt[next_index]
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
