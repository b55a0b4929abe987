//! The `<Hub>Partitions` table: PartitionKey `hub`, the info row `info` and one lease row
//! `partition-NN` per partition, so that creating a hub is one entity-group batch.

use async_trait::async_trait;
use taskhub_core::Timestamp;
use taskhub_storage::{
    ETag, HubInfo, LeaseTable, PartitionRow, PartitionStore, StorageError, StorageResult,
    MAX_PARTITIONS,
};

use crate::store::{num, parse_num, AzureStore};
use crate::tables::{entity, lit, BatchOp, Row};

const PK: &str = "hub";
const INFO: &str = "info";

fn partition_key(p: u32) -> String {
    format!("partition-{p:02}")
}

fn flag(b: bool) -> String {
    b.to_string()
}

fn info_entity(info: &HubInfo, layout: u32) -> crate::tables::Entity {
    entity(
        PK,
        INFO,
        &[
            ("Layout", num(u64::from(layout))),
            ("PartitionCount", info.partition_count.to_string()),
            ("CreatedAt", num(info.created_at.as_millis())),
            (
                "Prohibited",
                serde_json::to_string(&info.prohibited_workers).unwrap_or_default(),
            ),
        ],
    )
}

fn parse_info(row: &Row) -> StorageResult<HubInfo> {
    let what = "hub info";
    Ok(HubInfo {
        partition_count: u32::try_from(parse_num(row.str("PartitionCount"), what)?)
            .map_err(|_| corrupt(what))?,
        created_at: Timestamp::from_millis(parse_num(row.str("CreatedAt"), what)?),
        prohibited_workers: serde_json::from_str(row.str("Prohibited"))
            .map_err(|_| corrupt(what))?,
    })
}

fn corrupt(what: &str) -> StorageError {
    StorageError::Corrupt {
        what: what.to_owned(),
        detail: "a property is missing or malformed".to_owned(),
    }
}

pub(crate) fn partition_entity(row: &PartitionRow) -> crate::tables::Entity {
    entity(
        PK,
        &partition_key(row.partition),
        &[
            ("Owner", row.owner.clone().unwrap_or_default()),
            ("NextOwner", row.next_owner.clone().unwrap_or_default()),
            ("Epoch", num(row.epoch)),
            ("Draining", flag(row.draining)),
            ("Retiring", flag(row.retiring)),
            ("Offline", flag(row.offline)),
            ("UpdatedAt", num(row.updated_at.as_millis())),
            ("Turns", num(row.turns)),
            ("Doorbell", num(row.doorbell)),
        ],
    )
}

pub(crate) fn parse_partition(row: &Row) -> StorageResult<PartitionRow> {
    let what = format!("partition row {}", row.str("RowKey"));
    let partition = row
        .str("RowKey")
        .strip_prefix("partition-")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| corrupt(&what))?;
    let opt = |k: &str| Some(row.str(k).to_owned()).filter(|s| !s.is_empty());
    Ok(PartitionRow {
        partition,
        owner: opt("Owner"),
        next_owner: opt("NextOwner"),
        epoch: parse_num(row.str("Epoch"), &what)?,
        draining: row.str("Draining") == "true",
        retiring: row.str("Retiring") == "true",
        offline: row.str("Offline") == "true",
        updated_at: Timestamp::from_millis(parse_num(row.str("UpdatedAt"), &what)?),
        // Rows written before the count existed have none.
        turns: match row.str("Turns") {
            "" => 0,
            n => parse_num(n, &what)?,
        },
        // Likewise the doorbell.
        doorbell: match row.str("Doorbell") {
            "" => 0,
            n => parse_num(n, &what)?,
        },
        etag: Some(ETag(row.etag.clone())),
    })
}

impl AzureStore {
    /// Refuses a hub of a newer layout (`NewerSchema`); brings an older one to this build's,
    /// refusing (`OlderProcesses`) while a process of an older build announced in the
    /// registry is alive. Layout 1 (before the registry) to 2 only adds the registry's rows,
    /// which older builds never read, so it goes ahead at once.
    pub(crate) async fn check_layout(&self) -> StorageResult<()> {
        let Some(row) = self.tables.get(&self.names.partitions, PK, INFO).await? else {
            return Ok(());
        };
        let found = crate::processes::layout_of(&row)?;
        let supported = crate::processes::AZURE_LAYOUT_VERSION;
        let what = format!("Azure task hub {}", self.hub);
        if found > supported {
            return Err(StorageError::NewerSchema {
                what,
                found,
                supported,
            });
        }
        if found == supported {
            return Ok(());
        }
        if found >= crate::processes::HAS_PROCESS_REGISTRY {
            let records = self.process_records().await?;
            taskhub_storage::refuse_older_processes(&what, supported, &records, self.clock.now())?;
        }
        let layout = entity(PK, INFO, &[("Layout", num(u64::from(supported)))]);
        match self
            .tables
            .merge(&self.names.partitions, &layout, Some(&row.etag))
            .await
        {
            // Someone else changed the row (another opener upgraded it, or a renewal of the
            // info): look again.
            Err(StorageError::Conflict { .. }) => Box::pin(self.check_layout()).await,
            other => other.map(|_| ()),
        }
    }

    /// The current lease row of one partition (the checkpoint's fence read).
    pub(crate) async fn partition_row(
        &self,
        partition: u32,
    ) -> StorageResult<Option<PartitionRow>> {
        // The lease client's short bound: a fence read that hangs would widen the window between
        // the epoch it saw and the commit it guards (docs/OPERATIONS.md, "Scale-out").
        let row = self
            .lease_tables
            .get(&self.names.partitions, PK, &partition_key(partition))
            .await?;
        row.as_ref().map(parse_partition).transpose()
    }

    /// The hub's info row.
    ///
    /// # Errors
    /// `NotFound` if there is no hub.
    pub(crate) async fn info_row(&self) -> StorageResult<Row> {
        self.tables
            .get(&self.names.partitions, PK, INFO)
            .await?
            .ok_or_else(|| StorageError::NotFound {
                what: "task hub".to_owned(),
            })
    }

    /// Changes the info row with a read + ETag-conditional replace, retried on conflicts.
    async fn update_info(&self, change: impl Fn(&mut HubInfo)) -> StorageResult<()> {
        loop {
            let row = self.info_row().await?;
            let mut info = parse_info(&row)?;
            change(&mut info);
            // The layout stays what it is (a newer build's, too).
            let layout = crate::processes::layout_of(&row)?;
            match self
                .tables
                .replace(
                    &self.names.partitions,
                    &info_entity(&info, layout),
                    Some(&row.etag),
                )
                .await
            {
                Err(StorageError::Conflict { .. }) => {}
                other => return other.map(|_| ()),
            }
        }
    }
}

#[async_trait]
impl PartitionStore for AzureStore {
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
        taskhub_storage::check_partition_count(partition_count)?;
        if let Some(info) = self.hub_info().await? {
            return Ok(info);
        }
        let info = HubInfo {
            partition_count,
            created_at: now,
            prohibited_workers: Vec::new(),
        };
        let mut ops = vec![BatchOp::Insert(info_entity(
            &info,
            crate::processes::AZURE_LAYOUT_VERSION,
        ))];
        for p in 0..partition_count {
            ops.push(BatchOp::Insert(partition_entity(&PartitionRow::unowned(
                p, now,
            ))));
        }
        match self.tables.batch(&self.names.partitions, &ops).await {
            Ok(_) => Ok(info),
            Err(StorageError::Conflict { .. }) => {
                self.hub_info()
                    .await?
                    .ok_or_else(|| StorageError::Conflict {
                        what: "task hub creation".to_owned(),
                    })
            }
            Err(e) => Err(e),
        }
    }

    async fn hub_info(&self) -> StorageResult<Option<HubInfo>> {
        let row = self.tables.get(&self.names.partitions, PK, INFO).await?;
        row.as_ref().map(parse_info).transpose()
    }

    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()> {
        taskhub_storage::check_partition_count(partition_count)?;
        self.update_info(|info| info.partition_count = partition_count)
            .await
    }

    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()> {
        self.update_info(|info| info.prohibited_workers.clone_from(&workers))
            .await
    }

    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>> {
        let filter = format!(
            "PartitionKey eq {} and RowKey gt {} and RowKey lt {}",
            lit(PK),
            lit("partition-"),
            lit("partition.")
        );
        let rows = self
            .lease_tables
            .query_all(&self.names.partitions, &filter)
            .await?;
        let mut out = rows
            .iter()
            .map(parse_partition)
            .collect::<StorageResult<Vec<_>>>()?;
        out.sort_by_key(|r| r.partition);
        Ok(out)
    }

    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        taskhub_storage::check_partition(row.partition)?;
        let e = partition_entity(row);
        let etag = match expected {
            Some(etag) => {
                self.lease_tables
                    .replace(&self.names.partitions, &e, Some(&etag.0))
                    .await?
            }
            None => self.lease_tables.insert(&self.names.partitions, &e).await?,
        };
        Ok(ETag(etag))
    }

    /// One query of the table partition `hub`: the info row and every lease row.
    async fn lease_table(&self) -> StorageResult<LeaseTable> {
        let filter = format!("PartitionKey eq {}", lit(PK));
        let rows = self
            .lease_tables
            .query_all(&self.names.partitions, &filter)
            .await?;
        let mut table = LeaseTable {
            info: None,
            rows: Vec::new(),
        };
        for row in &rows {
            match row.str("RowKey") {
                INFO => table.info = Some(parse_info(row)?),
                key if key.starts_with("partition-") => table.rows.push(parse_partition(row)?),
                _ => {}
            }
        }
        table.rows.sort_by_key(|r| r.partition);
        Ok(table)
    }

    /// One entity-group transaction of ETag-conditional replaces (the rows share the
    /// PartitionKey `hub`). If it fails, the rows are written each on its own, all at once:
    /// after a conflict nothing was written, and this learns which row conflicted; after a
    /// failure without an answer (a request that hung until [`LEASE_REQUEST_TIMEOUT`], a
    /// 5xx) the batch may or may not have been applied (a row it renewed then conflicts, and
    /// the lease manager re-reads it), and one row's trouble does not hold up the renewal
    /// of the others.
    ///
    /// [`LEASE_REQUEST_TIMEOUT`]: crate::LEASE_REQUEST_TIMEOUT
    async fn renew_partitions(
        &self,
        writes: &[(PartitionRow, ETag)],
    ) -> StorageResult<Vec<StorageResult<ETag>>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        if let Some((row, _)) = writes.iter().find(|(r, _)| r.partition >= MAX_PARTITIONS) {
            return Err(StorageError::InvalidArgument(format!(
                "no partition {}: a hub has at most {MAX_PARTITIONS}",
                row.partition
            )));
        }
        let ops: Vec<BatchOp> = writes
            .iter()
            .map(|(row, etag)| BatchOp::Replace(partition_entity(row), etag.0.clone()))
            .collect();
        match self.lease_tables.batch(&self.names.partitions, &ops).await {
            Ok(etags) => Ok(etags.into_iter().map(|e| Ok(ETag(e))).collect()),
            Err(e) if e.is_conflict() || e.is_retryable() => {
                if !e.is_conflict() {
                    tracing::debug!(error = %e, "lease renewal batch failed; renewing each row on its own");
                }
                let each = writes
                    .iter()
                    .map(|(row, etag)| self.put_partition(row, Some(etag)));
                Ok(futures_util::future::join_all(each).await)
            }
            Err(e) => Err(e),
        }
    }
}
