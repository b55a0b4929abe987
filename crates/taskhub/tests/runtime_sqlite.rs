//! The runtime end-to-end suite (`common/runtime_suite.rs`) on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/runtime_suite.rs"]
mod runtime_suite;

runtime_suite!(backends::Backend::Sqlite);

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
