#!/usr/bin/env bash
# The one command that runs every test: formatting, lints, unit, integration and doc tests,
# a smoke run of the benchmarks (criterion runs each benchmark once in test mode), and the
# embedding examples (examples/).
# The tests run with a private Azurite up (scripts/with-azurite.sh: installs the pinned
# version from npm on first use, free ports, stopped at the end), for the Azure backend, and
# with headless Chromium ready (scripts/with-chromium.sh: installs Debian's chromium with
# apt-get and the pinned playwright-core from npm when missing) for the dashboard's browser
# test (crates/taskhub-http/tests/browser.rs), and with the official Durable Task Python SDK
# in a local venv (scripts/with-python-sdk.sh: .venv-sdk/, the pinned `durabletask` from PyPI)
# for the gRPC endpoint's SDK tests (crates/taskhub-grpc/tests/python_sdk*.rs), with the
# official Durable Task JavaScript SDK in a local node_modules (scripts/with-js-sdk.sh:
# .js-sdk/, the pinned `@microsoft/durabletask-js` from npm) for its JavaScript worker test
# (crates/taskhub-grpc/tests/js_sdk_worker.rs), with the official Durable Task Go SDK built into
# a scenario program (scripts/with-go-sdk.sh: .go-sdk/, the pinned
# `github.com/microsoft/durabletask-go` from the Go module proxy; needs go) for its Go worker
# test (crates/taskhub-grpc/tests/go_sdk_worker.rs), with the official Durable Task Java SDK
# built into a scenario program (scripts/with-java-sdk.sh: .java-sdk/, the pinned
# `com.microsoft:durabletask-client` from Maven Central; needs a JDK 17, installs Debian's maven
# with apt-get when mvn is missing) for its Java worker test
# (crates/taskhub-grpc/tests/java_sdk_worker.rs), and with a throwaway PostgreSQL cluster up
# (scripts/with-postgres.sh: installs Debian's postgresql with apt-get when initdb is missing, a
# free port, fsync on, stopped and deleted at the end) for the PostgreSQL backend; any of them
# failing to install or build fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The CLI's optional OTLP export (feature `otlp`, off by default): lints and its unit test.
cargo clippy -p taskhub-cli --all-targets --features otlp --locked -- -D warnings
cargo test -p taskhub-cli --features otlp --locked --bin taskhub otlp
# The PostgreSQL server counts statements for the bench's figures (crates/taskhub-bench/tests/postgres_smoke.rs).
export TASKHUB_TEST_POSTGRES_SERVER_OPTIONS="${TASKHUB_TEST_POSTGRES_SERVER_OPTIONS:--c shared_preload_libraries=pg_stat_statements}"
./scripts/with-python-sdk.sh ./scripts/with-js-sdk.sh ./scripts/with-go-sdk.sh \
  ./scripts/with-java-sdk.sh ./scripts/with-chromium.sh ./scripts/with-azurite.sh \
  ./scripts/with-postgres.sh bash -c '
  set -euo pipefail
  cargo test --workspace --all-targets --locked --no-fail-fast
  cargo test --workspace --doc --locked
'
# The embedding examples (examples/, run as `cargo run --example NAME`): each checks its own
# result and exits non-zero if it is wrong. Built by the tests above, so this is cheap.
for example in hello worker_and_client retries_and_compensation; do
  cargo run --locked --quiet --example "$example"
done
