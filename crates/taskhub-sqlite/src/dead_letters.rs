//! The dead-letter store: poison messages kept for inspection and replay. IDs are the
//! table's increasing row IDs, so "oldest first" is ID order.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Row};
use taskhub_storage::sql::codec::dead_letter_id;
use taskhub_storage::{DeadLetter, DeadLetterStore, QueueName, Receipt, StorageResult};

use crate::codec::{
    check_queue, queue_from_sql, queue_to_sql, ts_from_sql, ts_to_sql, u32_from_sql,
};
use crate::errors::SqlResultExt;
use crate::queues::{delete_in, expired};
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "dead letters";

const COLUMNS: &str = "id, queue, body, reason, dequeue_count, dead_lettered_at";

type RawLetter = (i64, String, String, String, i64, i64);

fn raw(r: &Row<'_>) -> rusqlite::Result<RawLetter> {
    RawLetter::try_from(r)
}

fn decode((id, queue, body, reason, count, at): RawLetter) -> StorageResult<DeadLetter> {
    Ok(DeadLetter {
        id: id.to_string(),
        queue: queue_from_sql(&queue)?,
        body,
        reason,
        dequeue_count: u32_from_sql("dead letter dequeue count", count)?,
        dead_lettered_at: ts_from_sql("dead letter time", at)?,
    })
}

fn list(conn: &Connection, after: i64, limit: usize) -> StorageResult<Vec<DeadLetter>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let raws: Vec<RawLetter> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM dead_letters WHERE id > ?1 ORDER BY id LIMIT ?2"
        ))
        .and_then(|mut s| s.query_map(params![after, limit], raw)?.collect())
        .ctx(WHAT)?;
    raws.into_iter().map(decode).collect()
}

/// Inserts a letter and returns its ID.
fn insert(tx: &Tx<'_>, letter: &DeadLetter) -> StorageResult<String> {
    tx.conn
        .prepare_cached(
            "INSERT INTO dead_letters (queue, body, reason, dequeue_count, dead_lettered_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| {
            s.execute(params![
                queue_to_sql(letter.queue),
                letter.body,
                letter.reason,
                letter.dequeue_count,
                ts_to_sql(letter.dead_lettered_at),
            ])
        })
        .ctx(WHAT)?;
    Ok(tx.conn.last_insert_rowid().to_string())
}

#[async_trait]
impl DeadLetterStore for SqliteStore {
    async fn add_dead_letter(&self, letter: DeadLetter) -> StorageResult<String> {
        check_queue(letter.queue)?;
        self.write(move |tx| insert(tx, &letter)).await
    }

    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        letter: DeadLetter,
    ) -> StorageResult<String> {
        check_queue(queue)?;
        let receipt = receipt.clone();
        let letter = DeadLetter { queue, ..letter };
        // One transaction: the delete decides (a stale receipt stores nothing).
        self.write(move |tx| {
            if !delete_in(tx, queue, &receipt)? {
                return Err(expired(queue));
            }
            insert(tx, &letter)
        })
        .await
    }

    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>> {
        let after = after.map(dead_letter_id).transpose()?.unwrap_or(0);
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.read(move |tx| list(tx, after, limit)).await
    }

    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>> {
        let Ok(id) = dead_letter_id(id) else {
            return Ok(None);
        };
        self.write(move |tx| {
            let found = tx
                .conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM dead_letters WHERE id = ?1"))
                .and_then(|mut s| s.query_row([id], raw).optional())
                .ctx(WHAT)?;
            let Some(found) = found else {
                return Ok(None);
            };
            tx.conn
                .prepare_cached("DELETE FROM dead_letters WHERE id = ?1")
                .and_then(|mut s| s.execute([id]))
                .ctx(WHAT)?;
            decode(found).map(Some)
        })
        .await
    }
}
