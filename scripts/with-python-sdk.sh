#!/usr/bin/env bash
# Runs a command with the official Durable Task Python SDK ready for the gRPC tests:
#
#   scripts/with-python-sdk.sh cargo test -p taskhub-grpc --test python_sdk
#
# * Creates a local virtual environment in .venv-sdk/ (git-ignored) with python3 -m venv, and
#   pip-installs the pinned `durabletask` package from PyPI into it on first use (nothing is
#   installed globally).
# * Exports TASKHUB_PYTHON_SDK (the venv's python) for the command; the Python SDK test
#   (crates/taskhub-grpc/tests/python_sdk.rs) fails without it, saying how to run it.
# * If anything cannot be installed, this fails loudly.
set -euo pipefail

DURABLETASK_VERSION=1.12.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv-sdk"
PY="$VENV/bin/python"

die() { echo "with-python-sdk: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-python-sdk.sh <command> [args...]"

installed_version() {
  "$PY" -c 'import importlib.metadata as m; print(m.version("durabletask"))' 2>/dev/null || true
}
if [ ! -x "$PY" ]; then
  command -v python3 >/dev/null || die "python3 is needed (apt-get install python3 python3-venv)"
  echo "with-python-sdk: creating $VENV" >&2
  if ! python3 -m venv "$VENV" >&2; then
    # Debian's python3 ships venv apart: install it (as root or through sudo) and try again.
    rm -rf "$VENV"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    command -v apt-get >/dev/null && $SUDO apt-get install -y -q python3-venv >&2 \
      || die "python3 -m venv failed and python3-venv could not be installed"
    python3 -m venv "$VENV" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
  fi
fi
if [ "$(installed_version)" != "$DURABLETASK_VERSION" ]; then
  echo "with-python-sdk: installing durabletask==$DURABLETASK_VERSION into $VENV" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check "durabletask==$DURABLETASK_VERSION" >&2 \
    || die "pip install durabletask==$DURABLETASK_VERSION failed"
  [ "$(installed_version)" = "$DURABLETASK_VERSION" ] || die "durabletask $DURABLETASK_VERSION did not install"
fi

export TASKHUB_PYTHON_SDK="$PY"
exec "$@"
