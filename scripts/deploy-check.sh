#!/usr/bin/env bash
# The team deployment of docs/DEPLOY.md, done for real on this machine and checked through
# TLS; scripts/test.sh runs it in CI. As root, on Debian with PostgreSQL from its packages:
#  1. a PostgreSQL cluster of its own with Debian's default authentication (pg_createcluster:
#     peer on the local socket, scram-sha-256 over TCP), port RECALL_DEPLOY_PG_PORT (5499);
#  2. scripts/setup-postgres.sh against it: a password-less TCP login is refused, the URL it
#     writes logs in, and recall-store's API-key tests pass with that URL;
#  3. DEPLOY.md steps 1-3 on that cluster: the system user `recall`, the role and database
#     `recall` (made through the socket as the postgres OS user), the errors recall gives while
#     they are missing or the password is wrong, /etc/recall's files (here under a temporary
#     directory) from deploy/recall.toml, a key from `recall keys create` and one in the file;
#  4. deploy/recall.service: `systemd-analyze verify`, then its ExecStart run as systemd would
#     run it (User=, Environment=, EnvironmentFile=, LoadCredential=, WorkingDirectory=,
#     UMask=, NoNewPrivileges=) under strace, whose system calls and socket families are held
#     against SystemCallFilter= and RestrictAddressFamilies=;
#  5. deploy/nginx-recall.conf in Debian's nginx (installed if absent) with a self-signed
#     certificate, on unprivileged ports, in the foreground, with its own prefix and logs;
#  6. through TLS: /readyz 200, the HTTP port redirects, no key is a 401, keys from the
#     database and from recall.toml (their tenants kept apart), a chat streamed over SSE that
#     arrives as it is sent, a chat over a WebSocket (both from a fake OpenAI-compatible
#     upstream named in recall.env);
#  7. SIGTERM stops recall cleanly; a pg_dump of its database restores and reads back.
# Everything it starts or creates is removed on exit. RECALL_BIN: the binary to deploy
# (default: target/debug/recall, built here with `cargo build -p recall-cli`).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
t0=$SECONDS

say() { printf '== deploy-check [%3ds] %s\n' "$((SECONDS - t0))" "$*"; }
ok() { printf '   ok: %s\n' "$*"; }
fail() {
  printf 'deploy-check: FAIL: %s\n' "$*" >&2
  exit 1
}

if [ "$(id -u)" != 0 ]; then
  [ "${CI:-}" = true ] && fail "must run as root (it creates a PostgreSQL cluster and a system user)"
  echo "deploy-check: needs root (a PostgreSQL cluster, a system user, nginx); skipped"
  exit 0
fi

tmp=$(mktemp -d /tmp/recall-deploy-check.XXXXXX)
chmod 0755 "$tmp"
pg_port=${RECALL_DEPLOY_PG_PORT:-5499}
cluster=recalldeploycheck
pg_ver=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)
created_user=
pids=()
unit_pid=

drop_cluster() {
  local v
  for v in $(pg_lsclusters -h 2>/dev/null | awk -v c="$cluster" '$2 == c {print $1}'); do
    pg_dropcluster --stop "$v" "$cluster" >/dev/null 2>&1 || true
  done
}
cleanup() {
  local rc=$? p
  # recall runs under strace (the unit's process): stop it first, by its pid.
  if [ -n "${unit_pid:-}" ]; then
    for p in $(pgrep -P "$unit_pid" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  drop_cluster
  if [ -n "$created_user" ]; then userdel recall 2>/dev/null || true; fi
  if [ "$rc" != 0 ]; then
    for f in "$tmp"/recall.log "$tmp"/nginx/error.log "$tmp"/upstream.log; do
      [ -s "$f" ] && { echo "--- $f (last lines)"; tail -n 30 "$f"; }
    done
  fi
  rm -rf "$tmp"
  if [ "$rc" = 0 ]; then
    say "passed"
  else
    echo "deploy-check: FAILED after $((SECONDS - t0)) s" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Python helpers: the unit runner, the syscall check, the fake upstream, the SSE and
# WebSocket clients. Standard library only.
cat >"$tmp/helper.py" <<'PY'
import http.client, json, os, re, socket, ssl, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def unit_entries(path):
    """[(key, value)] of a unit's [Service] section, continuation lines joined."""
    out, section, pending = [], None, ""
    for raw in open(path, encoding="utf-8"):
        line = pending + raw.rstrip("\n")
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("["):
            section = s.strip("[]")
        elif "=" in s and section == "Service":
            k, v = s.split("=", 1)
            out.append((k.strip(), v.strip()))
    return out


def mapped(value, maps):
    for src, dst in maps:
        value = value.replace(src, dst)
    return value


def unit_run(args):
    """Runs a unit's ExecStart as systemd would: unit, maps (src=dst ...), strace output."""
    unit, cred_dir, strace_out, *maps = args
    maps = [tuple(m.split("=", 1)) for m in maps]
    entries = unit_entries(unit)
    get = lambda k: [v for key, v in entries if key == k]
    one = lambda k, d=None: (get(k) or [d])[-1]
    user = one("User")
    group = one("Group", user)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "LANG": "C.UTF-8", "USER": user, "LOGNAME": user, "SHELL": "/usr/sbin/nologin"}
    state = one("StateDirectory")
    if state:
        d = mapped("/var/lib/" + state, maps)
        os.makedirs(d, exist_ok=True)
        subprocess.run(["chown", f"{user}:{group}", d], check=True)
        os.chmod(d, int(one("StateDirectoryMode", "0755"), 8))
        env["STATE_DIRECTORY"] = d
    import pwd
    home = pwd.getpwnam(user).pw_dir
    env["HOME"] = mapped(home, maps)
    # LoadCredential=ID:PATH: a copy readable by the service's user alone.
    creds = get("LoadCredential")
    if creds:
        os.makedirs(cred_dir, mode=0o500, exist_ok=True)
        for c in creds:
            cid, src = c.split(":", 1)
            dst = os.path.join(cred_dir, cid)
            with open(mapped(src, maps), "rb") as f, open(dst, "wb") as g:
                g.write(f.read())
            os.chmod(dst, 0o400)
            subprocess.run(["chown", user, dst], check=True)
        subprocess.run(["chown", user, cred_dir], check=True)
        env["CREDENTIALS_DIRECTORY"] = cred_dir
    spec = lambda v: v.replace("%d", cred_dir).replace("%%", "%")
    for e in get("Environment"):
        for item in e.split():
            k, v = item.split("=", 1)
            env[k] = spec(v.strip('"'))
    for f in get("EnvironmentFile"):
        optional = f.startswith("-")
        f = mapped(f.lstrip("-"), maps)
        if not os.path.exists(f):
            if optional:
                continue
            sys.exit(f"EnvironmentFile {f} is missing")
        for line in open(f, encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                env[k.strip()] = v.strip().strip('"')
    argv = mapped(spec(one("ExecStart")), maps).split()
    wd = mapped(one("WorkingDirectory", "/"), maps)
    cmd = ["setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups"]
    if one("NoNewPrivileges", "no") in ("yes", "true", "1"):
        cmd.append("--no-new-privs")
    cmd += ["strace", "-f", "-qq", "-o", strace_out, "--"] + argv
    os.chdir(wd)
    os.umask(int(one("UMask", "0022"), 8))
    print("unit: " + " ".join(argv), file=sys.stderr, flush=True)
    os.execvpe(cmd[0], cmd, env)


def filter_sets():
    """systemd's syscall groups, expanded."""
    text = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"],
                          capture_output=True, text=True, check=True).stdout
    groups, cur = {}, None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("@") and not line.startswith(" "):
            cur = groups.setdefault(s, set())
        elif cur is not None and s and not s.startswith("#"):
            cur.add(s)

    def expand(name, seen=()):
        if not name.startswith("@"):
            return {name}
        out = set()
        for m in groups.get(name, ()):
            if m not in seen:
                out |= expand(m, seen + (name,))
        return out
    return expand


def syscalls(args):
    """Checks the calls strace saw against the unit's SystemCallFilter= and
    RestrictAddressFamilies=."""
    unit, trace = args
    entries = unit_entries(unit)
    expand = filter_sets()
    allow, deny = None, set()
    for k, v in entries:
        if k != "SystemCallFilter":
            continue
        neg = v.startswith("~")
        names = set()
        for n in v.lstrip("~").split():
            names |= expand(n)
        if neg:
            deny |= names
        else:
            allow = (allow or set()) | names
    families = set()
    for k, v in entries:
        if k == "RestrictAddressFamilies":
            families |= set(v.split())
    used, fams = set(), set()
    call = re.compile(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]")
    for line in open(trace, encoding="utf-8", errors="replace"):
        m = call.match(line)
        if m and "resumed>" not in line.split("(", 1)[0]:
            used.add(m.group(1))
        f = re.search(r"\bsocket\((AF_[A-Z0-9]+)", line)
        if f:
            fams.add(f.group(1))
    bad = sorted((used - allow if allow is not None else set()) | (used & deny))
    badfam = sorted(fams - families) if families else []
    print(f"{len(used)} distinct system calls, socket families {sorted(fams)}")
    if bad:
        print("refused by SystemCallFilter=: " + " ".join(bad))
    if badfam:
        print("refused by RestrictAddressFamilies=: " + " ".join(badfam))
    sys.exit(1 if bad or badfam or not used else 0)


class Upstream(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat server: 'Hello', a pause of PAUSE s, then ' again.'"""
    PAUSE = 1.5

    def log_message(self, fmt, *a):
        sys.stderr.write("upstream: " + fmt % a + "\n")

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()

        def chunk(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
        chunk(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": "Hello"},
                                   "finish_reason": None}]))
        time.sleep(self.PAUSE)
        chunk(dict(base, choices=[{"index": 0, "delta": {"content": " again."}, "finish_reason": None}]))
        chunk(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        chunk(dict(base, choices=[], usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def upstream(args):
    srv = ThreadingHTTPServer(("127.0.0.1", int(args[0])), Upstream)
    srv.serve_forever()


def tls_socket(port, cafile, host):
    ctx = ssl.create_default_context(cafile=cafile)
    raw = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
    return ctx.wrap_socket(raw, server_hostname=host)


class Tls(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:port, the certificate checked for `host` (SNI too)."""

    def __init__(self, port, cafile, host):
        super().__init__(host, int(port), context=ssl.create_default_context(cafile=cafile),
                         timeout=30)

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)


def sse(args):
    """POST …/chat through the proxy; the first text must arrive before the pause ends."""
    port, cafile, host, key, conv = args
    c = Tls(port, cafile, host)
    c.request("POST", f"/v1/conversations/{conv}/chat", json.dumps({"content": "Say hello."}),
              {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Accept": "text/event-stream"})
    r = c.getresponse()
    if r.status != 200:
        sys.exit(f"chat over SSE: {r.status} {r.read(500)!r}")
    times, events = {}, []
    while (line := r.readline()):
        t = time.monotonic()
        text = line.decode(errors="replace").strip()
        if text.startswith("event:"):
            ev = text.split(":", 1)[1].strip()
            events.append(ev)
            times.setdefault(ev, t)
            if ev in ("done", "error"):
                break
    if "done" not in times or "assistant_chunk" not in times:
        sys.exit(f"chat over SSE: events {events}")
    gap = times["done"] - times["assistant_chunk"]
    print(f"{r.getheader('content-type')}, events {' '.join(dict.fromkeys(events))}, "
          f"the first text {gap:.2f} s before the end")
    if gap < Upstream.PAUSE * 0.6:
        sys.exit("the reply's first text arrived with its end: the proxy buffers the stream")


def ws_frame(payload, opcode=1):
    data = payload.encode()
    mask = os.urandom(4)
    n = len(data)
    head = bytes([0x80 | opcode])
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def ws_read(s):
    def exact(n):
        buf = b""
        while len(buf) < n:
            part = s.recv(n - len(buf))
            if not part:
                raise EOFError
            buf += part
        return buf
    b0, b1 = exact(2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(exact(2), "big")
    elif n == 127:
        n = int.from_bytes(exact(8), "big")
    return b0 & 0x0F, exact(n)


def ws(args):
    """A chat turn over GET …/ws through the proxy."""
    port, cafile, host, key, conv = args
    s = tls_socket(port, cafile, host)
    s.sendall((f"GET /v1/conversations/{conv}/ws HTTP/1.1\r\nHost: {host}\r\n"
               f"Authorization: Bearer {key}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        part = s.recv(1)
        if not part:
            sys.exit(f"WebSocket: connection closed during the handshake: {head!r}")
        head += part
    status = head.split(b"\r\n", 1)[0].decode()
    if " 101 " not in status:
        sys.exit(f"WebSocket: {status}")
    s.sendall(ws_frame(json.dumps({"type": "user_message", "content": "Hello?", "request_id": "r1"})))
    kinds = []
    while True:
        op, data = ws_read(s)
        if op == 9:
            s.sendall(ws_frame(data.decode(errors="replace"), 10))
            continue
        if op != 1:
            sys.exit(f"WebSocket: frame opcode {op} after events {kinds}")
        ev = json.loads(data)
        kinds.append(ev.get("type"))
        if ev.get("type") in ("done", "error"):
            break
    s.sendall(ws_frame("", 8))
    print(f"{status}; events {' '.join(dict.fromkeys(kinds))}")
    if kinds[-1] != "done":
        sys.exit(f"WebSocket: the turn ended with {kinds[-1]}")


if __name__ == "__main__":
    {"unit-run": unit_run, "syscalls": syscalls, "upstream": upstream, "sse": sse,
     "ws": ws}[sys.argv[1]](sys.argv[2:])
PY
helper() { python3 "$tmp/helper.py" "$@"; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# A password through the environment only (never in argv): PW=… pg_tcp USER DB [SQL].
pg_tcp() {
  PGPASSWORD="$PW" PGPASSFILE=/nonexistent psql -X -w -q -At -h 127.0.0.1 -p "$pg_port" \
    -U "$1" -d "$2" -c "${3:-SELECT 1}"
}
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# --- tools --------------------------------------------------------------------------------
need() { # COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  say "installing $2 from Debian's packages"
  apt-get update -qq && apt-get install -y -qq "$2" >/dev/null
}
need pg_createcluster postgresql
need curl curl
need jq jq
need openssl openssl
need strace strace
need systemd-analyze systemd
if ! command -v nginx >/dev/null 2>&1; then
  need nginx nginx
  # The package starts its own nginx (port 80) where it can; this check runs its own.
  if [ -s /run/nginx.pid ]; then
    start-stop-daemon --stop --quiet --pidfile /run/nginx.pid --retry 5 || true
  fi
fi
[ -n "$pg_ver" ] || fail "no PostgreSQL server in /usr/lib/postgresql"
bin=${RECALL_BIN:-}
if [ -z "$bin" ]; then
  say "building recall (cargo build -p recall-cli)"
  cargo build -q -p recall-cli --locked
  bin=$checkout/target/debug/recall
fi
[ -x "$bin" ] || fail "no recall binary at $bin"
install -m 0755 "$bin" "$tmp/recall" # where the service's user can run it
bin=$tmp/recall
ok "$("$bin" --version), nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), PostgreSQL $pg_ver"

# --- 1. a cluster with Debian's default authentication -------------------------------------
say "PostgreSQL cluster $cluster (port $pg_port) with Debian's default authentication"
drop_cluster # one left by a killed run
if pg_isready -q -h 127.0.0.1 -p "$pg_port"; then
  fail "port $pg_port is taken; set RECALL_DEPLOY_PG_PORT"
fi
pg_createcluster "$pg_ver" "$cluster" --port "$pg_port" >"$tmp/pg_createcluster.log" 2>&1 ||
  { cat "$tmp/pg_createcluster.log"; fail "pg_createcluster"; }
pg_ctlcluster --skip-systemctl-redirect "$pg_ver" "$cluster" start
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.5; done
hba=/etc/postgresql/$pg_ver/$cluster/pg_hba.conf
ok "pg_hba.conf: $(grep -E '^(local|host)[[:space:]]+all[[:space:]]+all' "$hba" | awk '{print $1 " " $NF}' | sort -u | paste -sd, -)"
if PW= pg_tcp postgres postgres >/dev/null 2>&1; then
  fail "a password-less TCP login as postgres works on the new cluster: not Debian's default"
fi
ok "a password-less TCP login is refused"

# --- 2. setup's PostgreSQL part against it -------------------------------------------------
say "scripts/setup-postgres.sh with Debian's default authentication"
url_file=$tmp/pg-test-url
env -u RECALL_TEST_PG_URL RECALL_PG_PORT="$pg_port" RECALL_PG_URL_FILE="$url_file" \
  bash scripts/setup-postgres.sh | sed 's/^/   /'
[ -s "$url_file" ] || fail "setup-postgres.sh wrote no URL to $url_file"
[ "$(stat -c %a "$url_file")" = 600 ] || fail "$url_file is not mode 0600"
test_url=$(head -n 1 "$url_file")
PW=${test_url#postgres://recall_test:}
PW=${PW%@*}
PW=$PW pg_tcp recall_test postgres "CREATE DATABASE recall_setup_probe" >/dev/null ||
  fail "the role setup-postgres.sh made cannot log in and create a database"
PW=$PW pg_tcp recall_test postgres "DROP DATABASE recall_setup_probe" >/dev/null
ok "its URL (mode 0600) logs in over TCP with a password and may create databases"
again=$(env -u RECALL_TEST_PG_URL RECALL_PG_PORT="$pg_port" RECALL_PG_URL_FILE="$url_file" \
  bash scripts/setup-postgres.sh)
grep -q "with the password in" <<<"$again" || fail "a second setup run did not reuse the URL: $again"
ok "a second run reuses it"
say "recall-store's API-key and connection-error tests on that URL (CI=true: no skipping)"
# --workspace: the features, so the build, of scripts/test.sh's cargo test (nothing to rebuild).
RECALL_TEST_PG_URL=$test_url CI=true cargo test -q --workspace --locked --test api_keys --test connect_errors \
  >"$tmp/cargo-test.log" 2>&1 || { tail -n 30 "$tmp/cargo-test.log"; fail "cargo test"; }
ok "$(grep -E '^test result' "$tmp/cargo-test.log" | tail -n 1)"
unset PW test_url

# --- 3. DEPLOY.md steps 1-3 ----------------------------------------------------------------
say "DEPLOY.md: the system user, role and database, /etc/recall, a key"
etc=$tmp/etc/recall
state=$tmp/var/lib/recall
mkdir -p "$etc" "$tmp/var/lib"
if ! id recall >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/recall --shell /usr/sbin/nologin recall
  created_user=1
fi
ok "user recall ($(id recall))"
db_url="postgres://recall@127.0.0.1:$pg_port/recall"
pw=$(openssl rand -hex 24)
install -m 0600 /dev/null "$etc/pgpass"
printf '127.0.0.1:%s:recall:recall:%s\n' "$pg_port" "$pw" >"$etc/pgpass"
export PGPASSFILE=$etc/pgpass

# expect_error WHAT HINT: recall refuses the database and its error names the fix.
expect_error() {
  local out
  if out=$("$bin" keys list --db "$db_url" 2>&1); then fail "$1: recall keys list succeeded"; fi
  grep -qF -- "$2" <<<"$out" || fail "$1: the error does not say \"$2\": $out"
  ok "$1: $(tail -n 1 <<<"$out" | cut -c1-160)…"
}
expect_error "no role yet" "createuser"
as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$pg_port" >/dev/null <<SQL
SET log_statement = 'none';
CREATE ROLE recall LOGIN PASSWORD '$pw';
SQL
expect_error "no database yet" "createdb --owner recall recall"
as_postgres createdb -p "$pg_port" --owner recall recall
printf '127.0.0.1:%s:recall:recall:%s\n' "$pg_port" "not-the-password" >"$etc/pgpass"
expect_error "a wrong password" "pgpass"
printf '127.0.0.1:%s:recall:recall:%s\n' "$pg_port" "$pw" >"$etc/pgpass"
unset pw
"$bin" keys list --db "$db_url" >/dev/null 2>&1 || fail "recall cannot open $db_url with the pgpass file"
ok "recall opens the database with the password from the pgpass file"
if runuser -u recall -- env -u PGPASSFILE "$bin" keys list \
  --db "postgres:///recall?host=/var/run/postgresql&port=$pg_port" >/dev/null 2>"$tmp/peer.err"; then
  ok "and over the local socket as the OS user recall, with no password at all (peer)"
else
  fail "peer authentication over the socket: $(cat "$tmp/peer.err")"
fi

recall_port=$(free_port)
sed -e "s|^addr = \"127.0.0.1:8080\"$|addr = \"127.0.0.1:$recall_port\"|" \
  -e "s|^db = \"postgres://recall@127.0.0.1:5432/recall\"$|db = \"$db_url\"|" \
  deploy/recall.toml >"$etc/recall.toml"
[ "$(grep -c "^addr = \"127.0.0.1:$recall_port\"$" "$etc/recall.toml")" = 1 ] &&
  [ "$(grep -c "^db = \"$db_url\"$" "$etc/recall.toml")" = 1 ] ||
  fail "deploy/recall.toml no longer has the addr and db lines this check replaces"
key=$("$bin" keys create --db "$db_url" --tenant acme --label deploy-check 2>/dev/null)
file_key="rk_file_$(openssl rand -hex 16)"
printf '\n[[keys]]\ntenant = "beta"\nsha256 = "%s"\n' \
  "$(printf %s "$file_key" | sha256sum | cut -d' ' -f1)" >>"$etc/recall.toml"
chown root:recall "$etc/recall.toml"
chmod 0640 "$etc/recall.toml"
ok "recall.toml from deploy/recall.toml (addr 127.0.0.1:$recall_port, db $db_url); a key for"
ok "tenant acme from \`recall keys create\`, one for tenant beta as its sha256 in the file"

# --- 4. the unit ---------------------------------------------------------------------------
say "deploy/recall.service"
upstream_port=$(free_port)
python3 "$tmp/helper.py" upstream "$upstream_port" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
install -m 0600 /dev/null "$etc/recall.env"
printf 'OPENAI_BASE_URL=http://127.0.0.1:%s/v1\n' "$upstream_port" >"$etc/recall.env"
mkdir -p "$tmp/unit"
maps=("/usr/local/bin/recall=$bin" "/etc/recall=$etc" "/var/lib/recall=$state")
sed -e "s|/usr/local/bin/recall|$bin|g" -e "s|/etc/recall|$etc|g" \
  deploy/recall.service >"$tmp/unit/recall.service"
if systemd-analyze verify "$tmp/unit/recall.service" >"$tmp/verify.log" 2>&1; then
  ok "systemd-analyze verify: no complaint"
else
  cat "$tmp/verify.log"
  fail "systemd-analyze verify"
fi
exposure=$(systemd-analyze security --offline=yes --no-pager "$tmp/unit/recall.service" 2>/dev/null |
  grep -o 'Overall exposure level.*' || true)
[ -n "$exposure" ] && ok "systemd-analyze security: $exposure"
mkdir -p "$tmp/trace"
chown recall "$tmp/trace"
python3 "$tmp/helper.py" unit-run deploy/recall.service "$tmp/credentials" "$tmp/trace/strace.out" "${maps[@]}" \
  >"$tmp/recall.log" 2>&1 &
unit_pid=$!
pids+=("$unit_pid")
for _ in $(seq 1 120); do
  curl -fsS -o /dev/null "http://127.0.0.1:$recall_port/readyz" 2>/dev/null && break
  kill -0 "$unit_pid" 2>/dev/null || { cat "$tmp/recall.log"; fail "recall exited"; }
  sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$recall_port/readyz" || fail "recall is not ready within 60 s"
recall_pid=$(pgrep -f -n "^$bin serve") || fail "no recall process"
pids=("$recall_pid" "${pids[@]}") # strace alone would leave it running
ok "$(grep -m1 '^unit: ' "$tmp/recall.log")"
ok "running as user $(ps -o user= -p "$recall_pid"), $(grep -m1 'recall listening' "$tmp/recall.log" | sed 's/.*recall listening/listening/')"
grep -m1 '^chat backends' "$tmp/recall.log" >/dev/null || fail "recall.env's backend was not read"

# --- 5. nginx ------------------------------------------------------------------------------
say "deploy/nginx-recall.conf in nginx, TLS with a self-signed certificate"
ng=$tmp/nginx
mkdir -p "$ng/tls"
host=recall.example.com
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$host" \
  -addext "subjectAltName=DNS:$host" -keyout "$ng/tls/privkey.pem" -out "$ng/tls/fullchain.pem" \
  >/dev/null 2>&1
https_port=$(free_port)
http_port=$(free_port)
sed -e "s|^    listen 80;$|    listen 127.0.0.1:$http_port;|" -e '/^    listen \[::\]:80;$/d' \
  -e "s|^    listen 443 ssl;$|    listen 127.0.0.1:$https_port ssl;|" -e '/^    listen \[::\]:443 ssl;$/d' \
  -e "s|server 127.0.0.1:8080;|server 127.0.0.1:$recall_port;|" \
  -e "s|/etc/ssl/recall/|$ng/tls/|" deploy/nginx-recall.conf >"$ng/recall.conf"
[ "$(grep -cE "listen 127.0.0.1:($http_port|$https_port)|server 127.0.0.1:$recall_port;|$ng/tls/" "$ng/recall.conf")" = 5 ] ||
  fail "deploy/nginx-recall.conf no longer has the listen/server/certificate lines this check replaces"
cat >"$ng/nginx.conf" <<EOF
worker_processes 1;
pid $ng/nginx.pid;
error_log $ng/error.log;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log $ng/access.log;
  client_body_temp_path $ng/body;
  proxy_temp_path $ng/proxy;
  fastcgi_temp_path $ng/fastcgi;
  uwsgi_temp_path $ng/uwsgi;
  scgi_temp_path $ng/scgi;
  include $ng/recall.conf;
}
EOF
nginx -t -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" >"$tmp/nginx-t.log" 2>&1 ||
  { cat "$tmp/nginx-t.log"; fail "nginx -t"; }
ok "nginx -t: $(grep -o 'syntax is ok' "$tmp/nginx-t.log")"
nginx -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" -g 'daemon off;' &
pids+=($!)
tls=(--cacert "$ng/tls/fullchain.pem" --resolve "$host:$https_port:127.0.0.1")
base=https://$host:$https_port
for _ in $(seq 1 40); do curl -s "${tls[@]}" -o /dev/null "$base/healthz" && break; sleep 0.25; done

# --- 6. through TLS ------------------------------------------------------------------------
say "through the proxy, TLS verified against the certificate"
code() { curl -s "${tls[@]}" -o "$tmp/body" -w '%{http_code}' "$@"; }
[ "$(code "$base/readyz")" = 200 ] && grep -q '"ready"' "$tmp/body" ||
  fail "/readyz: $(cat "$tmp/body")"
ok "GET /readyz: 200 $(cat "$tmp/body")"
redirect=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$http_port/readyz")
[[ $redirect == "301 https://"* ]] || fail "plain HTTP is not redirected: $redirect"
ok "GET http://…/readyz: $redirect"
[ "$(code "$base/v1/conversations")" = 401 ] || fail "no key: $(cat "$tmp/body")"
ok "GET /v1/conversations without a key: 401"
auth=(-H "Authorization: Bearer $key" -H 'content-type: application/json')
[ "$(code "${auth[@]}" -d '{"title":"Deploy check"}' "$base/v1/conversations")" = 201 ] ||
  fail "POST /v1/conversations: $(cat "$tmp/body")"
conv=$(jq -r .id "$tmp/body")
[ "$(code "${auth[@]}" -d '{"role":"user","content":"We deploy with nginx.","id":"c1"}' \
  "$base/v1/conversations/$conv/messages")" = 201 ] || fail "POST …/messages: $(cat "$tmp/body")"
[ "$(code "${auth[@]}" "$base/v1/conversations/$conv/messages?after=0&limit=10")" = 200 ] &&
  [ "$(jq -r '.data[0].message.content' "$tmp/body")" = "We deploy with nginx." ] ||
  fail "GET …/messages: $(cat "$tmp/body")"
ok "key from the database: POST /v1/conversations 201, POST …/messages 201, GET …/messages 200"
beta=(-H "Authorization: Bearer $file_key")
[ "$(code "${beta[@]}" "$base/v1/conversations/$conv")" = 404 ] ||
  fail "tenant beta sees acme's conversation: $(cat "$tmp/body")"
[ "$(code "${beta[@]}" "$base/v1/conversations")" = 200 ] || fail "key from recall.toml: $(cat "$tmp/body")"
ok "key from recall.toml: GET /v1/conversations 200, acme's conversation 404"
sse=$(helper sse "$https_port" "$ng/tls/fullchain.pem" "$host" "$key" "$conv") || fail "SSE: $sse"
ok "POST …/chat (SSE): $sse"
wsr=$(helper ws "$https_port" "$ng/tls/fullchain.pem" "$host" "$key" "$conv") || fail "WebSocket: $wsr"
ok "GET …/ws (WebSocket): $wsr"
[ "$(code "${auth[@]}" "$base/v1/conversations/$conv/messages?after=0&limit=10")" = 200 ] &&
  [ "$(jq '.data | length' "$tmp/body")" = 5 ] || fail "the chats were not stored: $(cat "$tmp/body")"
ok "both chat turns stored (5 messages)"

# --- 7. stop, backup, restore --------------------------------------------------------------
say "SIGTERM, the system calls seen, a backup and its restore"
kill -TERM "$recall_pid"
for _ in $(seq 1 60); do kill -0 "$recall_pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$recall_pid" 2>/dev/null && fail "recall did not stop within 30 s of SIGTERM (TimeoutStopSec)"
wait "$unit_pid" || fail "recall exited with status $? after SIGTERM"
grep -q '^recall stopped' "$tmp/recall.log" || fail "recall did not say it stopped"
ok "SIGTERM: recall stopped, exit status 0"
out=$(helper syscalls deploy/recall.service "$tmp/trace/strace.out") || fail "$out"
ok "under strace: $out; all allowed by the unit"
as_postgres pg_dump -p "$pg_port" -Fc recall >"$tmp/recall.dump"
as_postgres createdb -p "$pg_port" --owner recall recall_restored
as_postgres pg_restore -p "$pg_port" --no-owner --role=recall -d recall_restored <"$tmp/recall.dump"
printf '127.0.0.1:%s:recall_restored:recall:%s\n' "$pg_port" "$(cut -d: -f5 "$etc/pgpass")" >>"$etc/pgpass"
"$bin" conversations list --db "postgres://recall@127.0.0.1:$pg_port/recall_restored" --tenant acme \
  | grep -q "$conv" || fail "the restored database does not hold the conversation"
ok "pg_dump -Fc, pg_restore into a new database: the conversation is there"
