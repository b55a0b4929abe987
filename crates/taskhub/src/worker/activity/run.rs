//! One work item, run to completion in three steps: [`admit`] it (dead-letter what cannot
//! run, decode it, leave out a copy of one that runs or ran here), [`execute`] it (in
//! process or in the remote executor, keeping the work item hidden) and [`report`] its result
//! (to its session in process, or committed with the work item's delete).
//!
//! [`admit`]: super::admit
//! [`execute`]: super::execute
//! [`report`]: super::report

use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::Dequeued;
use tokio::sync::OwnedSemaphorePermit;

use super::admit::admit;
use super::{execute, report};
use crate::worker::shared::Shared;

/// Runs one work item to completion and reports its result. `hidden_since` is the monotonic
/// time before the request that hid the item (the dequeue, or the checkpoint that claimed
/// it): its visibility is renewed counting from then, never later.
pub(super) async fn run_one(
    shared: Arc<Shared>,
    m: Dequeued,
    permit: OwnedSemaphorePermit,
    hidden_since: Duration,
) {
    let Some(admitted) = admit(&shared, m).await else {
        return;
    };
    let Some(executed) = execute::execute(&shared, &admitted, hidden_since).await else {
        return;
    };
    report::report(&shared, admitted, executed, permit).await;
}
