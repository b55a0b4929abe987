//! The dead-letter store: poison messages kept for inspection and replay. IDs are the
//! table's increasing serial IDs, so "oldest first" is ID order.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_storage::sql::codec::dead_letter_id;
use taskhub_storage::{DeadLetter, DeadLetterStore, QueueName, Receipt, StorageResult};
use tokio_postgres::Row;

use crate::codec::{
    check_queue, queue_from_sql, queue_to_sql, ts_from_sql, ts_to_sql, u32_from_sql,
};
use crate::errors::PgResultExt;
use crate::queues::{delete_one, expired};
use crate::store::PostgresStore;

const WHAT: &str = "dead letters";

const COLUMNS: &str = "id, queue, body, reason, dequeue_count, dead_lettered_at";

fn decode(r: &Row) -> StorageResult<DeadLetter> {
    Ok(DeadLetter {
        id: r.get::<_, i64>(0).to_string(),
        queue: queue_from_sql(r.get(1))?,
        body: r.get(2),
        reason: r.get(3),
        dequeue_count: u32_from_sql("dead letter dequeue count", r.get(4))?,
        dead_lettered_at: ts_from_sql("dead letter time", r.get(5))?,
    })
}

/// Inserts a letter and returns its ID.
async fn insert(client: &impl GenericClient, letter: &DeadLetter) -> StorageResult<String> {
    let stmt = client
        .prepare_cached(
            "INSERT INTO dead_letters (queue, body, reason, dequeue_count, dead_lettered_at)
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .await
        .ctx(WHAT)?;
    let row = client
        .query_one(
            &stmt,
            &[
                &queue_to_sql(letter.queue),
                &letter.body,
                &letter.reason,
                &i64::from(letter.dequeue_count),
                &ts_to_sql(letter.dead_lettered_at),
            ],
        )
        .await
        .ctx(WHAT)?;
    Ok(row.get::<_, i64>(0).to_string())
}

#[async_trait]
impl DeadLetterStore for PostgresStore {
    async fn add_dead_letter(&self, letter: DeadLetter) -> StorageResult<String> {
        check_queue(letter.queue)?;
        let client = self.client().await?;
        insert(&client, &letter).await
    }

    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        letter: DeadLetter,
    ) -> StorageResult<String> {
        check_queue(queue)?;
        let letter = DeadLetter { queue, ..letter };
        let mut client = self.client().await?;
        // One transaction: the delete decides (a stale receipt stores nothing).
        let tx = client.transaction().await.ctx(WHAT)?;
        if !delete_one(&tx, queue, receipt).await? {
            return Err(expired(queue));
        }
        let id = insert(&tx, &letter).await?;
        tx.commit().await.ctx(WHAT)?;
        Ok(id)
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
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!("SELECT {COLUMNS} FROM dead_letters WHERE id > $1 ORDER BY id LIMIT $2");
        let (client, stmt) = self.prepared(WHAT, &sql).await?;
        let rows = client.query(&stmt, &[&after, &limit]).await.ctx(WHAT)?;
        rows.iter().map(decode).collect()
    }

    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>> {
        let Ok(id) = dead_letter_id(id) else {
            return Ok(None);
        };
        let sql = format!("DELETE FROM dead_letters WHERE id = $1 RETURNING {COLUMNS}");
        let (client, stmt) = self.prepared(WHAT, &sql).await?;
        let row = client.query_opt(&stmt, &[&id]).await.ctx(WHAT)?;
        row.as_ref().map(decode).transpose()
    }
}
