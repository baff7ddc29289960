-- wrk script for bench/serve.sh: POSTs to /v1/completions, cycling through
-- valid requests and malformed ones (bad JSON, wrong types, max_tokens 0,
-- unknown model), and stops each thread after LOWBIT_WRK_REQUESTS / threads
-- requests, so a run is bounded in requests as well as in time (-d).
-- Counts responses by status; `done` prints them.
local bodies = {
  '{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}',
  '{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "stream": true}',
  '{"prompt": "The dog", "max_tokens": 4}',
  '{"prompt": ',
  '{"prompt": 5}',
  '{"prompt": "x", "max_tokens": 0}',
  '{"prompt": "x", "model": "no-such-model"}',
  '[]',
}
local limit = tonumber(os.getenv("LOWBIT_WRK_REQUESTS") or "1000")
local threads = {}
local counter = 0
local sent = 0

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  statuses = {}
  per_thread = math.ceil(limit / tonumber(os.getenv("LOWBIT_WRK_THREADS") or "1"))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  local key = os.getenv("LOWBIT_API_KEY")
  if key and key ~= "" then wrk.headers["Authorization"] = "Bearer " .. key end
end

function request()
  sent = sent + 1
  return wrk.format(nil, "/v1/completions", nil, bodies[(sent % #bodies) + 1])
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if sent >= per_thread then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for k, v in pairs(s) do total[k] = (total[k] or 0) + v end
  end
  io.write("statuses:")
  for k, v in pairs(total) do io.write(string.format(" %s=%d", k, v)) end
  io.write(string.format("\nrequests: %d, errors (socket): connect %d, read %d, write %d, timeout %d\n",
    summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
