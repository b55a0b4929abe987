//! The checkpoint pipelined: every statement of the transaction is sent before the first
//! answer comes back (tokio-postgres pipelines the requests of one connection), then the
//! answers decide `COMMIT` or rollback — two round trips per checkpoint instead of one per
//! statement. Same statements, same order, same lock order as the step-by-step
//! [`checkpoint_in`](crate::checkpoint::checkpoint_in), which `checkpoint_observed` runs.
//!
//! Nothing depends on an answer inside the pipeline: the events are numbered from the head row
//! the statement before them has just moved (`EVENTS_AFTER_HEAD_SQL`), and a guard that failed
//! (the fence's epoch, the history's ETag, the instance row's condition) rolls everything back
//! before the commit. The first failure in statement order is the one reported, so a stale
//! epoch is `Fenced` even when a later statement failed because of it.

use deadpool_postgres::GenericClient;
use taskhub_core::format::encode_event;
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, Dequeued, HistoryWrite, StorageError, StorageResult,
};
use tokio_postgres::types::ToSql;

use crate::checkpoint::FENCE_SQL;
use crate::codec::{etag_in, etag_out};
use crate::errors::PgResultExt;
use crate::history::{head_sql, DELETE_EVENTS_SQL, EVENTS_AFTER_HEAD_SQL, HEAD_ETAG_SQL};
use crate::instances::{put_in, put_sql};
use crate::queues::{
    claimed_sql, delete_many, enqueue_claimed, inserts_sql, Inserts, DELETE_MANY_SQL,
};

const WHAT: &str = "checkpoint";

/// Prepares (or finds in the connection's cache) every statement `request` sends, so that
/// none of the pipelined requests waits for a `Parse` round trip and they go out in order.
pub(crate) async fn warm<C: GenericClient>(
    tx: &C,
    request: &CheckpointRequest,
) -> StorageResult<()> {
    let mut texts: Vec<String> = vec![FENCE_SQL.to_owned(), HEAD_ETAG_SQL.to_owned()];
    if let Some(write) = &request.history {
        texts.push(head_sql(write).to_owned());
        if replaces_events(write) {
            texts.push(DELETE_EVENTS_SQL.to_owned());
        }
        texts.push(EVENTS_AFTER_HEAD_SQL.to_owned());
    }
    if let Some((_, expect)) = &request.instance {
        texts.push(put_sql(expect));
    }
    texts.push(inserts_sql());
    texts.push(claimed_sql());
    texts.push(DELETE_MANY_SQL.to_owned());
    for text in texts {
        tx.prepare_cached(&text).await.ctx(WHAT)?;
    }
    Ok(())
}

/// What the history part answered: the head's row (`None`: its guard failed).
type HeadAnswer = StorageResult<Option<i64>>;

async fn head<C: GenericClient>(tx: &C, request: &CheckpointRequest) -> HeadAnswer {
    let id = request.instance_id.as_str();
    let Some(write) = &request.history else {
        let stmt = tx.prepare_cached(HEAD_ETAG_SQL).await.ctx(WHAT)?;
        let row = tx.query_opt(&stmt, &[&id]).await.ctx(WHAT)?;
        return Ok(row.map(|r| r.get(0)));
    };
    let execution = write.execution_id.as_str();
    let count = i64::try_from(write.events.len()).unwrap_or(i64::MAX);
    let stmt = tx.prepare_cached(head_sql(write)).await.ctx(WHAT)?;
    let version: Option<i64> = write.expected.as_ref().map(|e| etag_in(e).unwrap_or(-1));
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id, &execution, &count];
    if let Some(v) = &version {
        params.push(v);
    }
    let row = tx.query_opt(&stmt, &params).await.ctx(WHAT)?;
    Ok(row.map(|r| r.get(0)))
}

/// Whether the write replaces stored events: a new execution over a history that exists (an
/// instance's first write finds none: its head is inserted only where no head is, and a head
/// and its events are always written and deleted together), as the step-by-step write decides.
fn replaces_events(write: &HistoryWrite) -> bool {
    write.new_execution && write.expected.is_some()
}

async fn events<C: GenericClient>(tx: &C, request: &CheckpointRequest) -> StorageResult<()> {
    let Some(write) = &request.history else {
        return Ok(());
    };
    let id = request.instance_id.as_str();
    if replaces_events(write) {
        let stmt = tx.prepare_cached(DELETE_EVENTS_SQL).await.ctx(WHAT)?;
        tx.execute(&stmt, &[&id]).await.ctx(WHAT)?;
    }
    if write.events.is_empty() {
        return Ok(());
    }
    let execution = write.execution_id.as_str();
    let count = i64::try_from(write.events.len()).unwrap_or(i64::MAX);
    let encoded: Vec<String> = write.events.iter().map(encode_event).collect();
    let stmt = tx.prepare_cached(EVENTS_AFTER_HEAD_SQL).await.ctx(WHAT)?;
    tx.execute(&stmt, &[&id, &execution, &count, &encoded])
        .await
        .ctx(WHAT)?;
    Ok(())
}

async fn fence<C: GenericClient>(
    tx: &C,
    request: &CheckpointRequest,
) -> StorageResult<Option<i64>> {
    let Some(fence) = request.fence else {
        return Ok(None);
    };
    let stmt = tx.prepare_cached(FENCE_SQL).await.ctx(WHAT)?;
    let row = tx
        .query_opt(&stmt, &[&i64::from(fence.partition)])
        .await
        .ctx(WHAT)?;
    Ok(Some(row.map_or(-1, |r| r.get(0))))
}

async fn claims<C: GenericClient>(
    tx: &C,
    request: &CheckpointRequest,
) -> StorageResult<Vec<Dequeued>> {
    let mut out = Vec::new();
    for m in &request.outbound {
        if let Some(visibility) = m.claim {
            out.push(enqueue_claimed(tx, m.queue, &m.message, visibility).await?);
        }
    }
    Ok(out)
}

/// Sends the whole checkpoint at once inside the transaction `tx` is in; the caller commits
/// on `Ok`. Every statement must be prepared already ([`warm`]), or they may go out of order.
pub(crate) async fn send<C: GenericClient>(
    tx: &C,
    request: &CheckpointRequest,
) -> StorageResult<CheckpointOutcome> {
    let mut inserts = Inserts::default();
    for m in &request.outbound {
        if m.claim.is_none() {
            inserts.push(m.queue, &m.message);
        }
    }
    let instance = async {
        match &request.instance {
            Some((row, expect)) => put_in(tx, row, expect).await.map(Some),
            None => Ok(None),
        }
    };
    // Sent in this order on the first poll of each (every statement is prepared).
    let (fence, head, events, plain, claimed, instance, consumed) = tokio::join!(
        fence(tx, request),
        head(tx, request),
        events(tx, request),
        inserts.run(tx),
        claims(tx, request),
        instance,
        delete_many(tx, &request.consumed),
    );
    if let (Some(f), Some(current)) = (request.fence, fence?) {
        let current = u64::try_from(current).map_err(|_| StorageError::NotFound {
            what: format!("partition {} (checkpoint fence)", f.partition),
        })?;
        if current != f.epoch {
            return Err(StorageError::Fenced {
                partition: f.partition,
                attempted: f.epoch,
                current,
            });
        }
    }
    let head = head?;
    if request.history.is_some() && head.is_none() {
        return Err(StorageError::Conflict {
            what: format!("history of instance '{}'", request.instance_id),
        });
    }
    events?;
    plain?;
    let claimed = claimed?;
    let instance_etag = instance?;
    consumed?;
    Ok(CheckpointOutcome {
        history_etag: head.map(etag_out),
        instance_etag,
        claimed,
    })
}
