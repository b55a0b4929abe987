//! The process registry: rows of the `<Hub>Partitions` table under PartitionKey `process`,
//! RowKey = the process ID, times from the store's clock. The hub's layout version is the
//! info row's `Layout` property (missing: version 1, the layout before the registry).

use async_trait::async_trait;
use taskhub_core::Timestamp;
use taskhub_storage::{
    ProcessAnnouncement, ProcessKind, ProcessRecord, ProcessStore, StorageError, StorageResult,
};

use crate::store::{num, parse_num, AzureStore};
use crate::tables::{entity, lit, Row};

const PK: &str = "process";

/// The layout version this build writes: 2 brings the process registry.
pub const AZURE_LAYOUT_VERSION: u32 = 2;

/// The layout that brings the registry: from it on, an upgrade can see older processes.
pub(crate) const HAS_PROCESS_REGISTRY: u32 = 2;

/// The layout of a hub whose info row has no `Layout` (written before layout versions).
const FIRST_LAYOUT: u32 = 1;

/// The layout version an info row records.
pub(crate) fn layout_of(info: &Row) -> StorageResult<u32> {
    match info.str("Layout") {
        "" => Ok(FIRST_LAYOUT),
        text => u32::try_from(parse_num(text, "hub layout version")?).map_err(|_| {
            StorageError::Corrupt {
                what: "hub info".into(),
                detail: format!("layout version {text} out of range"),
            }
        }),
    }
}

fn check_id(id: &str) -> StorageResult<()> {
    if id.is_empty() || id.len() > 200 || id.chars().any(|c| "/\\#?".contains(c) || c.is_control())
    {
        return Err(StorageError::InvalidArgument(format!(
            "process ID {id:?}: 1 to 200 characters, none of / \\ # ? or control characters"
        )));
    }
    Ok(())
}

fn decode(row: &Row) -> StorageResult<ProcessRecord> {
    let what = format!("process {}", row.str("RowKey"));
    let small = |name: &str| -> StorageResult<u32> {
        u32::try_from(parse_num(row.str(name), &what)?).map_err(|_| StorageError::Corrupt {
            what: what.clone(),
            detail: format!("{name} out of range"),
        })
    };
    Ok(ProcessRecord {
        id: row.str("RowKey").to_owned(),
        kind: ProcessKind::parse(row.str("Kind"))?,
        host: row.str("Host").to_owned(),
        pid: small("Pid")?,
        schema_version: small("Schema")?,
        build_version: row.str("Build").to_owned(),
        started_at: Timestamp::from_millis(parse_num(row.str("StartedAt"), &what)?),
        heartbeat_at: Timestamp::from_millis(parse_num(row.str("HeartbeatAt"), &what)?),
    })
}

fn encode(r: &ProcessRecord) -> crate::tables::Entity {
    entity(
        PK,
        &r.id,
        &[
            ("Kind", r.kind.as_str().to_owned()),
            ("Host", r.host.clone()),
            ("Pid", num(u64::from(r.pid))),
            ("Schema", num(u64::from(r.schema_version))),
            ("Build", r.build_version.clone()),
            ("StartedAt", num(r.started_at.as_millis())),
            ("HeartbeatAt", num(r.heartbeat_at.as_millis())),
        ],
    )
}

impl AzureStore {
    /// Every process record, ordered by ID.
    pub(crate) async fn process_records(&self) -> StorageResult<Vec<ProcessRecord>> {
        let rows = self
            .tables
            .query_all(
                &self.names.partitions,
                &format!("PartitionKey eq {}", lit(PK)),
            )
            .await?;
        let mut records = rows.iter().map(decode).collect::<StorageResult<Vec<_>>>()?;
        records.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(records)
    }

    fn what(&self) -> String {
        format!("Azure task hub {}", self.hub)
    }
}

#[async_trait]
impl ProcessStore for AzureStore {
    fn schema_supported(&self) -> u32 {
        AZURE_LAYOUT_VERSION
    }

    async fn announce_process(
        &self,
        process: &ProcessAnnouncement,
    ) -> StorageResult<ProcessRecord> {
        check_id(&process.id)?;
        let now = self.clock.now();
        let record = ProcessRecord {
            id: process.id.clone(),
            kind: process.kind,
            host: process.host.clone(),
            pid: process.pid,
            schema_version: AZURE_LAYOUT_VERSION,
            build_version: process.build_version.clone(),
            started_at: now,
            heartbeat_at: now,
        };
        self.tables
            .replace(&self.names.partitions, &encode(&record), None)
            .await?;
        Ok(record)
    }

    async fn heartbeat_process(&self, id: &str) -> StorageResult<ProcessRecord> {
        check_id(id)?;
        taskhub_storage::check_schema(self, &self.what()).await?;
        let not_found = || StorageError::NotFound {
            what: format!("process {id:?}"),
        };
        let row = self
            .tables
            .get(&self.names.partitions, PK, id)
            .await?
            .ok_or_else(not_found)?;
        let mut record = decode(&row)?;
        record.heartbeat_at = self.clock.now();
        match self
            .tables
            .replace(&self.names.partitions, &encode(&record), Some(&row.etag))
            .await
        {
            Ok(_) => Ok(record),
            // Forgotten meanwhile (or renewed by a twin: the newer write stands).
            Err(StorageError::Conflict { .. }) => Err(not_found()),
            Err(e) => Err(e),
        }
    }

    async fn list_processes(&self) -> StorageResult<Vec<ProcessRecord>> {
        self.process_records().await
    }

    async fn forget_process(&self, id: &str) -> StorageResult<bool> {
        check_id(id)?;
        self.tables.delete(&self.names.partitions, PK, id).await
    }

    async fn stored_schema(&self) -> StorageResult<u32> {
        match self
            .tables
            .get(&self.names.partitions, "hub", "info")
            .await?
        {
            Some(info) => layout_of(&info),
            None => Ok(AZURE_LAYOUT_VERSION),
        }
    }
}
