#!/usr/bin/env bash
# The one command that runs every test: formatting, lints, unit, integration and doc tests,
# and a smoke run of the benchmarks (criterion runs each benchmark once in test mode).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
