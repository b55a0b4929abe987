//! Queues with visibility timeouts: the control queues and the work-item queue.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use taskhub_core::Timestamp;

use crate::error::{StorageError, StorageResult};

/// The largest message body a queue accepts, in bytes (the Azure Storage queue limit): the
/// default of [`QueueStore::max_message_bytes`], which is what callers must go by. Bigger
/// payloads go to the [`PayloadStore`](crate::PayloadStore).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The most messages one dequeue may return (the Azure Storage queue limit): the default of
/// [`QueueStore::max_dequeue_batch`], which is what callers must go by.
pub const MAX_DEQUEUE_BATCH: usize = 32;

/// The most partitions a task hub may have.
pub const MAX_PARTITIONS: u32 = 16;

/// The longest initial delay of a message (the Azure Storage queue limit, 7 days): the
/// default of [`QueueStore::max_delay`], which is what callers must go by.
pub const MAX_DELAY: Duration = Duration::from_secs(7 * 24 * 3600);

/// The error for a receipt that no longer holds a message of `queue` (redelivered, deleted,
/// or never this store's).
#[must_use]
pub fn receipt_expired(queue: QueueName) -> StorageError {
    StorageError::ReceiptExpired {
        queue: queue.to_string(),
    }
}

/// Rejects a control queue a hub cannot have (partition [`MAX_PARTITIONS`] and up).
///
/// # Errors
/// [`StorageError::InvalidArgument`] naming the partition.
pub fn check_queue(queue: QueueName) -> StorageResult<()> {
    match queue {
        QueueName::Control(p) if p >= MAX_PARTITIONS => {
            Err(StorageError::InvalidArgument(format!(
                "control queue of partition {p}: a hub has at most {MAX_PARTITIONS} partitions"
            )))
        }
        _ => Ok(()),
    }
}

/// Rejects a dequeue `store` would not serve: a queue that cannot exist ([`check_queue`]),
/// or a batch of 0 or over its [`max_dequeue_batch`](QueueStore::max_dequeue_batch).
///
/// # Errors
/// [`StorageError::InvalidArgument`] naming what is wrong.
pub fn check_dequeue<S: QueueStore + ?Sized>(
    store: &S,
    queue: QueueName,
    max: usize,
) -> StorageResult<()> {
    check_queue(queue)?;
    let limit = store.max_dequeue_batch();
    if max == 0 || max > limit {
        return Err(StorageError::InvalidArgument(format!(
            "dequeue of {max} messages: the batch size must be 1 to {limit}"
        )));
    }
    Ok(())
}

/// Rejects what `store` would not enqueue on `queue`: a queue that cannot exist
/// ([`check_queue`]), a body over its [`max_message_bytes`](QueueStore::max_message_bytes), a
/// delay over its [`max_delay`](QueueStore::max_delay).
///
/// # Errors
/// [`StorageError::InvalidArgument`] or [`StorageError::TooLarge`] for the first that does
/// not fit.
pub fn check_messages<'m, S: QueueStore + ?Sized>(
    store: &S,
    queue: QueueName,
    messages: impl IntoIterator<Item = &'m NewQueueMessage>,
) -> StorageResult<()> {
    check_queue(queue)?;
    let (max_bytes, max_delay) = (store.max_message_bytes(), store.max_delay());
    for m in messages {
        if m.body.len() > max_bytes {
            return Err(StorageError::TooLarge {
                what: format!("message body for {queue}"),
                size: m.body.len(),
                limit: max_bytes,
            });
        }
        if m.delay > max_delay {
            return Err(StorageError::InvalidArgument(format!(
                "message delay {:?} for {queue} is over the longest delay of {max_delay:?}",
                m.delay
            )));
        }
    }
    Ok(())
}

/// One queue of the task hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueName {
    /// The control queue of a partition (`control-00` … `control-15`).
    Control(u32),
    /// The single work-item (activity) queue.
    WorkItems,
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Control(p) => write!(f, "control-{p:02}"),
            Self::WorkItems => f.write_str("workitems"),
        }
    }
}

/// Proof of a dequeue, needed to delete or abandon that delivery. Opaque to the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Receipt(pub String);

/// A message to enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewQueueMessage {
    /// The body (an encoded [`taskhub_core::Message`]); at most
    /// [`QueueStore::max_message_bytes`].
    pub body: String,
    /// How long the message stays invisible after the enqueue (0 = visible at once).
    pub delay: Duration,
}

/// A dequeued message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued {
    /// The receipt of this delivery.
    pub receipt: Receipt,
    /// The body as enqueued.
    pub body: String,
    /// How many times the message has been dequeued, this delivery included (1 on first).
    pub dequeue_count: u32,
    /// When the message was first enqueued (by the store's clock).
    pub enqueued_at: Timestamp,
}

/// Length and age of a queue, for the scale monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueStats {
    /// Messages in the queue, visible or not.
    pub length: u64,
    /// Enqueue time of the oldest message, if any. A backend that can only peek at visible
    /// messages (Azure Storage) reports the oldest visible one.
    pub oldest_enqueued_at: Option<Timestamp>,
}

/// Queue semantics of Azure Storage queues: at-least-once delivery with visibility timeouts.
///
/// Contract (each MUST has a conformance case):
/// * The limits are the backend's own and callers go by what it reports:
///   [`max_message_bytes`](Self::max_message_bytes),
///   [`max_dequeue_batch`](Self::max_dequeue_batch), [`max_delay`](Self::max_delay).
/// * `enqueue` MUST reject a body over `max_message_bytes()` with `TooLarge` (and accept one
///   of exactly that size), and MUST make the message invisible for `delay`.
/// * `dequeue` MUST return at most `max` messages and MUST reject `max` of 0 or over
///   `max_dequeue_batch()` with `InvalidArgument`; it MUST NOT return a message that another
///   dequeue holds within its visibility timeout; a message whose visibility timeout expired
///   MUST be returned again with `dequeue_count` increased by one.
/// * When all are visible, dequeues MUST return every message, each once while it is held.
///   The order across messages is NOT part of the contract: Azure Storage queues are not FIFO
///   (SQLite and memory happen to be), and neither the runtime nor the conformance suite
///   depends on it.
/// * `delete` with a current receipt MUST remove the message for good; with a stale receipt
///   (the message was re-dequeued since) it MUST fail with `ReceiptExpired` and leave the
///   message in place.
/// * `abandon` MUST make the message visible again after `delay`, keep its dequeue count, and
///   invalidate the receipt.
/// * `release` MUST make the message visible again after `delay` and invalidate the receipt,
///   and the released delivery MUST NOT count toward the message's dequeue count: its next
///   delivery reports the same `dequeue_count` as the released one did. The runtime releases
///   what it gives back through no fault of the message (its lease or epoch ended, the worker
///   stops), so a lease move never pushes live messages toward the poison threshold. A backend
///   whose native count cannot be decremented (Azure Storage's `DequeueCount`) keeps a count
///   of released deliveries in the message itself (Update Message rewrites the body) and
///   subtracts it when it reports `dequeue_count`.
/// * `extend` MUST push the visibility timeout to `visibility` from now and return a new
///   receipt that replaces the old one.
/// * `stats` MUST count visible and invisible messages.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Adds messages to a queue. All or none are enqueued where the backend can do so.
    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()>;
    /// Takes up to `max` visible messages and hides them for `visibility`.
    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>>;
    /// Deletes a dequeued message.
    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()>;
    /// Returns a dequeued message to the queue, visible again after `delay`.
    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()>;
    /// Returns a dequeued message to the queue, visible again after `delay`, without counting
    /// this delivery toward its dequeue count.
    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()>;
    /// Keeps a dequeued message hidden for `visibility` from now.
    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt>;
    /// Length and oldest-message age.
    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats>;
    /// The largest message body this backend's queues accept, in bytes.
    fn max_message_bytes(&self) -> usize {
        MAX_MESSAGE_BYTES
    }
    /// The most messages one dequeue may return.
    fn max_dequeue_batch(&self) -> usize {
        MAX_DEQUEUE_BATCH
    }
    /// The longest initial `delay` the backend accepts; longer timers are re-enqueued in chunks.
    fn max_delay(&self) -> Duration {
        MAX_DELAY
    }
    /// The unit the backend counts delays in (`Duration::ZERO`: exact). A delay that is not a
    /// whole number of units still keeps the message hidden for at least `delay` (rounded up);
    /// the runtime sends a timer with its delay rounded down to whole units instead and waits
    /// the remainder itself, so the timer fires on time rather than up to one unit late.
    fn delay_granularity(&self) -> Duration {
        Duration::ZERO
    }
    /// The time on the clock this store's visibility timeouts, delays and enqueue times run
    /// on, for a store that [owns time](crate::TaskHubStore::owns_time) and can tell it (a
    /// database server's `now`); `None` (the default) when the caller's clock stands for it.
    /// The conformance suite asks it for "now", so its cases hold on a server whose clock is
    /// not the test's.
    async fn server_now(&self) -> StorageResult<Option<Timestamp>> {
        Ok(None)
    }
}
