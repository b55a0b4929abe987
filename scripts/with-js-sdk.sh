#!/usr/bin/env bash
# Runs a command with the official Durable Task JavaScript SDK ready for the gRPC tests:
#
#   scripts/with-js-sdk.sh cargo test -p taskhub-grpc --test js_sdk_worker
#
# * Installs the pinned `@microsoft/durabletask-js` from npm into .js-sdk/node_modules
#   (git-ignored) on first use; nothing is installed globally.
# * Exports TASKHUB_JS_SDK (that node_modules folder; the test runs `node` with it as
#   NODE_PATH) for the command; the JavaScript SDK test (crates/taskhub-grpc/tests/js_sdk_worker.rs)
#   fails without it, saying how to run it.
# * If anything cannot be installed, this fails loudly.
set -euo pipefail

DURABLETASK_JS_VERSION=0.4.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/.js-sdk"
PKG="$DIR/node_modules/@microsoft/durabletask-js/package.json"

die() { echo "with-js-sdk: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-js-sdk.sh <command> [args...]"
command -v node >/dev/null || die "node is needed (apt-get install nodejs npm)"

installed_version() { node -p "require('$PKG').version" 2>/dev/null || true; }
if [ "$(installed_version)" != "$DURABLETASK_JS_VERSION" ]; then
  command -v npm >/dev/null || die "npm is needed to install @microsoft/durabletask-js"
  echo "with-js-sdk: installing @microsoft/durabletask-js@$DURABLETASK_JS_VERSION into $DIR" >&2
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error \
    "@microsoft/durabletask-js@$DURABLETASK_JS_VERSION" >&2 \
    || die "npm install @microsoft/durabletask-js@$DURABLETASK_JS_VERSION failed"
  [ "$(installed_version)" = "$DURABLETASK_JS_VERSION" ] \
    || die "@microsoft/durabletask-js $DURABLETASK_JS_VERSION did not install"
fi

export TASKHUB_JS_SDK="$DIR/node_modules"
exec "$@"
