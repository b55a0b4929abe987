//! The process registry: one row per announced process in the `processes` table (schema
//! v7, which only adds it, so older processes keep working under it), times from the store's
//! clock (the writer's batch time).

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Row};
use taskhub_storage::{
    ProcessAnnouncement, ProcessKind, ProcessRecord, ProcessStore, StorageError, StorageResult,
};

use crate::codec::{ts_from_sql, ts_to_sql, u32_from_sql};
use crate::errors::SqlResultExt;
use crate::schema::{latest_version, user_version};
use crate::store::SqliteStore;

const WHAT: &str = "process registry";

const COLUMNS: &str =
    "id, kind, host, pid, schema_version, build_version, started_at, heartbeat_at";

type RawProcess = (String, String, String, i64, i64, String, i64, i64);

fn raw(r: &Row<'_>) -> rusqlite::Result<RawProcess> {
    RawProcess::try_from(r)
}

fn decode(
    (id, kind, host, pid, schema, build, started, beat): RawProcess,
) -> StorageResult<ProcessRecord> {
    Ok(ProcessRecord {
        id,
        kind: ProcessKind::parse(&kind)?,
        host,
        pid: u32_from_sql("process pid", pid)?,
        schema_version: u32_from_sql("process schema version", schema)?,
        build_version: build,
        started_at: ts_from_sql("process start time", started)?,
        heartbeat_at: ts_from_sql("process heartbeat time", beat)?,
    })
}

/// Every process record, ordered by ID (also what a migration checks).
pub(crate) fn list(conn: &Connection) -> StorageResult<Vec<ProcessRecord>> {
    let raws: Vec<RawProcess> = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM processes ORDER BY id"))
        .and_then(|mut s| s.query_map([], raw)?.collect())
        .ctx(WHAT)?;
    raws.into_iter().map(decode).collect()
}

fn get(conn: &Connection, id: &str) -> StorageResult<Option<ProcessRecord>> {
    let raw = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM processes WHERE id = ?1"))
        .and_then(|mut s| s.query_row([id], raw).optional())
        .ctx(WHAT)?;
    raw.map(decode).transpose()
}

/// `NewerSchema` when the file's version is past this build's.
pub(crate) fn check_version(conn: &Connection, what: &str) -> StorageResult<()> {
    let found = user_version(conn).ctx(what)?;
    if found > latest_version() {
        return Err(StorageError::NewerSchema {
            what: what.to_owned(),
            found,
            supported: latest_version(),
        });
    }
    Ok(())
}

#[async_trait]
impl ProcessStore for SqliteStore {
    fn schema_supported(&self) -> u32 {
        latest_version()
    }

    async fn announce_process(
        &self,
        process: &ProcessAnnouncement,
    ) -> StorageResult<ProcessRecord> {
        let p = process.clone();
        self.write_relaxed(move |tx| {
            let now = tx.now();
            tx.conn
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO processes ({COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)"
                ))
                .and_then(|mut s| {
                    s.execute(params![
                        p.id,
                        p.kind.as_str(),
                        p.host,
                        p.pid,
                        latest_version(),
                        p.build_version,
                        ts_to_sql(now),
                    ])
                })
                .ctx(WHAT)?;
            Ok(ProcessRecord {
                id: p.id.clone(),
                kind: p.kind,
                host: p.host.clone(),
                pid: p.pid,
                schema_version: latest_version(),
                build_version: p.build_version.clone(),
                started_at: now,
                heartbeat_at: now,
            })
        })
        .await
    }

    async fn heartbeat_process(&self, id: &str) -> StorageResult<ProcessRecord> {
        let id = id.to_owned();
        let what = self.describe();
        self.write_relaxed(move |tx| {
            check_version(tx.conn, &what)?;
            let changed = tx
                .conn
                .prepare_cached("UPDATE processes SET heartbeat_at = ?2 WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id, ts_to_sql(tx.now())]))
                .ctx(WHAT)?;
            if changed == 0 {
                return Err(StorageError::NotFound {
                    what: format!("process {id:?}"),
                });
            }
            get(tx.conn, &id)?.ok_or_else(|| StorageError::NotFound {
                what: format!("process {id:?}"),
            })
        })
        .await
    }

    async fn list_processes(&self) -> StorageResult<Vec<ProcessRecord>> {
        self.read(list).await
    }

    async fn forget_process(&self, id: &str) -> StorageResult<bool> {
        let id = id.to_owned();
        self.write_relaxed(move |tx| {
            tx.conn
                .prepare_cached("DELETE FROM processes WHERE id = ?1")
                .and_then(|mut s| s.execute([&id]))
                .map(|n| n > 0)
                .ctx(WHAT)
        })
        .await
    }

    async fn stored_schema(&self) -> StorageResult<u32> {
        self.stored_schema_version().await
    }
}
