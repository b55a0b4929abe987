//! The `<Hub>DeadLetters` table: PartitionKey `dl`, RowKey = the letter's ID, which sorts by
//! the time it was added (store clock, then a process counter). A letter moved from a queue
//! also has an index row `m-<queue>-<message ID>` (same partition, written in one batch with the
//! letter) naming it, so a repeated move of one message finds its letter instead of making a
//! second one. Letter IDs start with a digit, index rows with `m`: listings read only RowKeys
//! below `a`.

use async_trait::async_trait;
use std::time::Duration;
use taskhub_core::Timestamp;

use taskhub_storage::{
    DeadLetter, DeadLetterStore, QueueName, QueueStore, Receipt, StorageError, StorageResult,
};

use crate::store::{extend, num, parse_num, AzureStore};
use crate::tables::{entity, lit, BatchOp, Entity, Row};

const PK: &str = "dl";

/// Letters sort below this RowKey; index rows (`m-...`) above it.
const LETTERS_END: &str = "a";

/// How long a move keeps the message hidden while it stores the letter.
const MOVE_HOLD: Duration = Duration::from_secs(60);

fn parse_queue(text: &str) -> Option<QueueName> {
    if text == "workitems" {
        return Some(QueueName::WorkItems);
    }
    text.strip_prefix("control-")?
        .parse()
        .ok()
        .map(QueueName::Control)
}

impl AzureStore {
    fn new_letter_id(&self) -> String {
        format!(
            "{:015}-{:010}-{}",
            self.clock.now().as_millis(),
            self.next_counter(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )
    }

    /// The letter's row (its large texts stored in blobs under its ID).
    async fn letter_entity(&self, id: &str, letter: &DeadLetter) -> StorageResult<Entity> {
        let prefix = format!("deadletters/{id}/");
        let mut e = entity(
            PK,
            id,
            &[
                ("Queue", letter.queue.to_string()),
                ("DequeueCount", num(u64::from(letter.dequeue_count))),
                ("At", num(letter.dead_lettered_at.as_millis())),
            ],
        );
        extend(&mut e, self.big_text("Body", &letter.body, &prefix).await?);
        extend(
            &mut e,
            self.big_text("Reason", &letter.reason, &prefix).await?,
        );
        Ok(e)
    }

    async fn parse_letter(&self, row: &Row) -> StorageResult<DeadLetter> {
        let id = row.str("RowKey").to_owned();
        let what = format!("dead letter {id}");
        Ok(DeadLetter {
            queue: parse_queue(row.str("Queue")).ok_or_else(|| StorageError::Corrupt {
                what: what.clone(),
                detail: format!("unknown queue '{}'", row.str("Queue")),
            })?,
            body: self.read_big(row, "Body").await?,
            reason: self.read_big(row, "Reason").await?,
            dequeue_count: u32::try_from(parse_num(row.str("DequeueCount"), &what)?)
                .unwrap_or(u32::MAX),
            dead_lettered_at: Timestamp::from_millis(parse_num(row.str("At"), &what)?),
            id,
        })
    }
}

#[async_trait]
impl DeadLetterStore for AzureStore {
    async fn add_dead_letter(&self, letter: DeadLetter) -> StorageResult<String> {
        let id = self.new_letter_id();
        let e = self.letter_entity(&id, &letter).await?;
        self.tables.insert(&self.names.dead_letters, &e).await?;
        Ok(id)
    }

    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        letter: DeadLetter,
    ) -> StorageResult<String> {
        // 1. The receipt must be current (else nothing is stored); keep the message hidden.
        let (held, message_id) = self.hold(queue, receipt, MOVE_HOLD).await?;
        // 2. The letter and its index row in one batch; a repeat finds the index.
        let index = format!("m-{queue}-{message_id}");
        let id = self.new_letter_id();
        let letter = DeadLetter { queue, ..letter };
        let mut row = self.letter_entity(&id, &letter).await?;
        extend(&mut row, vec![("Index".to_owned(), index.clone())]);
        let index_row = entity(PK, &index, &[("Letter", id.clone())]);
        let table = &self.names.dead_letters;
        let id = match self
            .tables
            .batch(table, &[BatchOp::Insert(row), BatchOp::Insert(index_row)])
            .await
        {
            Ok(_) => id,
            Err(StorageError::Conflict { .. }) => {
                self.blobs
                    .delete_prefix(&format!("deadletters/{id}/"))
                    .await?;
                let existing = self.tables.get(table, PK, &index).await?;
                let existing = existing.ok_or_else(|| StorageError::Corrupt {
                    what: format!("dead-letter index {index}"),
                    detail: "the move conflicted but no index row exists".to_owned(),
                })?;
                existing.str("Letter").to_owned()
            }
            Err(e) => return Err(e),
        };
        // 3. Delete the message; if this fails a repeat finds the letter already there.
        self.delete(queue, &held).await?;
        Ok(id)
    }

    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>> {
        let mut filter = format!(
            "PartitionKey eq {} and RowKey lt {}",
            lit(PK),
            lit(LETTERS_END)
        );
        if let Some(after) = after {
            filter.push_str(&format!(" and RowKey gt {}", lit(after)));
        }
        let mut out = Vec::new();
        let mut next = None;
        while out.len() < limit {
            let (rows, cont) = self
                .tables
                .query_page(
                    &self.names.dead_letters,
                    &filter,
                    Some((limit - out.len()).min(1000)),
                    next.as_ref(),
                )
                .await?;
            for row in &rows {
                out.push(self.parse_letter(row).await?);
            }
            match cont {
                Some(c) => next = Some(c),
                None => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>> {
        if id >= LETTERS_END {
            return Ok(None); // an index row, not a letter
        }
        let Some(row) = self.tables.get(&self.names.dead_letters, PK, id).await? else {
            return Ok(None);
        };
        let letter = self.parse_letter(&row).await?;
        if !self.tables.delete(&self.names.dead_letters, PK, id).await? {
            return Ok(None);
        }
        let index = row.str("Index");
        if !index.is_empty() {
            self.tables
                .delete(&self.names.dead_letters, PK, index)
                .await?;
        }
        self.blobs
            .delete_prefix(&format!("deadletters/{id}/"))
            .await?;
        Ok(Some(letter))
    }
}
