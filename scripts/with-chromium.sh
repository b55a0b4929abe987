#!/usr/bin/env bash
# Runs a command with a headless browser ready for the dashboard's browser tests:
#
#   scripts/with-chromium.sh cargo test -p taskhub-http --test browser
#
# * Installs Debian's `chromium` with apt-get when /usr/bin/chromium is missing (as root, or
#   through sudo).
# * Installs the pinned playwright-core from npm into .playwright/ (git-ignored) on first use
#   (it drives the system Chromium; no browser is downloaded).
# * Exports TASKHUB_CHROMIUM and TASKHUB_PLAYWRIGHT_DIR for the command; the browser test
#   (crates/taskhub-http/tests/browser.rs) runs only when they are set.
# * If anything cannot be installed, this fails loudly: the browser tests are never skipped
#   silently under it.
set -euo pipefail

PLAYWRIGHT_VERSION=1.65.1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PW_DIR="$ROOT/.playwright"
CHROMIUM="${TASKHUB_CHROMIUM:-/usr/bin/chromium}"

die() { echo "with-chromium: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-chromium.sh <command> [args...]"

if [ ! -x "$CHROMIUM" ]; then
  echo "with-chromium: installing Debian's chromium (apt-get)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "chromium is missing and this user cannot install it (not root, no sudo): apt-get install chromium"
    SUDO="sudo"
  fi
  command -v apt-get >/dev/null || die "chromium is missing and apt-get is not available: install Chromium and set TASKHUB_CHROMIUM"
  $SUDO apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2 || die "apt-get install chromium failed"
  [ -x "$CHROMIUM" ] || die "chromium installed but $CHROMIUM is missing"
fi

command -v node >/dev/null || die "node is needed to drive the browser (apt-get install nodejs npm)"
installed_version() {
  node -p "require('$PW_DIR/node_modules/playwright-core/package.json').version" 2>/dev/null || true
}
if [ "$(installed_version)" != "$PLAYWRIGHT_VERSION" ]; then
  command -v npm >/dev/null || die "npm is needed to install playwright-core $PLAYWRIGHT_VERSION"
  echo "with-chromium: installing playwright-core@$PLAYWRIGHT_VERSION into $PW_DIR" >&2
  mkdir -p "$PW_DIR"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$PW_DIR" --no-save --no-audit --no-fund \
    --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" >&2 \
    || die "npm install playwright-core@$PLAYWRIGHT_VERSION failed"
  [ "$(installed_version)" = "$PLAYWRIGHT_VERSION" ] || die "playwright-core $PLAYWRIGHT_VERSION did not install"
fi

export TASKHUB_CHROMIUM="$CHROMIUM"
export TASKHUB_PLAYWRIGHT_DIR="$PW_DIR/node_modules"
exec "$@"
