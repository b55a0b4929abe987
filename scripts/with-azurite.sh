#!/usr/bin/env bash
# Runs a command with a private Azurite (the Azure Storage emulator) up, then stops it.
#
#   scripts/with-azurite.sh cargo test -p taskhub-azure
#
# * Installs the pinned Azurite from npm into .azurite/ (git-ignored) on first use.
# * Starts it on 127.0.0.1 on three FREE ports (several sessions may run at once), with its
#   data on disk in a fresh temp dir (in-memory mode can freeze after ~15k messages) and
#   --skipApiVersionCheck.
# * Exports TASKHUB_TEST_AZURE_CONNECTION_STRING (explicit Blob/Queue/Table endpoints) for the
#   command, waits until all three services answer, runs the command, and stops Azurite by
#   PID (kill -9 if it does not exit) even when the command fails or is interrupted.
# * If Azurite cannot be installed or started, this fails loudly: the Azure tests are never
#   silently skipped.
set -euo pipefail

AZURITE_VERSION=3.37.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AZ_DIR="$ROOT/.azurite"
BIN="$AZ_DIR/node_modules/.bin/azurite"

die() { echo "with-azurite: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-azurite.sh <command> [args...]"

installed_version() {
  node -p "require('$AZ_DIR/node_modules/azurite/package.json').version" 2>/dev/null || true
}
if [ "$(installed_version)" != "$AZURITE_VERSION" ]; then
  command -v npm >/dev/null || die "npm is needed to install Azurite $AZURITE_VERSION"
  echo "with-azurite: installing azurite@$AZURITE_VERSION into $AZ_DIR" >&2
  mkdir -p "$AZ_DIR"
  npm install --prefix "$AZ_DIR" --no-save --no-audit --no-fund --loglevel=error \
    "azurite@$AZURITE_VERSION" >&2 || die "npm install azurite@$AZURITE_VERSION failed"
fi
[ -x "$BIN" ] || die "Azurite binary missing at $BIN"

# Three free ports, chosen by the OS (bound and released at once; a clash with another
# process in between is reported by Azurite failing to start, and retried below).
free_ports() {
  if ! command -v python3 >/dev/null; then
    # No python: random high ports that nothing answers on now.
    local out=() p
    while [ ${#out[@]} -lt 3 ]; do
      p=$(( 20000 + RANDOM % 40000 ))
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || out+=("$p")
    done
    echo "${out[*]}"
    return
  fi
  python3 -c 'import socket
socks=[socket.socket() for _ in range(3)]
[s.bind(("127.0.0.1",0)) for s in socks]
print(" ".join(str(s.getsockname()[1]) for s in socks))
[s.close() for s in socks]'
}

DATA="$(mktemp -d "${TMPDIR:-/tmp}/taskhub-azurite.XXXXXX")"
LOG="$DATA.log"
PID=""
stop() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$PID" 2>/dev/null && kill -9 "$PID" 2>/dev/null || true
  fi
  rm -rf "$DATA"
}
trap stop EXIT
trap 'exit 130' INT TERM

answers() { # port -> 0 when the service answers HTTP at all (bash's /dev/tcp: no curl needed)
  local reply
  reply=$(timeout 1 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "GET /devstoreaccount1?comp=list HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
    head -c 12 <&3' _ "$1" 2>/dev/null || true)
  [[ "$reply" == HTTP/* ]]
}

started=0
for attempt in 1 2 3; do
  read -r BLOB QUEUE TABLE <<<"$(free_ports)"
  "$BIN" --silent --disableTelemetry --skipApiVersionCheck --location "$DATA" \
    --blobHost 127.0.0.1 --blobPort "$BLOB" --queueHost 127.0.0.1 --queuePort "$QUEUE" \
    --tableHost 127.0.0.1 --tablePort "$TABLE" >"$LOG" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do
    kill -0 "$PID" 2>/dev/null || break
    if answers "$BLOB" && answers "$QUEUE" && answers "$TABLE"; then started=1; break; fi
    sleep 0.1
  done
  [ "$started" = 1 ] && break
  echo "with-azurite: attempt $attempt to start Azurite failed:" >&2
  cat "$LOG" >&2 || true
  stop; DATA="$(mktemp -d "${TMPDIR:-/tmp}/taskhub-azurite.XXXXXX")"; LOG="$DATA.log"; PID=""
done
[ "$started" = 1 ] || die "Azurite did not start; the Azure tests cannot run"

KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
export TASKHUB_TEST_AZURE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$KEY;BlobEndpoint=http://127.0.0.1:$BLOB/devstoreaccount1;QueueEndpoint=http://127.0.0.1:$QUEUE/devstoreaccount1;TableEndpoint=http://127.0.0.1:$TABLE/devstoreaccount1"
echo "with-azurite: Azurite $AZURITE_VERSION (pid $PID) on blob $BLOB, queue $QUEUE, table $TABLE" >&2
"$@"
