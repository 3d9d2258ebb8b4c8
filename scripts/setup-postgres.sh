#!/usr/bin/env bash
# PostgreSQL for recall's tests; scripts/setup.sh runs it. Starts (or installs) the local
# server, then makes sure the tests can log in to it over TCP:
# - where a password-less login as `postgres` works (trust, as on recall's CI machines), the
#   tests use their default URL, postgres://postgres@127.0.0.1:5432/postgres;
# - where it is refused (Debian's default pg_hba.conf: peer on the local socket,
#   scram-sha-256 over TCP), it creates or updates the role `recall_test` (LOGIN CREATEDB:
#   each test creates and drops a database of its own) with a generated password, through the
#   local socket as the postgres OS user (peer authentication: `runuser -u postgres`, or
#   `sudo -u postgres` when not root), and writes the role's URL to .tools/pg-test-url (mode
#   0600, git-ignored), which scripts/test.sh exports as RECALL_TEST_PG_URL.
# The password is never printed nor put on a command line (the statement setting it goes
# through psql's stdin, with statement logging off for that session).
# Knobs: RECALL_PG_PORT (default 5432), RECALL_PG_URL_FILE (default .tools/pg-test-url).
# With RECALL_TEST_PG_URL set, that URL is used as given and nothing is created.
# scripts/deploy-check.sh runs this against a fresh cluster with Debian's default
# authentication and checks the URL it writes.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*"; }
in_ci() { [ "${CI:-}" = "true" ]; }

port=${RECALL_PG_PORT:-5432}
url_file=${RECALL_PG_URL_FILE:-.tools/pg-test-url}
role=recall_test

pg_ready() { pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null; }
if ! pg_ready; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    log "installing PostgreSQL"
    apt-get update -qq && apt-get install -y -qq postgresql
  fi
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
fi
if ! pg_ready; then
  if in_ci; then
    log "PostgreSQL is not reachable on 127.0.0.1:$port and CI needs it"
    exit 1
  fi
  log "warning: PostgreSQL is not reachable; its tests will be skipped outside CI"
  exit 0
fi
log "PostgreSQL is up on 127.0.0.1:$port"

if [ -n "${RECALL_TEST_PG_URL:-}" ]; then
  log "the PostgreSQL tests use RECALL_TEST_PG_URL as given"
  exit 0
fi

# tcp_login USER [PASSWORD]: a TCP login to the database `postgres` works, with that
# password or with none (no ~/.pgpass either). The password goes through the environment.
tcp_login() {
  (
    unset PGPASSWORD
    [ -n "${2:-}" ] && export PGPASSWORD="$2"
    PGPASSFILE=/nonexistent psql -X -w -q -At -h 127.0.0.1 -p "$port" -U "$1" -d postgres \
      -c 'SELECT 1' >/dev/null 2>&1
  )
}

if tcp_login postgres; then
  # Trust: the tests' default URL works; a URL left by an earlier setup is not needed.
  rm -f "$url_file"
  log "the PostgreSQL tests log in as postgres without a password (default URL)"
  exit 0
fi

# The password of the URL in the file, when the file holds a URL of this setup's shape.
stored_password() {
  local url
  url=$(head -n 1 "$url_file" 2>/dev/null) || return 1
  case "$url" in
    "postgres://$role:"*"@127.0.0.1:$port/postgres") ;;
    *) return 1 ;;
  esac
  url=${url#"postgres://$role:"}
  printf '%s' "${url%"@127.0.0.1:$port/postgres"}"
}

if pw=$(stored_password) && tcp_login "$role" "$pw"; then
  log "the PostgreSQL tests log in as $role with the password in $url_file"
  exit 0
fi

log "a password-less TCP login to PostgreSQL is refused (Debian's default authentication):"
log "creating the role $role with a generated password, as the postgres OS user"
# (From /: the postgres user may not be allowed into the checkout.)
as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  elif sudo -n true 2>/dev/null; then
    (cd / && sudo -n -u postgres -- "$@")
  else
    return 1
  fi
}
pw=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
# psql reads the statements from stdin, so the password is in no process's arguments; the
# session turns statement logging off so that it is in no server log either.
if ! as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres >/dev/null <<SQL; then
SET log_statement = 'none';
SET log_min_error_statement = 'panic';
SET log_min_duration_statement = -1;
SELECT 'CREATE ROLE $role' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role')
\gexec
ALTER ROLE $role LOGIN CREATEDB PASSWORD '$pw';
SQL
  if in_ci; then
    log "could not create the role $role as the postgres OS user (root or sudo needed)"
    exit 1
  fi
  log "warning: could not create the role $role (needs root or sudo); set RECALL_TEST_PG_URL"
  log "to a role that may create databases, or the PostgreSQL tests will be skipped"
  exit 0
fi
mkdir -p "$(dirname "$url_file")"
(
  umask 077
  printf 'postgres://%s:%s@127.0.0.1:%s/postgres\n' "$role" "$pw" "$port" >"$url_file"
)
if ! tcp_login "$role" "$pw"; then
  log "the role $role was created but cannot log in over TCP on 127.0.0.1:$port (pg_hba.conf?)"
  if in_ci; then exit 1; fi
  exit 0
fi
log "the PostgreSQL tests log in as $role (URL in $url_file, exported by scripts/test.sh)"
