//! Dead letters and their replay.

use serde::Serialize;
use taskhub_storage::DeadLetter;
use utoipa::ToSchema;

use crate::isotime;

/// A message that failed too often.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeadLetterView {
    /// Its ID (to replay it).
    pub id: String,
    /// The queue it came from.
    pub queue: String,
    /// Why it was set aside.
    pub reason: String,
    /// How often it was delivered.
    pub dequeue_count: u32,
    /// When it was set aside.
    pub dead_lettered_time: String,
    /// The message body.
    pub body: String,
}

impl From<&DeadLetter> for DeadLetterView {
    fn from(l: &DeadLetter) -> Self {
        Self {
            id: l.id.clone(),
            queue: l.queue.to_string(),
            reason: l.reason.clone(),
            dequeue_count: l.dequeue_count,
            dead_lettered_time: isotime::millis(l.dead_lettered_at),
            body: l.body.clone(),
        }
    }
}

/// A replayed letter.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Replayed {
    /// Its ID.
    pub replayed: String,
}
