//! Halts the worker when its process heartbeat finds the hub migrated by a newer build, and
//! tells a failed delivery whose cause is such a migration from an ordinary failure.

use std::sync::Arc;

use std::time::Duration;

use taskhub_storage::{QueueName, Receipt, StorageError};

use crate::hub::TaskHub;
use crate::process::Announced;
use crate::worker::shared::lifecycle::Lifecycle;
use crate::worker::shared::Shared;

/// Waits until the heartbeat reports a newer schema (then halts the worker) or the worker
/// stops.
pub(crate) async fn halt_when_moved(shared: Arc<Shared>, process: Arc<Announced>) {
    let mut stop = shared.lifecycle.stop.clone();
    tokio::select! {
        e = process.schema_moved() => shared.lifecycle.halt(&e),
        _ = stop.wait_for(|s| *s) => {}
    }
}

/// True when the worker halted, or halts now because the hub's stored schema is newer than
/// this build's: a failure then says nothing about the message, which goes back uncounted
/// and is never dead-lettered for it. Asked only when a delivery failed or is about to be
/// dead-lettered, so it costs one read on that path alone.
pub(crate) async fn schema_moved(hub: &TaskHub, lifecycle: &Lifecycle) -> bool {
    if lifecycle.halted().is_some() {
        return true;
    }
    match taskhub_storage::check_schema(hub.store().as_ref(), "the task hub").await {
        Err(e @ StorageError::NewerSchema { .. }) => {
            lifecycle.halt(&e);
            true
        }
        _ => false,
    }
}

/// Gives back a message whose processing failed, visible again after `delay`: counted toward
/// the poison threshold, or uncounted when the hub's schema moved past this build (see
/// [`schema_moved`]), so that a newer build does not find it already over the threshold.
pub(crate) async fn give_back_failed(
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    queue: QueueName,
    receipt: &Receipt,
    delay: Duration,
) {
    let store = hub.store();
    let given = if schema_moved(hub, lifecycle).await {
        store.release(queue, receipt, delay).await
    } else {
        store.abandon(queue, receipt, delay).await
    };
    if let Err(e) = given {
        tracing::debug!(error = %e, "give-back failed; the message reappears after its visibility timeout");
    }
}
