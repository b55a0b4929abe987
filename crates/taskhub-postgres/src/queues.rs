//! Queues with visibility timeouts, in `queue_messages`, on the server's clock.
//!
//! A receipt is `"{message id}:{token}"`, the token a fresh value of the `versions` sequence
//! written into the row at each dequeue or extend; re-dequeue, abandon, release and extend
//! replace it, so an older receipt matches nothing. A dequeue claims its rows with
//! `FOR UPDATE SKIP LOCKED`: competing workers never wait for each other.

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_core::Timestamp;
use taskhub_storage::{
    Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore, Receipt, StorageResult,
};
use tokio_postgres::types::ToSql;

use crate::codec::{check_queue, ms, queue_to_sql, ts_from_sql, u32_from_sql, NOW_MS};
use crate::errors::PgResultExt;
use crate::store::PostgresStore;

const WHAT: &str = "queue messages";

/// Messages to insert, as three parallel arrays (one statement for any number).
#[derive(Default)]
pub(crate) struct Inserts {
    queues: Vec<i64>,
    bodies: Vec<String>,
    delays: Vec<i64>,
}

impl Inserts {
    pub(crate) fn push(&mut self, queue: QueueName, message: &NewQueueMessage) {
        self.queues.push(queue_to_sql(queue));
        self.bodies.push(message.body.clone());
        self.delays.push(ms(message.delay));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Inserts them all, visible after their delays.
    pub(crate) async fn run(&self, client: &impl GenericClient) -> StorageResult<()> {
        if self.is_empty() {
            return Ok(());
        }
        let stmt = client.prepare_cached(&inserts_sql()).await.ctx(WHAT)?;
        client
            .execute(&stmt, &[&self.queues, &self.bodies, &self.delays])
            .await
            .ctx(WHAT)?;
        Ok(())
    }
}

/// The statement of [`Inserts::run`].
pub(crate) fn inserts_sql() -> String {
    format!(
        "INSERT INTO queue_messages (queue, body, visible_at, dequeue_count, enqueued_at)
         SELECT q, b, {NOW_MS} + d, 0, {NOW_MS}
         FROM unnest($1::bigint[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(q, b, d, i)
         ORDER BY i"
    )
}

/// A dequeue: claims up to `$2` visible messages of queue `$1` (skipping rows other
/// dequeues hold) and hides them for `$3` ms.
pub(crate) fn dequeue_sql() -> String {
    format!(
        "WITH c AS (
             SELECT id FROM queue_messages
             WHERE queue = $1 AND visible_at <= {NOW_MS}
             ORDER BY visible_at, id LIMIT $2
             FOR UPDATE SKIP LOCKED)
         UPDATE queue_messages m
         SET visible_at = {NOW_MS} + $3, dequeue_count = m.dequeue_count + 1,
             receipt = nextval('versions')
         FROM c WHERE m.id = c.id
         RETURNING m.id, m.receipt, m.body, m.dequeue_count, m.enqueued_at"
    )
}

/// The statement of [`enqueue_claimed`].
pub(crate) fn claimed_sql() -> String {
    format!(
        "INSERT INTO queue_messages (queue, body, visible_at, dequeue_count, enqueued_at, receipt)
         VALUES ($1, $2, {NOW_MS} + $3, 1, {NOW_MS}, nextval('versions'))
         RETURNING id, receipt, enqueued_at"
    )
}

/// The statement of [`delete_many`].
pub(crate) const DELETE_MANY_SQL: &str = "DELETE FROM queue_messages m
     USING unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(id, receipt, queue)
     WHERE m.id = t.id AND m.receipt = t.receipt AND m.queue = t.queue";

/// Inserts one message as held by its sender for `visibility`: a claim, counted as its first
/// delivery, returned with its receipt.
pub(crate) async fn enqueue_claimed(
    client: &impl GenericClient,
    queue: QueueName,
    message: &NewQueueMessage,
    visibility: Duration,
) -> StorageResult<Dequeued> {
    let stmt = client.prepare_cached(&claimed_sql()).await.ctx(WHAT)?;
    let row = client
        .query_one(
            &stmt,
            &[&queue_to_sql(queue), &message.body, &ms(visibility)],
        )
        .await
        .ctx(WHAT)?;
    Ok(Dequeued {
        receipt: make_receipt(row.get(0), row.get(1)),
        body: message.body.clone(),
        dequeue_count: 1,
        enqueued_at: ts_from_sql("enqueue time", row.get(2))?,
    })
}

/// Deletes messages by receipt, ignoring stale ones; returns how many it deleted.
pub(crate) async fn delete_many(
    client: &impl GenericClient,
    receipts: &[(QueueName, Receipt)],
) -> StorageResult<u64> {
    let mut ids = Vec::with_capacity(receipts.len());
    let mut tokens = Vec::with_capacity(receipts.len());
    let mut queues = Vec::with_capacity(receipts.len());
    for (queue, receipt) in receipts {
        if let Some((id, token)) = parse_receipt(receipt) {
            ids.push(id);
            tokens.push(token);
            queues.push(queue_to_sql(*queue));
        }
    }
    if ids.is_empty() {
        return Ok(0);
    }
    let stmt = client.prepare_cached(DELETE_MANY_SQL).await.ctx(WHAT)?;
    client
        .execute(&stmt, &[&ids, &tokens, &queues])
        .await
        .ctx(WHAT)
}

/// Deletes the message a receipt names; false if the receipt is stale.
pub(crate) async fn delete_one(
    client: &impl GenericClient,
    queue: QueueName,
    receipt: &Receipt,
) -> StorageResult<bool> {
    let Some((id, token)) = parse_receipt(receipt) else {
        return Ok(false);
    };
    let stmt = client
        .prepare_cached("DELETE FROM queue_messages WHERE id = $1 AND receipt = $2 AND queue = $3")
        .await
        .ctx(WHAT)?;
    let n = client
        .execute(&stmt, &[&id, &token, &queue_to_sql(queue)])
        .await
        .ctx(WHAT)?;
    Ok(n > 0)
}

pub(crate) use taskhub_storage::queue::receipt_expired as expired;
pub(crate) use taskhub_storage::sql::codec::{
    receipt_in as parse_receipt, receipt_out as make_receipt,
};

impl PostgresStore {
    /// Gives a held message back under `set` (visible again after `delay`), waking this
    /// process's pollers when it is visible at once.
    async fn give_back(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        set: &str,
        delay: Duration,
    ) -> StorageResult<()> {
        match self
            .update_held(queue, receipt, set, Some(ms(delay)))
            .await?
        {
            Some(_) => {
                if delay.is_zero() {
                    self.announce(queue);
                }
                Ok(())
            }
            None => Err(expired(queue)),
        }
    }

    /// Runs one statement that updates the row a receipt names; true if it matched.
    async fn update_held(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        set: &str,
        extra: Option<i64>,
    ) -> StorageResult<Option<i64>> {
        check_queue(queue)?;
        let Some((id, token)) = parse_receipt(receipt) else {
            return Ok(None);
        };
        let sql = format!(
            "UPDATE queue_messages SET {set}
             WHERE id = $1 AND receipt = $2 AND queue = $3 RETURNING COALESCE(receipt, 0)"
        );
        let client = self.client().await?;
        let stmt = client.prepare_cached(&sql).await.ctx(WHAT)?;
        let q = queue_to_sql(queue);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id, &token, &q];
        let extra = extra.unwrap_or(0);
        if set.contains("$4") {
            params.push(&extra);
        }
        let row = client.query_opt(&stmt, &params).await.ctx(WHAT)?;
        Ok(row.map(|r| r.get(0)))
    }
}

#[async_trait]
impl QueueStore for PostgresStore {
    /// The server's `statement_timestamp()`, the clock every visibility and delay runs on.
    async fn server_now(&self) -> StorageResult<Option<Timestamp>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!("SELECT {NOW_MS}"))
            .await
            .ctx("server time")?;
        let row = client.query_one(&stmt, &[]).await.ctx("server time")?;
        ts_from_sql("server time", row.get(0)).map(Some)
    }

    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        taskhub_storage::check_messages(self, queue, &messages)?;
        let mut inserts = Inserts::default();
        for m in &messages {
            inserts.push(queue, m);
        }
        let client = self.client().await?;
        inserts.run(&client).await?;
        if messages.iter().any(|m| m.delay.is_zero()) {
            self.announce(queue);
        }
        Ok(())
    }

    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        taskhub_storage::check_dequeue(self, queue, max)?;
        let sql = dequeue_sql();
        let client = self.client().await?;
        let stmt = client.prepare_cached(&sql).await.ctx(WHAT)?;
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = client
            .query(&stmt, &[&queue_to_sql(queue), &limit, &ms(visibility)])
            .await
            .ctx(WHAT)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push((
                r.get::<_, i64>(0),
                Dequeued {
                    receipt: make_receipt(r.get(0), r.get(1)),
                    body: r.get(2),
                    dequeue_count: u32_from_sql("dequeue count", r.get(3))?,
                    enqueued_at: ts_from_sql("enqueue time", r.get(4))?,
                },
            ));
        }
        out.sort_by_key(|(id, _)| *id);
        Ok(out.into_iter().map(|(_, d)| d).collect())
    }

    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        check_queue(queue)?;
        let client = self.client().await?;
        if delete_one(&client, queue, receipt).await? {
            Ok(())
        } else {
            Err(expired(queue))
        }
    }

    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        let set = format!("visible_at = {NOW_MS} + $4, receipt = NULL");
        self.give_back(queue, receipt, &set, delay).await
    }

    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        let set = format!(
            "visible_at = {NOW_MS} + $4, receipt = NULL,
             dequeue_count = GREATEST(dequeue_count - 1, 0)"
        );
        self.give_back(queue, receipt, &set, delay).await
    }

    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt> {
        let set = format!("visible_at = {NOW_MS} + $4, receipt = nextval('versions')");
        let id = parse_receipt(receipt).map(|(id, _)| id);
        match (
            id,
            self.update_held(queue, receipt, &set, Some(ms(visibility)))
                .await?,
        ) {
            (Some(id), Some(token)) => Ok(make_receipt(id, token)),
            _ => Err(expired(queue)),
        }
    }

    fn delay_granularity(&self) -> Duration {
        Duration::from_millis(1)
    }

    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats> {
        check_queue(queue)?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT COUNT(*), MIN(enqueued_at) FROM queue_messages WHERE queue = $1",
            )
            .await
            .ctx(WHAT)?;
        let row = client
            .query_one(&stmt, &[&queue_to_sql(queue)])
            .await
            .ctx(WHAT)?;
        let length: i64 = row.get(0);
        let oldest: Option<i64> = row.get(1);
        Ok(QueueStats {
            length: u64::try_from(length).unwrap_or(0),
            oldest_enqueued_at: oldest
                .map(|ms| ts_from_sql("enqueue time", ms))
                .transpose()?,
        })
    }
}
