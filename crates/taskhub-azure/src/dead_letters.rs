//! The `<Hub>DeadLetters` table: PartitionKey `dl`, RowKey = the letter's ID, which sorts by
//! the time it was added (store clock, then a process counter).

use async_trait::async_trait;
use taskhub_core::Timestamp;
use taskhub_storage::{DeadLetter, DeadLetterStore, QueueName, StorageError, StorageResult};

use crate::store::{extend, num, parse_num, AzureStore};
use crate::tables::{entity, lit, Row};

const PK: &str = "dl";

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
        let id = format!(
            "{:015}-{:010}-{}",
            self.clock.now().as_millis(),
            self.next_counter(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let prefix = format!("deadletters/{id}/");
        let mut e = entity(
            PK,
            &id,
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
        self.tables.insert(&self.names.dead_letters, &e).await?;
        Ok(id)
    }

    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>> {
        let mut filter = format!("PartitionKey eq {}", lit(PK));
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
        let Some(row) = self.tables.get(&self.names.dead_letters, PK, id).await? else {
            return Ok(None);
        };
        let letter = self.parse_letter(&row).await?;
        if !self.tables.delete(&self.names.dead_letters, PK, id).await? {
            return Ok(None);
        }
        self.blobs
            .delete_prefix(&format!("deadletters/{id}/"))
            .await?;
        Ok(Some(letter))
    }
}
