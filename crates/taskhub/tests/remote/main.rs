//! The executor seam: orchestrations, activities and entities run in a `RemoteExecutor` (an
//! in-process fake SDK, `common/sdk.rs`) with everything below it the runtime's, one module
//! per case:
//! - `entities`: entity batches run remotely;
//! - `executor`: orchestrations and activities run remotely;
//! - `lock_release`: an SDK orchestration's entity locks are released when the runtime ends it.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "tests"
)]

#[path = "../common/backends.rs"]
mod backends;
#[path = "../common/mod.rs"]
mod common;
#[path = "../common/sdk.rs"]
mod sdk;

mod entities;
mod executor;
mod lock_release;
