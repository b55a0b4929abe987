//! A handed-over activity result's work item, kept hidden until its turn takes it.
//!
//! While the activity ran, its runner renewed the work item's visibility. Once the result is
//! handed to the session in process, the work item waits for the turn that consumes it (or
//! for a fall-back to the control queue); a renewer keeps it hidden meanwhile, so a session
//! that is slow to get to the result never lets the activity run again. The turn *takes* the
//! item before it commits: renewals stop (a renewal would replace the receipt the checkpoint
//! deletes with) and the turn uses the current receipt. At least half the visibility timeout is
//! then left, as at any renewal.

use std::sync::{Arc, Weak};
use std::time::Duration;

use taskhub_storage::{QueueName, Receipt};
use tokio::sync::{Mutex, Notify};
use tracing::warn;

use super::lifecycle::Lifecycle;
use super::run_ledger::RunMark;
use crate::hub::TaskHub;

/// The receipt of a handed-over work item and when its visibility was last set.
#[derive(Debug)]
pub(crate) struct HeldItem {
    state: Mutex<HeldState>,
    /// Wakes the renewer when the item is taken or dropped, so it never outlives its item
    /// (a graceful shutdown waits for the worker's tasks).
    wake: Arc<Notify>,
    /// The work item's mark in the run ledger, dropped with the item.
    run: RunMark,
}

impl Drop for HeldItem {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

#[derive(Debug)]
struct HeldState {
    receipt: Receipt,
    /// Monotonic time of the dequeue or the last renewal.
    renewed_at: Duration,
    /// A turn took it: no more renewals.
    taken: bool,
}

impl HeldItem {
    /// Starts keeping the work item hidden (from `renewed_at`, its last renewal) until a turn
    /// takes it or the delivery holding it is dropped; `run` is its mark in the run ledger.
    /// The renewer runs as one of `lifecycle`'s tasks.
    pub(crate) fn start(
        hub: &TaskHub,
        lifecycle: &Lifecycle,
        receipt: Receipt,
        renewed_at: Duration,
        run: RunMark,
    ) -> Arc<Self> {
        let wake = Arc::new(Notify::new());
        let held = Arc::new(Self {
            state: Mutex::new(HeldState {
                receipt,
                renewed_at,
                taken: false,
            }),
            wake: wake.clone(),
            run,
        });
        lifecycle.spawn(renew_until_taken(hub.clone(), Arc::downgrade(&held), wake));
        held
    }

    /// Stops the renewals; returns the current receipt.
    pub(crate) async fn take(&self) -> Receipt {
        let mut st = self.state.lock().await;
        st.taken = true;
        self.wake.notify_one();
        st.receipt.clone()
    }

    /// The result is recorded and the work item deleted (by the turn's checkpoint, or by the
    /// fall-back's): a copy of it is not run again (see [`run_ledger`](super::run_ledger)).
    pub(crate) fn recorded(&self) {
        self.run.recorded();
    }

    /// The current receipt and when the visibility was last set.
    pub(crate) async fn current(&self) -> (Receipt, Duration) {
        let st = self.state.lock().await;
        (st.receipt.clone(), st.renewed_at)
    }
}

async fn renew_until_taken(hub: TaskHub, held: Weak<HeldItem>, wake: Arc<Notify>) {
    let clock = hub.clock().clone();
    let visibility = hub.settings().work_item_visibility_timeout;
    // After a failed renewal, the next try (an eighth of the timeout later).
    let mut retry_at = Duration::ZERO;
    loop {
        let due = {
            let Some(h) = held.upgrade() else { return };
            let st = h.state.lock().await;
            if st.taken {
                return;
            }
            (st.renewed_at + visibility / 2).max(retry_at)
        };
        let asleep = clock.sleep(due.saturating_sub(clock.monotonic()));
        tokio::select! {
            () = asleep => {}
            // Taken or dropped: look again (and most likely stop).
            () = wake.notified() => continue,
        }
        let Some(h) = held.upgrade() else { return };
        let mut st = h.state.lock().await;
        if st.taken {
            return;
        }
        match hub
            .store()
            .extend(QueueName::WorkItems, &st.receipt, visibility)
            .await
        {
            Ok(r) => {
                st.receipt = r;
                st.renewed_at = clock.monotonic();
            }
            Err(e) => {
                warn!(error = %e, "could not extend a handed-over work item's visibility");
                retry_at = clock.monotonic() + visibility / 8;
            }
        }
    }
}
