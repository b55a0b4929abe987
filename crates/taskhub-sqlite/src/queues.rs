//! Queues with visibility timeouts, in the `queue_messages` table.
//!
//! A receipt is `"{message id}:{token}"`, where the token is a fresh store-wide counter value
//! written into the row at each dequeue or extend. Re-dequeue, abandon and extend replace the
//! token, so an older receipt no longer matches.

use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};
use taskhub_storage::{
    Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore, Receipt, StorageResult,
};

use crate::codec::{after, check_queue, queue_to_sql, ts_from_sql, ts_to_sql, u32_from_sql};
use crate::errors::SqlResultExt;
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "queue messages";

/// Inserts messages (sizes already checked).
pub(crate) fn enqueue_in(
    tx: &Tx<'_>,
    queue: QueueName,
    messages: &[NewQueueMessage],
) -> StorageResult<()> {
    let now = tx.now();
    let name = queue_to_sql(queue);
    let mut insert = tx
        .conn
        .prepare_cached(
            "INSERT INTO queue_messages (queue, body, visible_at, dequeue_count, enqueued_at)
             VALUES (?1, ?2, ?3, 0, ?4)",
        )
        .ctx(WHAT)?;
    for m in messages {
        insert
            .execute(params![name, m.body, after(now, m.delay), ts_to_sql(now)])
            .ctx(WHAT)?;
    }
    Ok(())
}

/// Inserts one message (size already checked) as held by its sender for `visibility`: a claim,
/// counted as its first delivery, returned with its receipt.
pub(crate) fn enqueue_claimed_in(
    tx: &Tx<'_>,
    queue: QueueName,
    message: &NewQueueMessage,
    visibility: Duration,
) -> StorageResult<Dequeued> {
    let now = tx.now();
    let token = tx.next_version();
    tx.conn
        .prepare_cached(
            "INSERT INTO queue_messages (queue, body, visible_at, dequeue_count, enqueued_at, receipt)
             VALUES (?1, ?2, ?3, 1, ?4, ?5)",
        )
        .and_then(|mut s| {
            s.execute(params![
                queue_to_sql(queue),
                message.body,
                after(now, visibility),
                ts_to_sql(now),
                token
            ])
        })
        .ctx(WHAT)?;
    Ok(Dequeued {
        receipt: make_receipt(tx.conn.last_insert_rowid(), token),
        body: message.body.clone(),
        dequeue_count: 1,
        enqueued_at: now,
    })
}

/// The first visible messages of a queue.
const VISIBLE_MESSAGES: &str = "SELECT id, body, dequeue_count, enqueued_at FROM queue_messages
     WHERE queue = ?1 AND visible_at <= ?2 ORDER BY id LIMIT ?3";

fn dequeue_in(
    tx: &Tx<'_>,
    queue: QueueName,
    max: usize,
    visibility: Duration,
) -> StorageResult<Vec<Dequeued>> {
    let now = tx.now();
    let name = queue_to_sql(queue);
    let limit = i64::try_from(max).unwrap_or(i64::MAX);
    let rows: Vec<(i64, String, i64, i64)> = tx
        .conn
        .prepare_cached(VISIBLE_MESSAGES)
        .and_then(|mut s| {
            s.query_map(params![name, ts_to_sql(now), limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .ctx(WHAT)?;
    let mut hide = tx
        .conn
        .prepare_cached(
            "UPDATE queue_messages
             SET visible_at = ?1, dequeue_count = dequeue_count + 1, receipt = ?2
             WHERE id = ?3",
        )
        .ctx(WHAT)?;
    let invisible_until = after(now, visibility);
    let mut out = Vec::with_capacity(rows.len());
    for (id, body, count, enqueued_at) in rows {
        let token = tx.next_version();
        hide.execute(params![invisible_until, token, id])
            .ctx(WHAT)?;
        out.push(Dequeued {
            receipt: make_receipt(id, token),
            body,
            dequeue_count: u32_from_sql("dequeue count", count)?.saturating_add(1),
            enqueued_at: ts_from_sql("enqueue time", enqueued_at)?,
        });
    }
    Ok(out)
}

/// Deletes the message a receipt names; false if the receipt is stale.
pub(crate) fn delete_in(tx: &Tx<'_>, queue: QueueName, receipt: &Receipt) -> StorageResult<bool> {
    let Some((id, token)) = parse_receipt(receipt) else {
        return Ok(false);
    };
    let n = tx
        .conn
        .prepare_cached("DELETE FROM queue_messages WHERE id = ?1 AND queue = ?2 AND receipt = ?3")
        .and_then(|mut s| s.execute(params![id, queue_to_sql(queue), token]))
        .ctx(WHAT)?;
    Ok(n > 0)
}

/// What [`rehide`] does to a held message besides moving its visibility.
#[derive(Clone, Copy)]
enum Hold {
    /// Sets its receipt token (`None`: no receipt holds it any more); the delivery counts.
    Token(Option<i64>),
    /// Gives it back without counting its delivery.
    Release,
}

/// [`Hold::Token`]: the new visibility and receipt token of the message held at a receipt.
const SET_VISIBILITY: &str = "UPDATE queue_messages SET visible_at = ?1, receipt = ?2
     WHERE id = ?3 AND queue = ?4 AND receipt = ?5";

/// [`Hold::Release`]: the message held at a receipt visible again, its delivery not counted.
const RELEASE: &str = "UPDATE queue_messages
     SET visible_at = ?1, receipt = NULL, dequeue_count = MAX(dequeue_count - 1, 0)
     WHERE id = ?2 AND queue = ?3 AND receipt = ?4";

/// Makes a held message visible at `visible_at` as `hold` says; false if the receipt is
/// stale.
fn rehide(
    tx: &Tx<'_>,
    queue: QueueName,
    receipt: &Receipt,
    visible_at: i64,
    hold: Hold,
) -> StorageResult<bool> {
    let Some((id, token)) = parse_receipt(receipt) else {
        return Ok(false);
    };
    let queue = queue_to_sql(queue);
    let n = match hold {
        Hold::Token(new_token) => tx
            .conn
            .prepare_cached(SET_VISIBILITY)
            .and_then(|mut s| s.execute(params![visible_at, new_token, id, queue, token])),
        Hold::Release => tx
            .conn
            .prepare_cached(RELEASE)
            .and_then(|mut s| s.execute(params![visible_at, id, queue, token])),
    }
    .ctx(WHAT)?;
    Ok(n > 0)
}

pub(crate) use taskhub_storage::queue::receipt_expired as expired;
pub(crate) use taskhub_storage::sql::codec::{
    receipt_in as parse_receipt, receipt_out as make_receipt,
};

impl SqliteStore {
    /// Runs `work` on the message of `queue` held by `receipt` in a write; its `false` (no row
    /// at the receipt) is `ReceiptExpired`.
    async fn write_held<F>(&self, queue: QueueName, receipt: &Receipt, work: F) -> StorageResult<()>
    where
        F: Fn(&Tx<'_>, &Receipt) -> StorageResult<bool> + Send + 'static,
    {
        check_queue(queue)?;
        let receipt = receipt.clone();
        if self.write(move |tx| work(tx, &receipt)).await? {
            Ok(())
        } else {
            Err(expired(queue))
        }
    }

    /// Makes the message `receipt` holds visible again after `delay`, as `hold` says.
    async fn give_back(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
        hold: Hold,
    ) -> StorageResult<()> {
        self.write_held(queue, receipt, move |tx, r| {
            rehide(tx, queue, r, after(tx.now(), delay), hold)
        })
        .await
    }
}

#[async_trait]
impl QueueStore for SqliteStore {
    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        taskhub_storage::check_messages(self, queue, &messages)?;
        if messages.is_empty() {
            return Ok(());
        }
        self.write(move |tx| enqueue_in(tx, queue, &messages)).await
    }

    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        taskhub_storage::check_dequeue(self, queue, max)?;
        // Losing a dequeue to a power cut only redelivers its messages early: no fsync needed.
        self.write_relaxed(move |tx| dequeue_in(tx, queue, max, visibility))
            .await
    }

    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        self.write_held(queue, receipt, move |tx, r| delete_in(tx, queue, r))
            .await
    }

    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        self.give_back(queue, receipt, delay, Hold::Token(None))
            .await
    }

    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        self.give_back(queue, receipt, delay, Hold::Release).await
    }

    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt> {
        check_queue(queue)?;
        let receipt = receipt.clone();
        self.write(move |tx| {
            let token = tx.next_version();
            let id = parse_receipt(&receipt).map(|(id, _)| id);
            match id {
                Some(id)
                    if rehide(
                        tx,
                        queue,
                        &receipt,
                        after(tx.now(), visibility),
                        Hold::Token(Some(token)),
                    )? =>
                {
                    Ok(make_receipt(id, token))
                }
                _ => Err(expired(queue)),
            }
        })
        .await
    }

    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats> {
        check_queue(queue)?;
        let name = queue_to_sql(queue);
        self.read(move |tx| {
            let (length, oldest): (i64, Option<i64>) = tx
                .prepare_cached(
                    "SELECT COUNT(*), MIN(enqueued_at) FROM queue_messages WHERE queue = ?1",
                )
                .and_then(|mut s| s.query_row([&name], |r| Ok((r.get(0)?, r.get(1)?))))
                .optional()
                .ctx(WHAT)?
                .unwrap_or((0, None));
            Ok(QueueStats {
                length: u64::try_from(length).unwrap_or(0),
                oldest_enqueued_at: oldest
                    .map(|ms| ts_from_sql("enqueue time", ms))
                    .transpose()?,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use rusqlite::{params, Connection, StatementStatus};

    use super::VISIBLE_MESSAGES;
    use crate::options::Durability;
    use crate::schema::{connect, migrate, Role};

    /// How often the dequeue query is re-prepared over five runs with new values.
    fn re_prepares(conn: &Connection) -> i32 {
        let mut stmt = conn.prepare(VISIBLE_MESSAGES).unwrap();
        for n in 1..=5_i64 {
            let mut rows = stmt.query(params![format!("q{n}"), n * 1000, n]).unwrap();
            while rows.next().unwrap().is_some() {}
        }
        stmt.get_status(StatementStatus::RePrepare)
    }

    #[test]
    fn the_dequeue_query_is_not_re_prepared_per_call() {
        let path = std::env::temp_dir().join(format!("taskhub-qpsg-{}.db", std::process::id()));
        let conn = connect(&path, Role::Writer, Durability::Normal, Duration::ZERO).unwrap();
        migrate(
            &conn,
            &path,
            Duration::ZERO,
            taskhub_core::Timestamp::from_millis(0),
        )
        .unwrap();
        assert_eq!(re_prepares(&conn), 0);
        // What the connection's settings avoid (a parse per dequeue), so this test notices if
        // they stop mattering.
        let plain = Connection::open_in_memory().unwrap();
        migrate(
            &plain,
            &path,
            Duration::ZERO,
            taskhub_core::Timestamp::from_millis(0),
        )
        .unwrap();
        assert!(re_prepares(&plain) > 0);
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
