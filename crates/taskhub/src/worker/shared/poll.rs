//! What the control-queue pollers ([`control`](crate::worker::intake::control)) and the work-item poller
//! ([`activities`](crate::worker::activity::activities)) share: a timed dequeue that waits out a failure, and the
//! waits after an empty or draining poll (the back-off, cut short by an in-process wake-up or
//! the caller's own events).
//!
//! The loops themselves stay in their modules: they differ in how they take slots (prefetch
//! buffer permits topped up to a batch, cancelled by the lease, versus free activity slots),
//! in what they check after a dequeue (a control poller gives its messages back when its lease
//! ended meanwhile) and in what they do with the messages (group by instance and dispatch to
//! sessions, versus one activity run each). One loop over all of that would be made of hooks.

use std::future::Future;
use std::time::Duration;

use taskhub_storage::{Dequeued, QueueName};
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

use super::backoff::{seed_for, PollBackoff};
use crate::hub::TaskHub;

/// What ended a wait besides its timer and the queue's in-process signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// A stop or lease signal changed: the loop re-checks its conditions.
    Recheck,
    /// Another worker left messages on the queue (the doorbell): poll now from the shortest
    /// wait up.
    Reset,
}

/// One poller's queue and back-off.
pub(crate) struct Poller<'a> {
    hub: &'a TaskHub,
    queue: QueueName,
    visibility: Duration,
    backoff: PollBackoff,
}

impl<'a> Poller<'a> {
    /// A poller of `queue` for the worker named `worker`, with the hub's settings for that kind
    /// of queue (its visibility timeout and longest idle wait); the waits are jittered per
    /// worker and queue (see [`seed_for`]).
    pub(crate) fn new(hub: &'a TaskHub, worker: &str, queue: QueueName) -> Self {
        let settings = hub.settings();
        let (visibility, max_wait, salt) = match queue {
            QueueName::Control(partition) => (
                settings.control_queue_visibility_timeout,
                settings.max_queue_polling_interval,
                u64::from(partition),
            ),
            // Longer idle waits than the control queues': overflow rings the doorbell (see
            // `doorbell`), only orphans wait for a blind poll.
            QueueName::WorkItems => (
                settings.work_item_visibility_timeout,
                settings.work_item_polling_cap(),
                u64::MAX,
            ),
        };
        Self {
            hub,
            queue,
            visibility,
            backoff: PollBackoff::new(max_wait, seed_for(worker, salt)),
        }
    }

    /// Dequeues up to as many messages as `slots` holds permits, timing the call for the
    /// back-off's floor. A failure is logged and waited out (after giving the slots back):
    /// `None`, and the caller polls again.
    pub(crate) async fn dequeue(
        &mut self,
        slots: OwnedSemaphorePermit,
    ) -> Option<(Vec<Dequeued>, OwnedSemaphorePermit)> {
        let clock = self.hub.clock();
        let started = clock.monotonic();
        let fetched = self
            .hub
            .store()
            .dequeue(self.queue, slots.num_permits(), self.visibility)
            .await;
        self.backoff.took(clock.monotonic().saturating_sub(started));
        match fetched {
            Ok(messages) => Some((messages, slots)),
            Err(e) => {
                drop(slots);
                warn!(queue = %self.queue, error = %e, "dequeue failed");
                clock.sleep(self.backoff.next_wait()).await;
                None
            }
        }
    }

    /// A poll found messages (see [`PollBackoff::found`]).
    pub(crate) fn found(&mut self) {
        self.backoff.found();
    }

    /// Waits after an empty poll: the back-off's next, longer wait.
    pub(crate) async fn idle(&mut self, interrupt: impl Future<Output = Interrupt>) {
        let wait = self.backoff.next_wait();
        self.wait(wait, interrupt).await;
    }

    /// Waits after a poll that drained the queue: the current level, for other processes'
    /// messages, rather than an empty dequeue at once.
    pub(crate) async fn drained(&mut self, interrupt: impl Future<Output = Interrupt>) {
        let wait = self.backoff.drained_wait();
        self.wait(wait, interrupt).await;
    }

    async fn wait(&mut self, wait: Duration, interrupt: impl Future<Output = Interrupt>) {
        tokio::select! {
            () = self.hub.clock().sleep(wait) => {}
            () = self.hub.signals().queue(self.queue).notified() => self.backoff.woken(),
            why = interrupt => if why == Interrupt::Reset {
                self.backoff.reset();
            },
        }
    }
}
