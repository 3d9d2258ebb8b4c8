-- Shared by the wrk scripts of scripts/load.sh: the Authorization header (from the
-- environment, so the key is in no argv) and a one-line summary the script parses.
local M = {}

function M.headers()
  local h = { ["Content-Type"] = "application/json" }
  local auth = os.getenv("RECALL_LOAD_AUTH")
  if auth and auth ~= "" then
    h["Authorization"] = auth
  end
  return h
end

-- `RESULT requests=… rps=… p50_ms=… …`: every request counted, errors split by kind.
function M.done(summary, latency)
  local secs = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d secs=%.1f rps=%.0f ok=%d status_errors=%d connect=%d read=%d write=%d timeout=%d " ..
    "mean_ms=%.3f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f\n",
    summary.requests, secs, summary.requests / secs, summary.requests - e.status, e.status,
    e.connect, e.read, e.write, e.timeout, latency.mean / 1e3,
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3, latency:percentile(99) / 1e3,
    latency:percentile(99.9) / 1e3, latency.max / 1e3))
end

return M
