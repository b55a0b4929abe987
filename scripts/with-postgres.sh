#!/usr/bin/env bash
# Runs a command with a private, throwaway PostgreSQL cluster up, then stops and deletes it.
#
#   scripts/with-postgres.sh cargo test -p taskhub-postgres
#
# * Installs Debian's PostgreSQL (`apt-get install postgresql`, as root or through sudo) when
#   `initdb` is missing.
# * Creates a cluster in a fresh temp dir (initdb; fsync on, as in production), owned by an
#   unprivileged user when run as root (PostgreSQL refuses to run as root): the `postgres`
#   user if it exists, else `nobody`.
# * Starts it on 127.0.0.1 on a FREE port (several sessions may run at once; retried if the
#   port is taken meanwhile), with its unix socket in the temp dir, and exports
#   TASKHUB_TEST_POSTGRES_URL (a postgres:// URL with a password, `sslmode=disable`),
#   TASKHUB_TEST_POSTGRES_TLS_CA (the CA file of the server's certificate: the server offers
#   TLS, for crates/taskhub-postgres/tests/tls.rs) and
#   TASKHUB_TEST_POSTGRES_DATA, TASKHUB_TEST_POSTGRES_BIN and TASKHUB_TEST_POSTGRES_RUN_AS (the
#   data dir, the binaries and the OS user the server runs as, for tests that restart the
#   server) for the command.
# * Stops the cluster (fast shutdown, then immediate, then kill -9 by PID) and deletes the temp
#   dir even when the command fails or is interrupted.
# * TASKHUB_TEST_POSTGRES_SERVER_OPTIONS, if set, is added to the server's options (e.g.
#   `-c shared_preload_libraries=pg_stat_statements` to count statements in a benchmark).
# * If PostgreSQL cannot be installed or started, this fails loudly: the PostgreSQL tests are
#   never silently skipped.
set -euo pipefail

die() { echo "with-postgres: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-postgres.sh <command> [args...]"

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return; }
  done
  command -v initdb >/dev/null 2>&1 && dirname "$(command -v initdb)"
}
PGBIN="$(find_bin || true)"
if [ -z "$PGBIN" ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "with-postgres: installing PostgreSQL (apt-get install postgresql)" >&2
  $SUDO apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >&2 \
    || die "apt-get install postgresql failed"
  PGBIN="$(find_bin || true)"
fi
[ -n "$PGBIN" ] && [ -x "$PGBIN/pg_ctl" ] || die "PostgreSQL binaries not found after install"

# Run the server as an unprivileged user when we are root.
RUN=()
PGUSER_OS=""
if [ "$(id -u)" = 0 ]; then
  if id postgres >/dev/null 2>&1; then PGUSER_OS=postgres; else PGUSER_OS=nobody; fi
  RUN=(runuser -u "$PGUSER_OS" --)
fi

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket
s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  else
    local p
    while :; do
      p=$(( 20000 + RANDOM % 40000 ))
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
  fi
}

DIR="$(mktemp -d "${TMPDIR:-/tmp}/taskhub-postgres.XXXXXX")"
chmod 755 "$DIR"
DATA="$DIR/data"
LOG="$DIR/server.log"
PASSWORD="taskhub-test-$$-$RANDOM"
[ ${#RUN[@]} -eq 0 ] || chown "$PGUSER_OS" "$DIR"
stop() {
  if [ -f "$DATA/postmaster.pid" ]; then
    local pid
    pid="$(head -1 "$DATA/postmaster.pid" 2>/dev/null || true)"
    "${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA" -m fast -t 20 stop >/dev/null 2>&1 \
      || "${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA" -m immediate -t 10 stop >/dev/null 2>&1 \
      || { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; } || true
  fi
  rm -rf "$DIR"
}
trap stop EXIT
trap 'exit 130' INT TERM

printf '%s\n' "$PASSWORD" >"$DIR/pw"
[ ${#RUN[@]} -eq 0 ] || chown "$PGUSER_OS" "$DIR/pw"
"${RUN[@]}" "$PGBIN/initdb" -D "$DATA" -U taskhub --pwfile="$DIR/pw" -A scram-sha-256 \
  -E UTF8 --locale=C >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
rm -f "$DIR/pw"

# TLS: a throwaway CA and a server certificate for 127.0.0.1 it signs, so that the TLS test
# (crates/taskhub-postgres/tests/tls.rs) connects with `sslmode=require` and the CA file, as to
# a managed server. Every other test connects with `sslmode=disable` (the exported URL).
if ! command -v openssl >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "with-postgres: installing openssl (apt-get install openssl) for the test server's certificate" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssl >&2 || die "apt-get install openssl failed"
fi
TLS="$DIR/tls"
mkdir -p "$TLS"
{
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=taskhub test CA" \
    -keyout "$TLS/ca.key" -out "$TLS/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$TLS/server.key" -out "$TLS/server.csr"
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
    "extendedKeyUsage=serverAuth" >"$TLS/server.ext"
  openssl x509 -req -in "$TLS/server.csr" -CA "$TLS/ca.crt" -CAkey "$TLS/ca.key" \
    -CAcreateserial -days 2 -extfile "$TLS/server.ext" -out "$TLS/server.crt"
} >"$DIR/tls.log" 2>&1 || { cat "$DIR/tls.log" >&2; die "could not make the test server's TLS certificate"; }
chmod 600 "$TLS/server.key"
[ ${#RUN[@]} -eq 0 ] || chown -R "$PGUSER_OS" "$TLS"

started=0
for attempt in 1 2 3; do
  PORT="$(free_port)"
  if "${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 \
      -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on -c ssl=on -c ssl_cert_file=$TLS/server.crt -c ssl_key_file=$TLS/server.key ${TASKHUB_TEST_POSTGRES_SERVER_OPTIONS:-}" \
      start >/dev/null 2>&1; then
    started=1; break
  fi
  echo "with-postgres: attempt $attempt to start PostgreSQL on port $PORT failed:" >&2
  tail -5 "$LOG" >&2 || true
done
[ "$started" = 1 ] || die "PostgreSQL did not start; the PostgreSQL tests cannot run"

export TASKHUB_TEST_POSTGRES_URL="postgres://taskhub:$PASSWORD@127.0.0.1:$PORT/postgres?sslmode=disable"
export TASKHUB_TEST_POSTGRES_TLS_CA="$TLS/ca.crt"
export TASKHUB_TEST_POSTGRES_DATA="$DATA"
export TASKHUB_TEST_POSTGRES_BIN="$PGBIN"
export TASKHUB_TEST_POSTGRES_RUN_AS="${PGUSER_OS:-}"
echo "with-postgres: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT (data $DATA)" >&2
"$@"
