//! Integration tests of the SQLite backend: schema versioning, queues, checkpoints, several
//! handles on one file, busy databases, durability and group commit. One test binary keeps
//! build time down.

#[expect(
    clippy::unwrap_used,
    reason = "test helpers panic on a failed setup, as tests do"
)]
mod common;

mod checkpoints;
mod concurrency;
mod queues;
mod schema;
mod tables;
mod throughput;
