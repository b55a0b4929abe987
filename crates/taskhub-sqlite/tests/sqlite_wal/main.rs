//! The WAL checkpointer under a burst of commits, in a test binary of its own: it measures what
//! a background thread achieves while one writer commits 128 MiB, so the other SQLite tests
//! (which run in parallel inside one binary) must not share the two cores with it.

#[allow(
    clippy::unwrap_used,
    dead_code,
    reason = "test helpers panic on a failed setup, as tests do; this binary uses a few of them"
)]
#[path = "../sqlite/common.rs"]
mod common;

mod wal;
