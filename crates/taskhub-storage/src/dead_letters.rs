//! The dead-letter (poison) store: messages that failed too often, kept for inspection.

use async_trait::async_trait;
use taskhub_core::Timestamp;

use crate::error::StorageResult;
use crate::queue::{QueueName, Receipt};

/// A message moved out of its queue because it could not be processed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Unique ID in the dead-letter store (assigned by the store on insert).
    pub id: String,
    /// The queue it came from.
    pub queue: QueueName,
    /// The raw body, as it was in the queue.
    pub body: String,
    /// Why it was dead-lettered.
    pub reason: String,
    /// Its dequeue count when it was moved.
    pub dequeue_count: u32,
    /// When it was moved.
    pub dead_lettered_at: Timestamp,
}

/// The dead-letter store.
///
/// Contract:
/// * `add_dead_letter` MUST assign a new unique ID and return it.
/// * `list_dead_letters` MUST return letters oldest first, at most `limit`, starting after
///   `after` (an ID from a previous page).
/// * `take_dead_letter` MUST remove and return the letter (for replay), or `None`.
/// * `move_to_dead_letters` MUST store the letter and delete the dequeued message its receipt
///   holds as one step: both or neither. With a stale receipt (the message was deleted,
///   abandoned or redelivered since) it MUST fail with `ReceiptExpired` and store nothing, so
///   a repeated move (a retry after a lost response, a crash between steps) never makes a
///   second letter of one message. A backend without transactions across the queue and the
///   letters (Azure Storage) checks the receipt first (Update Message), then stores the
///   letter under an ID derived from the queue and the message's own ID (insert, or keep the
///   existing one), then deletes the message: a move repeated after a torn one finds its
///   letter already there.
#[async_trait]
pub trait DeadLetterStore: Send + Sync {
    /// Stores a letter; the `id` field is ignored and assigned.
    async fn add_dead_letter(&self, letter: DeadLetter) -> StorageResult<String>;
    /// Lists letters.
    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>>;
    /// Removes and returns one letter.
    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>>;
    /// Moves a dequeued message (the one `receipt` holds in `queue`) into the dead-letter
    /// store as `letter` (its `id` and `queue` fields are ignored and assigned); returns the
    /// letter's ID.
    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        letter: DeadLetter,
    ) -> StorageResult<String>;
}
