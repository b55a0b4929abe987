//! The runtime end-to-end suite (`common/runtime_suite.rs`) on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

#[path = "common/backends.rs"]
mod backends;
mod common;
#[path = "common/runtime_suite.rs"]
mod runtime_suite;

runtime_suite!(backends::Backend::Sqlite);
