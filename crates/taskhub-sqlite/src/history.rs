//! The history table (schema version 6). Events are stored in chunks (`history_chunks`), one
//! row per write holding that write's events in the versioned core format, one event per line,
//! numbered in the order written: a commit's chunks fill the table's last pages instead of
//! growing a page wherever each instance's earlier events are. `history_index` holds, per
//! instance and side by side, the head (`seq` -1: current execution, ETag, event
//! count) and one entry per chunk (`seq`: its first event; `chunk`: its row), so a turn's head
//! update and its new chunk entry dirty one small page.

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

/// The head (sentinel) of an instance's history.
pub(crate) struct Sentinel {
    /// Current execution.
    pub(crate) execution_id: String,
    /// Version.
    pub(crate) etag: i64,
    /// Events of the current execution.
    pub(crate) event_count: i64,
}

/// Reads the head row.
pub(crate) fn sentinel(
    conn: &Connection,
    instance: &InstanceId,
) -> StorageResult<Option<Sentinel>> {
    conn.prepare_cached(
        "SELECT execution_id, etag, event_count FROM history_index
         WHERE instance_id = ?1 AND seq = -1",
    )
    .and_then(|mut s| {
        s.query_row([instance.as_str()], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<i64>>(2)?,
            ))
        })
        .optional()
    })
    .ctx(WHAT)?
    .map(|row| match row {
        (Some(execution_id), Some(etag), Some(event_count)) => Ok(Sentinel {
            execution_id,
            etag,
            event_count,
        }),
        _ => Err(corrupt(
            format!("history of instance '{instance}'"),
            "its head row lacks the execution, ETag or event count",
        )),
    })
    .transpose()
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
    let event_count = append_chunk(tx.conn, instance, write, next_seq)?;
    let etag = tx.next_version();
    tx.conn
        .prepare_cached(
            "INSERT INTO history_index (instance_id, seq, execution_id, etag, event_count)
             VALUES (?1, -1, ?2, ?3, ?4)
             ON CONFLICT (instance_id, seq) DO UPDATE SET
                 execution_id = excluded.execution_id,
                 etag = excluded.etag,
                 event_count = excluded.event_count",
        )
        .and_then(|mut s| {
            s.execute(params![
                instance.as_str(),
                write.execution_id.as_str(),
                etag,
                event_count
            ])
        })
        .ctx(WHAT)?;
    Ok(etag_out(etag))
}

/// Stores `write`'s events as one chunk starting at event `first_seq` (several, if they are
/// longer than [`MAX_CHUNK_BYTES`]); returns the event count after them. No chunk for no
/// events.
fn append_chunk(
    conn: &Connection,
    instance: &InstanceId,
    write: &HistoryWrite,
    first_seq: i64,
) -> StorageResult<i64> {
    if write.events.is_empty() {
        return Ok(first_seq);
    }
    let mut chunk = String::new();
    let mut chunk_seq = first_seq;
    let mut seq = first_seq;
    for event in &write.events {
        let line = encode_event(event);
        // Compact JSON escapes every control character inside strings: a line break can only
        // be the separator. Checked all the same, so a chunk always splits back as written.
        if line.contains('\n') {
            return Err(StorageError::InvalidArgument(format!(
                "history of instance '{instance}': an encoded event holds a line break"
            )));
        }
        if !chunk.is_empty() && chunk.len() + 1 + line.len() > MAX_CHUNK_BYTES {
            insert_chunk(conn, instance, chunk_seq, &chunk)?;
            chunk.clear();
            chunk_seq = seq;
        }
        if !chunk.is_empty() {
            chunk.push('\n');
        }
        chunk.push_str(&line);
        seq += 1;
    }
    insert_chunk(conn, instance, chunk_seq, &chunk)?;
    Ok(seq)
}

/// Stores one chunk whose first event is `first_seq`, and its index entry.
fn insert_chunk(
    conn: &Connection,
    instance: &InstanceId,
    first_seq: i64,
    chunk: &str,
) -> StorageResult<()> {
    conn.prepare_cached("INSERT INTO history_chunks (events) VALUES (?1)")
        .and_then(|mut s| s.execute([chunk]))
        .ctx(WHAT)?;
    let id = conn.last_insert_rowid();
    conn.prepare_cached("INSERT INTO history_index (instance_id, seq, chunk) VALUES (?1, ?2, ?3)")
        .and_then(|mut s| s.execute(params![instance.as_str(), first_seq, id]))
        .ctx(WHAT)?;
    Ok(())
}

/// Deletes an instance's events (its chunks and their entries), keeping its head.
fn delete_events(conn: &Connection, instance: &InstanceId) -> StorageResult<()> {
    conn.prepare_cached(
        "DELETE FROM history_chunks WHERE id IN
             (SELECT chunk FROM history_index WHERE instance_id = ?1 AND seq >= 0)",
    )
    .and_then(|mut s| s.execute([instance.as_str()]))
    .ctx(WHAT)?;
    conn.prepare_cached("DELETE FROM history_index WHERE instance_id = ?1 AND seq >= 0")
        .and_then(|mut s| s.execute([instance.as_str()]))
        .ctx(WHAT)?;
    Ok(())
}

/// Deletes every history head; returns how many (the number of histories).
pub(crate) fn delete_all_heads(conn: &Connection) -> StorageResult<u64> {
    let n = conn
        .prepare_cached("DELETE FROM history_index WHERE seq = -1")
        .and_then(|mut s| s.execute([]))
        .ctx(WHAT)?;
    Ok(n as u64)
}

/// Histories of at most this many events load on the calling thread, as a point read: most
/// loads are of an instance's first turn (no history yet) or a short history, and handing
/// them to a blocking thread and back cost more than the read. Longer ones go to a blocking
/// thread.
const INLINE_LOAD_EVENTS: i64 = 64;

/// And of at most this many bytes of encoded events.
const INLINE_LOAD_BYTES: usize = 64 * 1024;

/// A chunk holds a write's events up to about this many bytes; a larger write is stored as
/// several chunks (SQLite refuses values over 1 GB, and a chunk is read whole).
const MAX_CHUNK_BYTES: usize = 16 * 1024 * 1024;

/// A load tried on the calling thread.
enum Quick {
    /// No history, or a short one.
    Done(Option<HistorySnapshot>),
    /// A long history: load it on a blocking thread.
    Long,
}

fn load_short(conn: &Connection, instance: &InstanceId) -> StorageResult<Quick> {
    let Some(head) = sentinel(conn, instance)? else {
        return Ok(Quick::Done(None));
    };
    if head.event_count > INLINE_LOAD_EVENTS {
        return Ok(Quick::Long);
    }
    let chunks = chunk_rows(conn, instance)?;
    // A few large payloads make a short history slow to decode.
    let bytes: usize = chunks
        .iter()
        .map(|(_, text)| text.as_ref().map_or(0, String::len))
        .sum();
    if bytes > INLINE_LOAD_BYTES {
        return Ok(Quick::Long);
    }
    decode(instance, head, chunks).map(|h| Quick::Done(Some(h)))
}

fn load(conn: &Connection, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
    match sentinel(conn, instance)? {
        None => Ok(None),
        Some(head) => decode(instance, head, chunk_rows(conn, instance)?).map(Some),
    }
}

/// An instance's chunks in event order: each one's first event and its text (`None`: the
/// index names a chunk that is not there).
fn chunk_rows(
    conn: &Connection,
    instance: &InstanceId,
) -> StorageResult<Vec<(i64, Option<String>)>> {
    conn.prepare_cached(
        "SELECT i.seq, c.events FROM history_index i
         LEFT JOIN history_chunks c ON c.id = i.chunk
         WHERE i.instance_id = ?1 AND i.seq >= 0 ORDER BY i.seq",
    )
    .and_then(|mut s| {
        s.query_map([instance.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
    })
    .ctx(WHAT)
}

/// The history of `head` from its chunk rows, checked for gaps and against the head's count.
fn decode(
    instance: &InstanceId,
    head: Sentinel,
    chunks: Vec<(i64, Option<String>)>,
) -> StorageResult<HistorySnapshot> {
    let what = format!("history of instance '{instance}'");
    let execution_id = ExecutionId::new(head.execution_id).map_err(|e| corrupt(&what, e))?;
    // The stored count only sizes the first allocation: a damaged one must not abort it.
    let mut events = Vec::with_capacity(usize::try_from(head.event_count).unwrap_or(0).min(4096));
    for (first_seq, text) in chunks {
        let Some(text) = text else {
            return Err(corrupt(
                &what,
                format!("the chunk of event {first_seq} is missing"),
            ));
        };
        if i64::try_from(events.len()).ok() != Some(first_seq) {
            return Err(corrupt(
                &what,
                format!(
                    "a chunk starts at event {first_seq}, after {} events",
                    events.len()
                ),
            ));
        }
        for line in text.split('\n') {
            let seq = events.len();
            let event =
                decode_event(line).map_err(|e| corrupt(format!("{what}, event {seq}"), e))?;
            events.push(event);
        }
    }
    if i64::try_from(events.len()).ok() != Some(head.event_count) {
        return Err(corrupt(
            &what,
            format!(
                "{} events stored, the head says {}",
                events.len(),
                head.event_count
            ),
        ));
    }
    Ok(HistorySnapshot {
        execution_id,
        events,
        etag: etag_out(head.etag),
        pending_outbox: Vec::new(),
        pending_since: None,
    })
}

#[async_trait]
impl HistoryStore for SqliteStore {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        let id = instance.clone();
        match self.read_point(move |conn| load_short(conn, &id)).await? {
            Quick::Done(history) => Ok(history),
            Quick::Long => {
                let instance = instance.clone();
                self.read(move |conn| load(conn, &instance)).await
            }
        }
    }

    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        let instance = instance.clone();
        self.write(move |tx| {
            delete_events(tx.conn, &instance)?;
            tx.conn
                .prepare_cached("DELETE FROM history_index WHERE instance_id = ?1")
                .and_then(|mut s| s.execute([instance.as_str()]))
                .ctx(WHAT)?;
            Ok(())
        })
        .await
    }
}
