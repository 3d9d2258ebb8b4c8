#!/usr/bin/env bash
# HTTP load figures of `recall serve` on SQLite (docs/BENCHMARKS.md, "HTTP load"), with wrk
# against 127.0.0.1:
#
#   context  POST /v1/conversations/{id}/context, 8,000-token transcript window, on the
#            10,000-message conversation of the store benchmarks (same generator and seed)
#   append   POST /v1/conversations/{id}/messages, each request a distinct message; then
#            checks that every acknowledged 201 was stored exactly once
#   soak     context and appends together for SOAK_SECS, the server's RSS sampled every 10 s
#   all      the three, in that order (default)
#
# Usage: bash scripts/load.sh [context|append|soak|all]
# Settings (environment):
#   DURATION=20s        each wrk run of `context` and `append`
#   CONTEXT_RUNS="1:1 1:8 1:32 2:64"   wrk threads:connections variants for `context`
#   APPEND_RUNS="1:8 1:32"             the same for `append`
#   APPEND_CONVS=4      conversations the appends are spread over
#   SOAK_SECS=600       soak duration; SOAK_CONTEXT=1:16 and SOAK_APPEND=1:4 its wrk settings
#   WORKERS=            the server's tokio worker threads (TOKIO_WORKER_THREADS; default: one
#                       per core)
#   AUTH=key            key: a stored API key (the usual path, one key lookup per request);
#                       none: --no-auth
#   RUST_LOG=warn       the server's log filter (info writes a line per request)
#   PORT=18080, N=10000 (messages of the context conversation), KEEP=1 keeps the work dir
#
# wrk and the server share the machine's cores: every figure is the two together.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=${1:-all}
case "$mode" in context | append | soak | all) ;; *)
  echo "usage: bash scripts/load.sh [context|append|soak|all]" >&2
  exit 2
  ;;
esac
DURATION=${DURATION:-20s}
CONTEXT_RUNS=${CONTEXT_RUNS:-"1:1 1:8 1:32 2:64"}
APPEND_RUNS=${APPEND_RUNS:-"1:8 1:32"}
APPEND_CONVS=${APPEND_CONVS:-4}
SOAK_SECS=${SOAK_SECS:-600}
SOAK_CONTEXT=${SOAK_CONTEXT:-1:16}
SOAK_APPEND=${SOAK_APPEND:-1:4}
WORKERS=${WORKERS:-}
AUTH=${AUTH:-key}
PORT=${PORT:-18080}
N=${N:-10000}
export RUST_LOG=${RUST_LOG:-warn}

log() { printf 'load: %s\n' "$*" >&2; }

# wrk (the load generator) and jq (reading answers) from Debian's packages when missing.
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

log "building recall and the workload writer (release)"
cargo build --release -q -p recall-cli
cargo build --release -q -p recall-engine --example workload_jsonl
target=${CARGO_TARGET_DIR:-$root/target}
recall="$target/release/recall"
workload="$target/release/examples/workload_jsonl"

work=$(mktemp -d "${TMPDIR:-/tmp}/recall-load.XXXXXX")
db="$work/load.db"
base="http://127.0.0.1:$PORT"
server_pid=
sampler_pid=
cleanup() {
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

log "writing the $N-message workload and importing it into $db"
"$workload" "$N" >"$work/conversation.jsonl"
ctx_id=$("$recall" import --db "$db" "$work/conversation.jsonl" --title "load context")
append_ids=()
for i in $(seq 1 "$APPEND_CONVS"); do
  append_ids+=("$("$recall" conversations new --db "$db" --title "load append $i")")
done
RECALL_LOAD_CONVS=$(
  IFS=,
  echo "${append_ids[*]}"
)
export RECALL_LOAD_CONVS RECALL_LOAD_LUA="$root/scripts/load"

serve_args=(serve --db "$db" --addr "127.0.0.1:$PORT")
if [ "$AUTH" = none ]; then
  serve_args+=(--no-auth)
  export RECALL_LOAD_AUTH=
else
  # The key reaches wrk through the environment, never its argv.
  RECALL_LOAD_AUTH="Bearer $("$recall" keys create --db "$db" --tenant default --label load 2>/dev/null)"
  export RECALL_LOAD_AUTH
fi
curl_auth=()
[ -n "$RECALL_LOAD_AUTH" ] && curl_auth=(-H "Authorization: $RECALL_LOAD_AUTH")

if [ -n "$WORKERS" ]; then export TOKIO_WORKER_THREADS=$WORKERS; fi
"$recall" "${serve_args[@]}" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || {
    cat "$work/server.log" >&2
    exit 1
  }
  sleep 0.1
done
curl -fsS "$base/healthz" >/dev/null

echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); server workers: ${WORKERS:-one per core}; auth: $AUTH; RUST_LOG=$RUST_LOG"
echo "== load before: $(uptime)"

# One answer checked by hand before measuring: a context that is not a 200 is no figure.
status=$(curl -sS -o "$work/context.json" -w '%{http_code}' "${curl_auth[@]}" \
  -H 'Content-Type: application/json' -d '{"format":"transcript","max_tokens":8000}' \
  "$base/v1/conversations/$ctx_id/context")
if [ "$status" != 200 ]; then
  log "the context request answered $status: $(head -c 300 "$work/context.json")"
  exit 1
fi
echo "== context answer: $(wc -c <"$work/context.json") bytes, $(jq -c '.stats | {included, turns, tokens, chars}' "$work/context.json" | head -c 200)"

# Mean server-side time per route since the last call, from /metrics: request (until the
# response head) and, for context, the engine's context build inside it.
declare -A last_sum last_count
server_side() {
  local metrics
  metrics=$(curl -fsS "$base/metrics")
  local key sum count
  for key in \
    'recall_http_request_duration_seconds_{sum,count}{route="/v1/conversations/{id}/context",method="POST"}' \
    'recall_http_request_duration_seconds_{sum,count}{route="/v1/conversations/{id}/messages",method="POST"}' \
    'recall_context_build_seconds_{sum,count}{format="transcript"}'; do
    sum=$(awk -v k="${key/_\{sum,count\}/_sum}" '$1 == k {print $2}' <<<"$metrics")
    count=$(awk -v k="${key/_\{sum,count\}/_count}" '$1 == k {print $2}' <<<"$metrics")
    [ -n "$count" ] || continue
    local d_sum d_count
    d_sum=$(awk -v a="$sum" -v b="${last_sum[$key]:-0}" 'BEGIN{print a-b}')
    d_count=$((count - ${last_count[$key]:-0}))
    last_sum[$key]=$sum
    last_count[$key]=$count
    [ "$d_count" -gt 0 ] || continue
    awk -v k="${key/_\{sum,count\}/}" -v s="$d_sum" -v c="$d_count" \
      'BEGIN{printf "   server-side mean %.3f ms over %d: %s\n", s/c*1000, c, k}'
  done
}
server_side >/dev/null

run_wrk() { # threads:connections lua url
  local t=${1%%:*} c=${1##*:}
  echo "-- wrk -t$t -c$c -d$DURATION --latency -s scripts/load/$2 $3"
  wrk -t"$t" -c"$c" -d"$DURATION" --latency -s "$root/scripts/load/$2" "$3" |
    sed -n -e '/Latency Distribution/,/requests in/p' -e '/Non-2xx/p' -e '/Socket errors/p' -e '/^RESULT/p'
  echo "   load: $(uptime | sed 's/.*load average/load average/')"
  server_side
}

if [ "$mode" = context ] || [ "$mode" = all ]; then
  echo
  echo "== context: POST /v1/conversations/{id}/context, $N messages, max_tokens 8000, transcript"
  for v in $CONTEXT_RUNS; do
    run_wrk "$v" context.lua "$base/v1/conversations/$ctx_id/context"
  done
fi

# Every acknowledged append must be stored once: stored >= acknowledged (a request cut by
# wrk's stop may still have been stored), all message texts distinct, seqs without gaps.
check_appends() { # acknowledged
  local stored=0 dups=0 id conv count last
  for id in "${append_ids[@]}"; do
    conv=$(curl -fsS "${curl_auth[@]}" "$base/v1/conversations/$id")
    count=$(jq .message_count <<<"$conv")
    last=$(jq .last_seq <<<"$conv")
    if [ "$count" != "$last" ]; then
      echo "   FAIL: conversation $id holds $count messages but its last seq is $last"
      return 1
    fi
    stored=$((stored + count))
  done
  dups=$(for id in "${append_ids[@]}"; do "$recall" export --db "$db" "$id"; done |
    jq -r '.content' | sort | uniq -d | wc -l)
  echo "   appends: acknowledged (201) $1, stored $stored, duplicated texts $dups"
  if [ "$stored" -lt "$1" ] || [ "$dups" != 0 ]; then
    echo "   FAIL: an acknowledged append is missing or a message was stored twice"
    return 1
  fi
}

if [ "$mode" = append ] || [ "$mode" = all ]; then
  echo
  echo "== append: POST /v1/conversations/{id}/messages, one message per request, over $APPEND_CONVS conversations"
  acked=0
  run_no=0
  for v in $APPEND_RUNS; do
    # Each run's messages carry its number: the texts stay distinct across runs.
    run_no=$((run_no + 1))
    export RECALL_LOAD_RUN=$run_no
    out=$(run_wrk "$v" append.lua "$base")
    echo "$out"
    ok=$(sed -n 's/^RESULT.* ok=\([0-9]*\).*/\1/p' <<<"$out")
    acked=$((acked + ok))
  done
  check_appends "$acked"
fi

if [ "$mode" = soak ] || [ "$mode" = all ]; then
  echo
  echo "== soak: ${SOAK_SECS}s of context (wrk ${SOAK_CONTEXT}) and appends (wrk ${SOAK_APPEND}) together; VmRSS every 10 s"
  before_acked=0
  for id in "${append_ids[@]}"; do
    before_acked=$((before_acked + $(curl -fsS "${curl_auth[@]}" "$base/v1/conversations/$id" | jq .message_count)))
  done
  (
    start=$(date +%s)
    while kill -0 "$server_pid" 2>/dev/null; do
      echo "$(($(date +%s) - start)) $(awk '/^VmRSS/{print $2}' "/proc/$server_pid/status")"
      sleep 10
    done
  ) >"$work/rss.txt" &
  sampler_pid=$!
  t=${SOAK_CONTEXT%%:*} c=${SOAK_CONTEXT##*:}
  wrk -t"$t" -c"$c" -d"${SOAK_SECS}s" --latency -s "$root/scripts/load/context.lua" \
    "$base/v1/conversations/$ctx_id/context" >"$work/soak-context.txt" &
  ctx_wrk=$!
  t=${SOAK_APPEND%%:*} c=${SOAK_APPEND##*:}
  RECALL_LOAD_RUN=soak wrk -t"$t" -c"$c" -d"${SOAK_SECS}s" --latency -s "$root/scripts/load/append.lua" "$base" \
    >"$work/soak-append.txt"
  wait "$ctx_wrk"
  sleep 1
  kill "$sampler_pid" 2>/dev/null || true
  wait "$sampler_pid" 2>/dev/null || true
  sampler_pid=
  echo "-- context: $(grep '^RESULT' "$work/soak-context.txt")"
  echo "-- append:  $(grep '^RESULT' "$work/soak-append.txt")"
  echo "   load: $(uptime | sed 's/.*load average/load average/')"
  server_side
  ok=$(sed -n 's/^RESULT.* ok=\([0-9]*\).*/\1/p' "$work/soak-append.txt")
  check_appends $((before_acked + ok))
  # RSS: first, min, max, last; the trend after a 60 s warm-up as a least-squares slope.
  awk '
    { t[NR] = $1; r[NR] = $2 }
    END {
      min = r[1]; max = r[1]
      for (i = 1; i <= NR; i++) { if (r[i] < min) min = r[i]; if (r[i] > max) max = r[i] }
      n = 0; sx = sy = sxx = sxy = 0
      for (i = 1; i <= NR; i++) if (t[i] >= 60) {
        n++; sx += t[i]; sy += r[i]; sxx += t[i] * t[i]; sxy += t[i] * r[i]
      }
      slope = (n > 1 && n * sxx - sx * sx != 0) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
      printf "   RSS (MiB) over %d samples: first %.1f, min %.1f, max %.1f, last %.1f; after 60 s: %+.2f MiB per 10 min\n",
        NR, r[1] / 1024, min / 1024, max / 1024, r[NR] / 1024, slope * 600 / 1024
    }' "$work/rss.txt"
  echo "   samples (s kB): $(tr '\n' ' ' <"$work/rss.txt")"
fi

echo
echo "== load after: $(uptime)"
if grep -qE ' (ERROR|WARN) ' "$work/server.log"; then
  echo "== server log warnings/errors:"
  grep -E ' (ERROR|WARN) ' "$work/server.log" | head -20
fi
