-- wrk: POST /v1/conversations/{id}/context with an 8,000-token transcript window, the request
-- of `cargo bench -p recall-engine --bench store` (context_sqlite). The URL carries the path.
package.path = os.getenv("RECALL_LOAD_LUA") .. "/?.lua;" .. package.path
local common = require("common")

wrk.method = "POST"
wrk.body = '{"format":"transcript","max_tokens":8000}'
wrk.headers = common.headers()

done = common.done
