-- wrk: POST /v1/conversations/{id}/messages, every request a distinct message (thread number
-- and a counter in its text), spread over the conversations in RECALL_LOAD_CONVS
-- (comma-separated ids), so that scripts/load.sh can check afterwards that every 201 was
-- stored once.
package.path = os.getenv("RECALL_LOAD_LUA") .. "/?.lua;" .. package.path
local common = require("common")

local next_thread = 0

function setup(thread)
  thread:set("thread_no", next_thread)
  next_thread = next_thread + 1
end

local convs = {}
local headers = common.headers()
local n = 0
-- Distinct across the wrk runs of one scripts/load.sh invocation as well.
local run = os.getenv("RECALL_LOAD_RUN") or "0"

function init(args)
  for id in string.gmatch(os.getenv("RECALL_LOAD_CONVS") or "", "[^,]+") do
    convs[#convs + 1] = id
  end
  if #convs == 0 then
    error("RECALL_LOAD_CONVS names no conversation")
  end
end

function request()
  n = n + 1
  local conv = convs[(n % #convs) + 1]
  local body = string.format(
    '{"role":"user","content":"load message %s-%d-%d: the user asks about the next step"}',
    run, thread_no, n)
  return wrk.format("POST", "/v1/conversations/" .. conv .. "/messages", headers, body)
end

done = common.done
