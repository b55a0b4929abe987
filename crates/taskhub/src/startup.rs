//! Opening a hub and starting a worker on a busy store: retryable errors (SQLite's "database
//! is locked" past its busy timeout, a transient Azure error) are retried with back-off, through
//! the [`Clock`], for at most [`Settings::startup_busy_timeout`](crate::Settings), then reported
//! as [`TaskhubError::StoreBusy`] saying for how long the store stayed busy.
//!
//! On SQLite a process stopped (SIGSTOP, a debugger) inside a write transaction holds the
//! file's write lock and so stops every writer of the hub until it resumes or dies; this is
//! what a start then waits out. Azure Storage has no such lock.

use std::future::Future;
use std::time::Duration;

use taskhub_storage::{Clock, StorageError};
use tracing::warn;

use crate::error::TaskhubError;
use crate::retries;

/// What a start retries: `operation` names it in the error.
pub(crate) struct Retry<'a> {
    pub clock: &'a dyn Clock,
    pub limit: Duration,
    pub operation: &'static str,
}

impl Retry<'_> {
    /// Runs `attempt` until it succeeds, fails with a non-retryable error, or has failed with
    /// retryable ones for `limit`.
    pub(crate) async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, TaskhubError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StorageError>>,
    {
        let start = self.clock.monotonic();
        let mut waits = retries::startup(self.limit).waits();
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(e) if e.is_retryable() => e,
                Err(e) => return Err(e.into()),
            };
            let waited = self.clock.monotonic().saturating_sub(start);
            let Some(wait) = waits.next_retry(waited) else {
                return Err(TaskhubError::StoreBusy {
                    operation: self.operation,
                    waited,
                    attempts,
                    last: error,
                });
            };
            warn!(operation = self.operation, error = %error, ?waited, "store busy; retrying");
            self.clock.sleep(wait).await;
        }
    }
}
