#!/usr/bin/env bash
# Runs a command with the official Durable Task Go SDK ready for the gRPC tests:
#
#   scripts/with-go-sdk.sh cargo test -p taskhub-grpc --test go_sdk_worker
#
# * Builds the scenario program crates/taskhub-grpc/tests/go (a Go module requiring the pinned
#   `github.com/microsoft/durabletask-go`, see its go.mod) into .go-sdk/bin/go-sdk-scenarios
#   (git-ignored), every time: `go build` is incremental, so this is cheap when nothing changed.
#   Modules come from the Go module proxy into the usual module cache; nothing is installed
#   globally.
# * Exports TASKHUB_GO_SDK (that binary) for the command; the Go SDK test
#   (crates/taskhub-grpc/tests/go_sdk_worker.rs) fails without it, saying how to run it.
# * If anything cannot be built, this fails loudly.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/crates/taskhub-grpc/tests/go"
BIN="$ROOT/.go-sdk/bin/go-sdk-scenarios"

die() { echo "with-go-sdk: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-go-sdk.sh <command> [args...]"
command -v go >/dev/null || die "go is needed (https://go.dev/doc/install, or apt-get install golang-go)"

mkdir -p "$(dirname "$BIN")"
# go.mod and go.sum are committed tidy: a build that would change them fails (-mod=readonly).
(cd "$SRC" && GOFLAGS="${GOFLAGS:-} -mod=readonly -buildvcs=false" go build -o "$BIN" .) >&2 \
  || die "cannot build $SRC (go build failed; see above)"
[ -x "$BIN" ] || die "$BIN was not built"

export TASKHUB_GO_SDK="$BIN"
exec "$@"
