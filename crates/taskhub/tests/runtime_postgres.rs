//! The runtime end-to-end suite (`common/runtime_suite.rs`) on PostgreSQL: run it with a
//! throwaway server up, `scripts/with-postgres.sh cargo test -p taskhub --test
//! runtime_postgres` (`scripts/test.sh` does this). Without `TASKHUB_TEST_POSTGRES_URL` every
//! test fails, saying how to run it. Each test uses a hub (schema) of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/runtime_suite.rs"]
mod runtime_suite;

runtime_suite!(backends::Backend::Postgres);
