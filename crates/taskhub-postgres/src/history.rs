//! The history: a head row per instance (`histories`: current execution, ETag, event count)
//! and one row per event (`history_events`, keyed by instance, execution and sequence: a
//! second guard under the ETag check), encoded with the versioned core format.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use taskhub_core::format::{decode_event, encode_event};
use taskhub_core::{ExecutionId, InstanceId};
use taskhub_storage::{
    ETag, HistorySnapshot, HistoryStore, HistoryWrite, StorageError, StorageResult,
};

use crate::codec::{etag_in, etag_out};
use crate::errors::{corrupt, PgResultExt};
use crate::store::PostgresStore;

const WHAT: &str = "history";

/// The ETag of a history.
pub(crate) const HEAD_ETAG_SQL: &str = "SELECT etag FROM histories WHERE instance_id = $1";

/// The first checkpoint of an instance: the head must not exist. Returns (etag, first seq).
pub(crate) const FIRST_HEAD_SQL: &str =
    "INSERT INTO histories (instance_id, execution_id, etag, event_count)
     VALUES ($1, $2, nextval('versions'), $3)
     ON CONFLICT (instance_id) DO NOTHING
     RETURNING etag, 0::bigint";

/// A new execution: the head must be at the expected ETag (`$4`).
pub(crate) const NEW_EXECUTION_HEAD_SQL: &str = "UPDATE histories
     SET execution_id = $2, etag = nextval('versions'), event_count = $3
     WHERE instance_id = $1 AND etag = $4
     RETURNING etag, 0::bigint";

/// Events appended to the current execution: the head must be at the expected ETag (`$4`) and
/// of that execution.
pub(crate) const APPEND_HEAD_SQL: &str = "UPDATE histories
     SET etag = nextval('versions'), event_count = event_count + $3
     WHERE instance_id = $1 AND etag = $4 AND execution_id = $2
     RETURNING etag, event_count - $3";

/// Every event of an instance.
pub(crate) const DELETE_EVENTS_SQL: &str = "DELETE FROM history_events WHERE instance_id = $1";

/// The statement that moves the head for `write`.
pub(crate) fn head_sql(write: &HistoryWrite) -> &'static str {
    match (&write.expected, write.new_execution) {
        (None, _) => FIRST_HEAD_SQL,
        (Some(_), true) => NEW_EXECUTION_HEAD_SQL,
        (Some(_), false) => APPEND_HEAD_SQL,
    }
}

/// The events of a write (`$4`, `$3` of them), numbered after the head's new count: the one
/// statement a pipelined checkpoint sends right after the head's, without its answer.
pub(crate) const EVENTS_AFTER_HEAD_SQL: &str =
    "INSERT INTO history_events (instance_id, execution_id, seq, event)
     SELECT $1, $2, h.event_count - $3 + t.i - 1, t.e
     FROM histories h CROSS JOIN unnest($4::text[]) WITH ORDINALITY AS t(e, i)
     WHERE h.instance_id = $1";

/// The ETag of an instance's history, if it has one.
pub(crate) async fn head_etag(
    client: &impl GenericClient,
    instance: &InstanceId,
) -> StorageResult<Option<ETag>> {
    let stmt = client.prepare_cached(HEAD_ETAG_SQL).await.ctx(WHAT)?;
    let row = client
        .query_opt(&stmt, &[&instance.as_str()])
        .await
        .ctx(WHAT)?;
    Ok(row.map(|r| etag_out(r.get(0))))
}

/// Applies a history write after checking its expected ETag (in the same statement that
/// moves the head, so two writers from one loaded history never both pass); returns the new
/// ETag.
pub(crate) async fn write_in(
    client: &impl GenericClient,
    instance: &InstanceId,
    write: &HistoryWrite,
) -> StorageResult<ETag> {
    let conflict = || StorageError::Conflict {
        what: format!("history of instance '{instance}'"),
    };
    let count = i64::try_from(write.events.len()).unwrap_or(i64::MAX);
    let id = instance.as_str();
    let execution = write.execution_id.as_str();
    let row = match &write.expected {
        None => {
            let stmt = client.prepare_cached(FIRST_HEAD_SQL).await.ctx(WHAT)?;
            client
                .query_opt(&stmt, &[&id, &execution, &count])
                .await
                .ctx(WHAT)?
        }
        Some(expected) => {
            let Some(version) = etag_in(expected) else {
                return Err(conflict());
            };
            if write.new_execution {
                let stmt = client
                    .prepare_cached(NEW_EXECUTION_HEAD_SQL)
                    .await
                    .ctx(WHAT)?;
                let row = client
                    .query_opt(&stmt, &[&id, &execution, &count, &version])
                    .await
                    .ctx(WHAT)?;
                if row.is_some() {
                    let stmt = client.prepare_cached(DELETE_EVENTS_SQL).await.ctx(WHAT)?;
                    client.execute(&stmt, &[&id]).await.ctx(WHAT)?;
                }
                row
            } else {
                let stmt = client.prepare_cached(APPEND_HEAD_SQL).await.ctx(WHAT)?;
                client
                    .query_opt(&stmt, &[&id, &execution, &count, &version])
                    .await
                    .ctx(WHAT)?
            }
        }
    };
    let Some(row) = row else {
        return Err(conflict());
    };
    let etag: i64 = row.get(0);
    let first_seq: i64 = row.get(1);
    if !write.events.is_empty() {
        let events: Vec<String> = write.events.iter().map(encode_event).collect();
        let stmt = client
            .prepare_cached(
                "INSERT INTO history_events (instance_id, execution_id, seq, event)
                 SELECT $1, $2, $3 + t.i - 1, t.e
                 FROM unnest($4::text[]) WITH ORDINALITY AS t(e, i)",
            )
            .await
            .ctx(WHAT)?;
        client
            .execute(&stmt, &[&id, &execution, &first_seq, &events])
            .await
            .ctx(WHAT)?;
    }
    Ok(etag_out(etag))
}

async fn load(
    client: &impl GenericClient,
    instance: &InstanceId,
) -> StorageResult<Option<HistorySnapshot>> {
    // One statement: the head and its execution's events, in one snapshot.
    let stmt = client
        .prepare_cached(
            "SELECT h.execution_id, h.etag, h.event_count, e.seq, e.event
             FROM histories h
             LEFT JOIN history_events e
               ON e.instance_id = h.instance_id AND e.execution_id = h.execution_id
             WHERE h.instance_id = $1
             ORDER BY e.seq",
        )
        .await
        .ctx(WHAT)?;
    let rows = client.query(&stmt, &[&instance.as_str()]).await.ctx(WHAT)?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let what = format!("history of instance '{instance}'");
    let execution_id =
        ExecutionId::new(first.get::<_, String>(0)).map_err(|e| corrupt(&what, e))?;
    let etag: i64 = first.get(1);
    let event_count: i64 = first.get(2);
    let mut events = Vec::with_capacity(rows.len());
    for r in &rows {
        let seq: Option<i64> = r.get(3);
        let text: Option<String> = r.get(4);
        if let (Some(seq), Some(text)) = (seq, text) {
            let event =
                decode_event(&text).map_err(|e| corrupt(format!("{what}, event {seq}"), e))?;
            events.push(event);
        }
    }
    if i64::try_from(events.len()).ok() != Some(event_count) {
        return Err(corrupt(
            &what,
            format!("{} events stored, head says {event_count}", events.len()),
        ));
    }
    Ok(Some(HistorySnapshot {
        execution_id,
        events,
        etag: etag_out(etag),
        pending_outbox: Vec::new(),
        pending_since: None,
    }))
}

#[async_trait]
impl HistoryStore for PostgresStore {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        let client = self.client().await?;
        load(&client, instance).await
    }

    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx(WHAT)?;
        let head = tx
            .prepare_cached("DELETE FROM histories WHERE instance_id = $1")
            .await
            .ctx(WHAT)?;
        tx.execute(&head, &[&instance.as_str()]).await.ctx(WHAT)?;
        let events = tx
            .prepare_cached("DELETE FROM history_events WHERE instance_id = $1")
            .await
            .ctx(WHAT)?;
        tx.execute(&events, &[&instance.as_str()]).await.ctx(WHAT)?;
        tx.commit().await.ctx(WHAT)
    }
}
