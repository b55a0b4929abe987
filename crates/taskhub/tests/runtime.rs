//! The runtime end-to-end suite (`common/runtime_suite.rs`) on every backend of
//! `taskhub_backends::BACKENDS`, one test per body and backend (`sqlite::…`, `azure::…`,
//! `postgres::…`, `memory::…`; `cargo test -p taskhub --test runtime sqlite::` runs one). Azure
//! and PostgreSQL need their services: `scripts/with-azurite.sh scripts/with-postgres.sh cargo
//! test -p taskhub --test runtime` (`scripts/test.sh` does this); without
//! `TASKHUB_TEST_AZURE_CONNECTION_STRING` or `TASKHUB_TEST_POSTGRES_URL` that backend's tests
//! fail, saying how to run them. Each test uses a hub of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/runtime_suite.rs"]
mod runtime_suite;

use runtime_suite::*;

runtime_suite!();

/// A file that is not a SQLite database is a clear error naming the file.
#[test]
fn corrupt_database_file_is_a_clear_error() {
    let dir = common::TempDir::new("corrupt");
    let path = dir.db();
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let opts = taskhub_sqlite::SqliteOptions::new(&path);
    let Err(err) = taskhub_sqlite::SqliteStore::open(opts) else {
        panic!("open must fail")
    };
    assert!(err.to_string().contains("hub.db"), "{err}");
}
