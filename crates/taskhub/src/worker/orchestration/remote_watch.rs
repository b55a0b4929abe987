//! Waiting on a remote executor: the wait ends when the partition's lease under which the work
//! was taken ends (lost, handed over, released or drained) or the worker stops, and it lends
//! its processing slot to other instances meanwhile. It also marks the session as waiting on
//! the executor: while it waits, the control-queue messages that come for the instance may take
//! a quarter of the prefetch buffer (see `shared::sessions`), and the batch's own buffer slots
//! are freed (`orchestration::remote`), so an instance that floods itself cannot hold the buffer
//! while its turn is out.

use std::future::Future;

use taskhub_core::InstanceId;
use taskhub_storage::LeaseFence;
use tokio::sync::{watch, Semaphore};

use crate::worker::shared::Shared;

/// Why a wait on an executor ended before its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The lease the work was taken under ended: nothing may be committed under it.
    LeaseEnded,
    /// The worker is stopping.
    Stopping,
}

/// Runs `work` until it answers, or until the lease `fence` ends or the worker stops: then
/// `work` is dropped at once (withdrawing what it handed out). With `slots`, one permit of it
/// (the caller holds one) is lent to others for the wait and taken back after it.
///
/// Meanwhile the session of `instance` is marked as waiting on the executor, so the messages
/// that come for it are held to its share of the buffer (see [`sessions`](crate::worker::shared::sessions)).
pub(crate) async fn until_cut<T>(
    shared: &Shared,
    instance: &InstanceId,
    fence: LeaseFence,
    slots: Option<&Semaphore>,
    work: impl Future<Output = T>,
) -> Result<T, Cut> {
    let Some(mut lease) = watch_lease(shared, fence) else {
        return Err(Cut::LeaseEnded);
    };
    let _waiting = RemoteWait::new(shared, instance);
    let mut stop = shared.lifecycle.stop.clone();
    if let Some(s) = slots {
        s.add_permits(1);
    }
    let outcome = tokio::select! {
        answer = work => Ok(answer),
        () = set(&mut lease) => Err(Cut::LeaseEnded),
        () = set(&mut stop) => Err(Cut::Stopping),
    };
    if let Some(s) = slots {
        // Take the lent permit back (waiting, if others hold every slot now).
        if let Ok(p) = s.acquire().await {
            p.forget();
        }
    }
    outcome
}

/// Marks a session as waiting on the executor while it lives.
struct RemoteWait<'a> {
    shared: &'a Shared,
    instance: &'a InstanceId,
}

impl<'a> RemoteWait<'a> {
    fn new(shared: &'a Shared, instance: &'a InstanceId) -> Self {
        let now = shared.hub.clock().monotonic();
        shared.sessions.remote_wait(instance, Some(now));
        Self { shared, instance }
    }
}

impl Drop for RemoteWait<'_> {
    fn drop(&mut self) {
        self.shared.sessions.remote_wait(self.instance, None);
    }
}

/// A receiver that turns true (or closes) when the partition's processing under `fence`'s
/// epoch stops; `None` if it has stopped already.
fn watch_lease(shared: &Shared, fence: LeaseFence) -> Option<watch::Receiver<bool>> {
    let held = shared.placement.held();
    let active = held.get(&fence.partition)?;
    (active.epoch == fence.epoch && !*active.stop.borrow()).then(|| active.stop.subscribe())
}

/// Returns once `rx` is true or its sender is gone.
async fn set(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}
