//! The partitions table (lease rows, ETag-conditional), the fences (each partition's epoch,
//! apart from the lease row), and the hub's metadata row.
//!
//! A lease write is one statement: the conditional update of the lease row, and, only when
//! it changes the epoch, the update of the partition's fence. A fence update waits for the
//! checkpoints that hold the fence `FOR SHARE` and makes every later one fail its check, so
//! once a new owner's lease is written no stale owner can commit. Renewals, which keep the
//! epoch, never touch the fence and never wait for a checkpoint.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_core::Timestamp;
use taskhub_storage::{ETag, HubInfo, PartitionRow, PartitionStore, StorageError, StorageResult};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::codec::{
    etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql, u64_from_sql, u64_to_sql,
};
use crate::errors::PgResultExt;
use crate::store::PostgresStore;

const WHAT: &str = "partitions";

fn hub_from(r: &Row) -> StorageResult<HubInfo> {
    let prohibited: String = r.get(2);
    Ok(HubInfo {
        partition_count: u32_from_sql("hub partition count", r.get(0))?,
        created_at: ts_from_sql("hub creation time", r.get(1))?,
        prohibited_workers: serde_json::from_str(&prohibited).map_err(|e| {
            StorageError::Corrupt {
                what: "hub prohibited_workers".into(),
                detail: e.to_string(),
            }
        })?,
    })
}

async fn hub(client: &impl GenericClient) -> StorageResult<Option<HubInfo>> {
    let stmt = client
        .prepare_cached(
            "SELECT partition_count, created_at, prohibited_workers FROM hub WHERE id = 1",
        )
        .await
        .ctx("hub info")?;
    let row = client.query_opt(&stmt, &[]).await.ctx("hub info")?;
    row.as_ref().map(hub_from).transpose()
}

const ROW_COLUMNS: &str =
    "partition, owner, next_owner, epoch, draining, retiring, offline, updated_at, turns, doorbell";

fn row_from(r: &Row) -> StorageResult<PartitionRow> {
    Ok(PartitionRow {
        partition: u32_from_sql("partition number", r.get(0))?,
        owner: r.get(1),
        next_owner: r.get(2),
        epoch: u64_from_sql("partition epoch", r.get(3))?,
        draining: r.get(4),
        retiring: r.get(5),
        offline: r.get(6),
        updated_at: ts_from_sql("partition update time", r.get(7))?,
        turns: u64_from_sql("partition turns", r.get(8))?,
        doorbell: u64_from_sql("partition doorbell", r.get(9))?,
        etag: Some(etag_out(r.get(10))),
    })
}

/// Writes a lease row if its ETag is `expected` (`None`: the row must not exist), moving the
/// partition's fence with it when the epoch changes. One statement.
async fn put_in(
    client: &impl GenericClient,
    row: &PartitionRow,
    expected: Option<&ETag>,
) -> StorageResult<ETag> {
    let conflict = || StorageError::Conflict {
        what: format!("partition {}", row.partition),
    };
    let partition = i64::from(row.partition);
    let epoch = u64_to_sql("epoch", row.epoch)?;
    let turns = u64_to_sql("turns", row.turns)?;
    let doorbell = u64_to_sql("doorbell", row.doorbell)?;
    let updated = ts_to_sql(row.updated_at);
    // The version an update is conditional on; none for an insert.
    let version = match expected {
        None => None,
        Some(expected) => Some(etag_in(expected).ok_or_else(conflict)?),
    };
    let sql = if version.is_none() {
        format!(
            "WITH p AS (
                 INSERT INTO partitions ({ROW_COLUMNS}, etag)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, nextval('versions'))
                 ON CONFLICT (partition) DO NOTHING
                 RETURNING etag, epoch),
             f AS (
                 INSERT INTO fences (partition, epoch) SELECT $1, epoch FROM p
                 ON CONFLICT (partition) DO UPDATE SET epoch = excluded.epoch)
             SELECT etag FROM p"
        )
    } else {
        "WITH p AS (
             UPDATE partitions SET owner = $2, next_owner = $3, epoch = $4,
                 draining = $5, retiring = $6, offline = $7, updated_at = $8,
                 turns = $9, doorbell = $10, etag = nextval('versions')
             WHERE partition = $1 AND etag = $11
             RETURNING etag, epoch),
         f AS (
             UPDATE fences SET epoch = p.epoch FROM p
             WHERE fences.partition = $1 AND fences.epoch <> p.epoch)
         SELECT etag FROM p"
            .to_owned()
    };
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &partition,
        &row.owner,
        &row.next_owner,
        &epoch,
        &row.draining,
        &row.retiring,
        &row.offline,
        &updated,
        &turns,
        &doorbell,
    ];
    if let Some(version) = &version {
        params.push(version);
    }
    let stmt = client.prepare_cached(&sql).await.ctx(WHAT)?;
    let found = client.query_opt(&stmt, &params).await.ctx(WHAT)?;
    match found {
        Some(r) => Ok(etag_out(r.get(0))),
        None => Err(conflict()),
    }
}

#[async_trait]
impl PartitionStore for PostgresStore {
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
        taskhub_storage::check_partition_count(partition_count)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx("hub info")?;
        let stmt = tx
            .prepare_cached(
                "INSERT INTO hub (id, partition_count, created_at) VALUES (1, $1, $2)
                 ON CONFLICT (id) DO NOTHING RETURNING id",
            )
            .await
            .ctx("hub info")?;
        let inserted = tx
            .query_opt(&stmt, &[&i64::from(partition_count), &ts_to_sql(now)])
            .await
            .ctx("hub info")?;
        if inserted.is_none() {
            let existing = hub(&tx).await?;
            tx.commit().await.ctx("hub info")?;
            return existing.ok_or_else(|| StorageError::NotFound {
                what: "task hub".into(),
            });
        }
        for partition in 0..partition_count {
            let row = PartitionRow::unowned(partition, now);
            match put_in(&tx, &row, None).await {
                Ok(_) | Err(StorageError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        tx.commit().await.ctx("hub info")?;
        Ok(HubInfo {
            partition_count,
            created_at: now,
            prohibited_workers: Vec::new(),
        })
    }

    async fn hub_info(&self) -> StorageResult<Option<HubInfo>> {
        let client = self.client().await?;
        hub(&client).await
    }

    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()> {
        taskhub_storage::check_partition_count(partition_count)?;
        let (client, stmt) = self
            .prepared(
                "hub info",
                "UPDATE hub SET partition_count = $1 WHERE id = 1",
            )
            .await?;
        let n = client
            .execute(&stmt, &[&i64::from(partition_count)])
            .await
            .ctx("hub info")?;
        if n == 0 {
            return Err(StorageError::NotFound {
                what: "task hub".into(),
            });
        }
        Ok(())
    }

    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()> {
        let text = serde_json::to_string(&workers)
            .map_err(|e| StorageError::InvalidArgument(format!("prohibited workers: {e}")))?;
        let (client, stmt) = self
            .prepared(
                "hub info",
                "UPDATE hub SET prohibited_workers = $1 WHERE id = 1",
            )
            .await?;
        let n = client.execute(&stmt, &[&text]).await.ctx("hub info")?;
        if n == 0 {
            return Err(StorageError::NotFound {
                what: "task hub".into(),
            });
        }
        Ok(())
    }

    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>> {
        let sql = format!("SELECT {ROW_COLUMNS}, etag FROM partitions ORDER BY partition");
        let (client, stmt) = self.prepared(WHAT, &sql).await?;
        let rows = client.query(&stmt, &[]).await.ctx(WHAT)?;
        rows.iter().map(row_from).collect()
    }

    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        taskhub_storage::check_partition(row.partition)?;
        let client = self.client().await?;
        put_in(&client, row, expected).await
    }
}
