//! The partitions table (lease rows, ETag-conditional) and the hub's metadata row.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use taskhub_core::Timestamp;
use taskhub_storage::{ETag, HubInfo, PartitionRow, PartitionStore, StorageError, StorageResult};

use crate::codec::{
    etag_in, etag_out, ts_from_sql, ts_to_sql, u32_from_sql, u64_from_sql, u64_to_sql,
};
use crate::errors::SqlResultExt;
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "partitions";

fn hub(conn: &Connection) -> StorageResult<Option<HubInfo>> {
    let found: Option<(i64, i64, String)> = conn
        .prepare_cached(
            "SELECT partition_count, created_at, prohibited_workers FROM hub WHERE id = 1",
        )
        .and_then(|mut s| {
            s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .ctx("hub info")?;
    found
        .map(|(count, at, prohibited)| {
            Ok(HubInfo {
                partition_count: u32_from_sql("hub partition count", count)?,
                created_at: ts_from_sql("hub creation time", at)?,
                prohibited_workers: serde_json::from_str(&prohibited).map_err(|e| {
                    StorageError::Corrupt {
                        what: "hub prohibited_workers".into(),
                        detail: e.to_string(),
                    }
                })?,
            })
        })
        .transpose()
}

/// The current epoch of a partition, if its row exists.
pub(crate) fn epoch(conn: &Connection, partition: u32) -> StorageResult<Option<u64>> {
    let found: Option<i64> = conn
        .prepare_cached("SELECT epoch FROM partitions WHERE partition = ?1")
        .and_then(|mut s| s.query_row([partition], |r| r.get(0)).optional())
        .ctx(WHAT)?;
    found
        .map(|e| u64_from_sql("partition epoch", e))
        .transpose()
}

fn insert_row(tx: &Tx<'_>, row: &PartitionRow) -> StorageResult<ETag> {
    let epoch = u64_to_sql("epoch", row.epoch)?;
    let turns = u64_to_sql("turns", row.turns)?;
    let doorbell = u64_to_sql("doorbell", row.doorbell)?;
    let etag = tx.next_version();
    tx.conn
        .prepare_cached(
            "INSERT OR REPLACE INTO partitions
                 (partition, owner, next_owner, epoch, draining, retiring, offline, updated_at, etag,
                  turns, doorbell)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut s| {
            s.execute(params![
                row.partition,
                row.owner,
                row.next_owner,
                epoch,
                row.draining,
                row.retiring,
                row.offline,
                ts_to_sql(row.updated_at),
                etag,
                turns,
                doorbell,
            ])
        })
        .ctx(WHAT)?;
    Ok(etag_out(etag))
}

fn create_in(tx: &Tx<'_>, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
    if let Some(existing) = hub(tx.conn)? {
        return Ok(existing);
    }
    tx.conn
        .prepare_cached("INSERT INTO hub (id, partition_count, created_at) VALUES (1, ?1, ?2)")
        .and_then(|mut s| s.execute(params![partition_count, ts_to_sql(now)]))
        .ctx("hub info")?;
    for partition in 0..partition_count {
        let exists = epoch(tx.conn, partition)?.is_some();
        if !exists {
            insert_row(tx, &PartitionRow::unowned(partition, now))?;
        }
    }
    Ok(HubInfo {
        partition_count,
        created_at: now,
        prohibited_workers: Vec::new(),
    })
}

/// Runs `sql`, an `UPDATE` of the hub row with one parameter `value`.
///
/// # Errors
/// `NotFound` when there is no hub row; as the statement otherwise.
fn update_hub(tx: &Tx<'_>, sql: &str, value: impl rusqlite::ToSql) -> StorageResult<()> {
    let n = tx
        .conn
        .prepare_cached(sql)
        .and_then(|mut s| s.execute([value]))
        .ctx("hub info")?;
    if n == 0 {
        return Err(StorageError::NotFound {
            what: "task hub".into(),
        });
    }
    Ok(())
}

type RawPartition = (
    i64,
    Option<String>,
    Option<String>,
    i64,
    bool,
    bool,
    bool,
    i64,
    i64,
    i64,
    i64,
);

fn list(conn: &Connection) -> StorageResult<Vec<PartitionRow>> {
    let raws: Vec<RawPartition> = conn
        .prepare_cached(
            "SELECT partition, owner, next_owner, epoch, draining, retiring, offline, updated_at, etag,
                    turns, doorbell
             FROM partitions ORDER BY partition",
        )
        .and_then(|mut s| {
            s.query_map([], |r| RawPartition::try_from(r))?
            .collect()
        })
        .ctx(WHAT)?;
    raws.into_iter()
        .map(
            |(
                partition,
                owner,
                next_owner,
                epoch,
                draining,
                retiring,
                offline,
                at,
                etag,
                turns,
                doorbell,
            )| {
                Ok(PartitionRow {
                    partition: u32_from_sql("partition number", partition)?,
                    owner,
                    next_owner,
                    epoch: u64_from_sql("partition epoch", epoch)?,
                    draining,
                    retiring,
                    offline,
                    updated_at: ts_from_sql("partition update time", at)?,
                    turns: u64_from_sql("partition turns", turns)?,
                    doorbell: u64_from_sql("partition doorbell", doorbell)?,
                    etag: Some(etag_out(etag)),
                })
            },
        )
        .collect()
}

fn put_in(tx: &Tx<'_>, row: &PartitionRow, expected: Option<&ETag>) -> StorageResult<ETag> {
    let current: Option<i64> = tx
        .conn
        .prepare_cached("SELECT etag FROM partitions WHERE partition = ?1")
        .and_then(|mut s| s.query_row([row.partition], |r| r.get(0)).optional())
        .ctx(WHAT)?;
    let allowed = match (expected, current) {
        (None, None) => true,
        (Some(expected), Some(found)) => etag_in(expected) == Some(found),
        _ => false,
    };
    if !allowed {
        return Err(StorageError::Conflict {
            what: format!("partition {}", row.partition),
        });
    }
    insert_row(tx, row)
}

#[async_trait]
impl PartitionStore for SqliteStore {
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
        taskhub_storage::check_partition_count(partition_count)?;
        self.write(move |tx| create_in(tx, partition_count, now))
            .await
    }

    async fn hub_info(&self) -> StorageResult<Option<HubInfo>> {
        self.read_point(hub).await
    }

    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()> {
        taskhub_storage::check_partition_count(partition_count)?;
        self.write(move |tx| {
            update_hub(
                tx,
                "UPDATE hub SET partition_count = ?1 WHERE id = 1",
                partition_count,
            )
        })
        .await
    }

    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()> {
        let text = serde_json::to_string(&workers)
            .map_err(|e| StorageError::InvalidArgument(format!("prohibited workers: {e}")))?;
        self.write(move |tx| {
            update_hub(
                tx,
                "UPDATE hub SET prohibited_workers = ?1 WHERE id = 1",
                &text,
            )
        })
        .await
    }

    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>> {
        self.read(list).await
    }

    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        taskhub_storage::check_partition(row.partition)?;
        u64_to_sql("epoch", row.epoch)?;
        u64_to_sql("turns", row.turns)?;
        u64_to_sql("doorbell", row.doorbell)?;
        let row = row.clone();
        let expected = expected.cloned();
        self.write(move |tx| put_in(tx, &row, expected.as_ref()))
            .await
    }
}
