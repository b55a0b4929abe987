//! What a remote executor's failure means for the work it was given: whether it counts as a
//! failed delivery (toward the poison threshold) and how long the work waits before it is
//! tried again. Turns, entity batches and activities alike follow these rules.

use std::time::Duration;

use crate::executor::ExecutorError;

/// How long a batch waits before it is tried again after an executor error.
pub(crate) const EXECUTOR_RETRY: Duration = Duration::from_secs(1);

/// How long work waits before it is tried again after [`ExecutorError::Busy`]: the executor's
/// backlog drains in turns' and activities' time, and each try loads the work again.
pub(crate) const BUSY_RETRY: Duration = Duration::from_secs(5);

/// How long work waits before it is tried again after `e`.
pub(crate) fn retry_delay(e: &ExecutorError) -> Duration {
    match e {
        ExecutorError::Busy { .. } => BUSY_RETRY,
        _ => EXECUTOR_RETRY,
    }
}

/// True if an executor error counts toward the poison threshold (see `orchestration::remote`): a worker took the work and failed with it.
pub(crate) fn counts_as_failed_delivery(e: &ExecutorError) -> bool {
    !matches!(
        e,
        ExecutorError::Unavailable { .. } | ExecutorError::Busy { .. }
    )
}
