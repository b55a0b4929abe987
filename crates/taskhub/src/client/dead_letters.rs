//! Inspecting and replaying dead-lettered (poison) messages.

use std::time::Duration;

use taskhub_storage::{DeadLetter, NewQueueMessage};

use super::TaskHubClient;
use crate::error::TaskhubError;

impl TaskHubClient {
    /// Lists dead letters, oldest first, at most `limit`, after the letter `after`.
    ///
    /// # Errors
    /// A storage error.
    pub async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, TaskhubError> {
        Ok(self.hub.store().list_dead_letters(after, limit).await?)
    }

    /// Puts a dead letter back into the queue it came from, as a fresh message (dequeue count
    /// 0). Returns false if no letter has that ID.
    ///
    /// # Errors
    /// A storage error; the letter stays in the dead-letter store if the enqueue fails.
    pub async fn replay_dead_letter(&self, id: &str) -> Result<bool, TaskhubError> {
        let store = self.hub.store();
        let Some(letter) = store.take_dead_letter(id).await? else {
            return Ok(false);
        };
        let message = NewQueueMessage {
            body: letter.body.clone(),
            delay: Duration::ZERO,
        };
        if let Err(e) = store.enqueue(letter.queue, vec![message]).await {
            // Put it back so it is not lost.
            let _ = store.add_dead_letter(letter).await;
            return Err(e.into());
        }
        self.hub.inner.signals.enqueued(letter.queue);
        Ok(true)
    }
}
