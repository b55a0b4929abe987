//! The process registry: one row per announced process, times on the server's clock.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_storage::{
    ProcessAnnouncement, ProcessKind, ProcessRecord, ProcessStore, StorageError, StorageResult,
};
use tokio_postgres::Row;

use crate::codec::{ts_from_sql, u32_from_sql, NOW_MS};
use crate::errors::PgResultExt;
use crate::schema::latest_version;
use crate::store::PostgresStore;

const WHAT: &str = "process registry";

const COLUMNS: &str =
    "id, kind, host, pid, schema_version, build_version, started_at, heartbeat_at";

fn decode(r: &Row) -> StorageResult<ProcessRecord> {
    Ok(ProcessRecord {
        id: r.get(0),
        kind: ProcessKind::parse(r.get(1))?,
        host: r.get(2),
        pid: u32_from_sql("process pid", r.get(3))?,
        schema_version: u32_from_sql("process schema version", r.get(4))?,
        build_version: r.get(5),
        started_at: ts_from_sql("process start time", r.get(6))?,
        heartbeat_at: ts_from_sql("process heartbeat time", r.get(7))?,
    })
}

/// Every record, ordered by ID (also what a migration checks).
pub(crate) async fn list(client: &impl GenericClient) -> StorageResult<Vec<ProcessRecord>> {
    let rows = client
        .query(&format!("SELECT {COLUMNS} FROM processes ORDER BY id"), &[])
        .await
        .ctx(WHAT)?;
    rows.iter().map(decode).collect()
}

/// This build's schema version as the registry stores it.
fn supported() -> u32 {
    u32::try_from(latest_version()).unwrap_or(u32::MAX)
}

/// The hub's version now (the highest applied migration).
pub(crate) async fn stored(client: &impl GenericClient) -> StorageResult<u32> {
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .ctx("schema version")?;
    u32_from_sql("schema version", row.get(0))
}

#[async_trait]
impl ProcessStore for PostgresStore {
    fn schema_supported(&self) -> u32 {
        supported()
    }

    async fn announce_process(
        &self,
        process: &ProcessAnnouncement,
    ) -> StorageResult<ProcessRecord> {
        let client = self.client().await?;
        let row = client
            .query_one(
                &format!(
                    "INSERT INTO processes ({COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, {NOW_MS}, {NOW_MS})
                     ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, host = EXCLUDED.host,
                         pid = EXCLUDED.pid, schema_version = EXCLUDED.schema_version,
                         build_version = EXCLUDED.build_version,
                         started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at
                     RETURNING {COLUMNS}"
                ),
                &[
                    &process.id,
                    &process.kind.as_str(),
                    &process.host,
                    &i64::from(process.pid),
                    &i64::from(supported()),
                    &process.build_version,
                ],
            )
            .await
            .ctx(WHAT)?;
        decode(&row)
    }

    async fn heartbeat_process(&self, id: &str) -> StorageResult<ProcessRecord> {
        let client = self.client().await?;
        let found = stored(&client).await?;
        if found > supported() {
            return Err(StorageError::NewerSchema {
                what: format!("task hub schema {}", self.schema),
                found,
                supported: supported(),
            });
        }
        let row = client
            .query_opt(
                &format!(
                    "UPDATE processes SET heartbeat_at = {NOW_MS} WHERE id = $1
                     RETURNING {COLUMNS}"
                ),
                &[&id],
            )
            .await
            .ctx(WHAT)?;
        match row {
            Some(row) => decode(&row),
            None => Err(StorageError::NotFound {
                what: format!("process {id:?}"),
            }),
        }
    }

    async fn list_processes(&self) -> StorageResult<Vec<ProcessRecord>> {
        let client = self.client().await?;
        list(&client).await
    }

    async fn forget_process(&self, id: &str) -> StorageResult<bool> {
        let client = self.client().await?;
        let n = client
            .execute("DELETE FROM processes WHERE id = $1", &[&id])
            .await
            .ctx(WHAT)?;
        Ok(n > 0)
    }

    async fn stored_schema(&self) -> StorageResult<u32> {
        let client = self.client().await?;
        stored(&client).await
    }
}
