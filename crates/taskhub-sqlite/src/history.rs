//! The history table: a sentinel row per instance (`histories`: current execution, ETag, event
//! count) and one row per event (`history_events`), encoded with the versioned core format.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use taskhub_core::format::{decode_event, encode_event};
use taskhub_core::{ExecutionId, InstanceId};
use taskhub_storage::{
    ETag, HistorySnapshot, HistoryStore, HistoryWrite, StorageError, StorageResult,
};

use crate::codec::{etag_in, etag_out};
use crate::errors::{corrupt, SqlResultExt};
use crate::store::SqliteStore;
use crate::writer::Tx;

const WHAT: &str = "history";

/// The sentinel row of an instance's history.
pub(crate) struct Sentinel {
    /// Current execution.
    pub(crate) execution_id: String,
    /// Version.
    pub(crate) etag: i64,
    /// Events of the current execution.
    pub(crate) event_count: i64,
}

/// Reads the sentinel row.
pub(crate) fn sentinel(
    conn: &Connection,
    instance: &InstanceId,
) -> StorageResult<Option<Sentinel>> {
    conn.prepare_cached(
        "SELECT execution_id, etag, event_count FROM histories WHERE instance_id = ?1",
    )
    .and_then(|mut s| {
        s.query_row([instance.as_str()], |r| {
            Ok(Sentinel {
                execution_id: r.get(0)?,
                etag: r.get(1)?,
                event_count: r.get(2)?,
            })
        })
        .optional()
    })
    .ctx(WHAT)
}

/// Applies a history write after checking its expected ETag; returns the new ETag.
pub(crate) fn write_in(
    tx: &Tx<'_>,
    instance: &InstanceId,
    write: &HistoryWrite,
) -> StorageResult<ETag> {
    let current = sentinel(tx.conn, instance)?;
    let conflict = || StorageError::Conflict {
        what: format!("history of instance '{instance}'"),
    };
    let next_seq = match (&current, &write.expected) {
        (None, None) => 0,
        (Some(found), Some(expected)) if etag_in(expected) == Some(found.etag) => {
            if write.new_execution {
                delete_events(tx.conn, instance)?;
                0
            } else if found.execution_id != write.execution_id.as_str() {
                return Err(StorageError::InvalidArgument(format!(
                    "history of instance '{instance}': events for execution {} appended to \
                     execution {} (a new execution must set new_execution)",
                    write.execution_id, found.execution_id
                )));
            } else {
                found.event_count
            }
        }
        _ => return Err(conflict()),
    };
    let mut insert = tx
        .conn
        .prepare_cached(
            "INSERT INTO history_events (instance_id, seq, execution_id, event)
             VALUES (?1, ?2, ?3, ?4)",
        )
        .ctx(WHAT)?;
    let mut seq = next_seq;
    for event in &write.events {
        insert
            .execute(params![
                instance.as_str(),
                seq,
                write.execution_id.as_str(),
                encode_event(event)
            ])
            .ctx(WHAT)?;
        seq += 1;
    }
    let etag = tx.next_version();
    tx.conn
        .prepare_cached(
            "INSERT INTO histories (instance_id, execution_id, etag, event_count)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (instance_id) DO UPDATE SET
                 execution_id = excluded.execution_id,
                 etag = excluded.etag,
                 event_count = excluded.event_count",
        )
        .and_then(|mut s| {
            s.execute(params![
                instance.as_str(),
                write.execution_id.as_str(),
                etag,
                seq
            ])
        })
        .ctx(WHAT)?;
    Ok(etag_out(etag))
}

fn delete_events(conn: &Connection, instance: &InstanceId) -> StorageResult<()> {
    conn.prepare_cached("DELETE FROM history_events WHERE instance_id = ?1")
        .and_then(|mut s| s.execute([instance.as_str()]))
        .ctx(WHAT)?;
    Ok(())
}

fn load(conn: &Connection, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
    let Some(head) = sentinel(conn, instance)? else {
        return Ok(None);
    };
    let what = format!("history of instance '{instance}'");
    let execution_id = ExecutionId::new(head.execution_id).map_err(|e| corrupt(&what, e))?;
    let rows: Vec<(i64, String)> = conn
        .prepare_cached("SELECT seq, event FROM history_events WHERE instance_id = ?1 ORDER BY seq")
        .and_then(|mut s| {
            s.query_map([instance.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .ctx(WHAT)?;
    if i64::try_from(rows.len()).ok() != Some(head.event_count) {
        return Err(corrupt(
            &what,
            format!(
                "{} events stored, sentinel says {}",
                rows.len(),
                head.event_count
            ),
        ));
    }
    let mut events = Vec::with_capacity(rows.len());
    for (seq, text) in rows {
        let event = decode_event(&text).map_err(|e| corrupt(format!("{what}, event {seq}"), e))?;
        events.push(event);
    }
    Ok(Some(HistorySnapshot {
        execution_id,
        events,
        etag: etag_out(head.etag),
        pending_outbox: Vec::new(),
        pending_since: None,
    }))
}

#[async_trait]
impl HistoryStore for SqliteStore {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        let instance = instance.clone();
        self.read(move |tx| load(tx, &instance)).await
    }

    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        let instance = instance.clone();
        self.write(move |tx| {
            delete_events(tx.conn, &instance)?;
            tx.conn
                .prepare_cached("DELETE FROM histories WHERE instance_id = ?1")
                .and_then(|mut s| s.execute([instance.as_str()]))
                .ctx(WHAT)?;
            Ok(())
        })
        .await
    }
}
