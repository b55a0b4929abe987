//! Group commit of checkpoints: the writer task of a store ([`WRITERS`]) takes every
//! checkpoint queued while it was busy and commit them in ONE transaction (one WAL flush
//! for all), pipelined: `BEGIN`, every
//! checkpoint's statements, then `COMMIT` once every answer is in and every guard (fence,
//! history ETag, instance-row condition) held. If any failed, the batch is rolled back and
//! each of its checkpoints runs again alone, in its own transaction, so the failed one alone
//! is refused. A checkpoint that comes alone runs alone.
//!
//! Batching is safe because each checkpoint's statements stay in their own order (the lock
//! order of [`schema`](crate::schema)), the checkpoints of one batch touch different instances
//! (a turn's next checkpoint is made only after its previous one answered), and every batch
//! takes its partitions' fences in ascending order. A caller that stops waiting does not stop its checkpoint: the
//! task finishes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use deadpool_postgres::Pool;
use taskhub_storage::{CheckpointOutcome, CheckpointRequest, StorageResult};
use tokio::sync::{mpsc, oneshot};

use crate::errors::{map_pool, PgResultExt};
use crate::pipeline::{send, warm};

const WHAT: &str = "checkpoint";

/// How many checkpoints the writer committed, in how many transactions.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    requests: AtomicU64,
    transactions: AtomicU64,
}

/// What [`PostgresStore::writer_stats`](crate::PostgresStore::writer_stats) reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Checkpoints run (a batch redone one by one counts each twice).
    pub requests: u64,
    /// Transactions they ran in: below `requests` when checkpoints were group-committed.
    pub transactions: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> WriterStats {
        WriterStats {
            requests: self.requests.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
        }
    }
}

/// One queued checkpoint and where its answer goes.
pub(crate) struct Job {
    pub(crate) request: CheckpointRequest,
    pub(crate) answer: oneshot::Sender<StorageResult<CheckpointOutcome>>,
}

/// Runs one checkpoint in a transaction of its own.
async fn alone(pool: &Pool, request: &CheckpointRequest) -> StorageResult<CheckpointOutcome> {
    let mut client = pool.get().await.map_err(map_pool)?;
    let tx = client.transaction().await.ctx(WHAT)?;
    warm(&tx, request).await?;
    let outcome = send(&tx, request).await?;
    tx.commit().await.ctx(WHAT)?;
    Ok(outcome)
}

/// Runs `jobs` in one transaction; `None` if it must be redone one by one (a guard failed, or
/// a statement did).
async fn together(pool: &Pool, jobs: &[Job]) -> StorageResult<Option<Vec<CheckpointOutcome>>> {
    let mut client = pool.get().await.map_err(map_pool)?;
    let tx = client.transaction().await.ctx(WHAT)?;
    for job in jobs {
        warm(&tx, &job.request).await?;
    }
    let answers =
        futures_util::future::join_all(jobs.iter().map(|job| send(&tx, &job.request))).await;
    let Ok(outcomes) = answers.into_iter().collect::<StorageResult<Vec<_>>>() else {
        tx.rollback().await.ctx(WHAT)?;
        return Ok(None);
    };
    tx.commit().await.ctx(WHAT)?;
    Ok(Some(outcomes))
}

/// How many writer tasks share a store's queue, each running one transaction at a time on its
/// own connection. One: four measured no better on hello5 (683–743 against 670–700
/// orchestrations/s on the 2-core machine), and one writer keeps a process's batches from
/// ever waiting for each other.
pub(crate) const WRITERS: usize = 1;

/// The next batch: waits for one job, then takes what else is queued, up to `max_batch`,
/// ordered by partition so that every batch takes its fences `FOR SHARE` in the same order
/// (two batches never wait for each other in a cycle behind lease writes).
async fn next_batch(
    jobs: &tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>,
    max_batch: usize,
) -> Option<Vec<Job>> {
    let mut jobs = jobs.lock().await;
    let first = jobs.recv().await?;
    let mut batch = vec![first];
    while batch.len() < max_batch {
        match jobs.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    drop(jobs);
    batch.sort_by_key(|job| job.request.fence.map(|f| f.partition));
    Some(batch)
}

/// One writer task: takes batches of up to `max_batch` queued jobs until every sender is gone.
pub(crate) async fn run(
    pool: Pool,
    jobs: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>>,
    max_batch: usize,
    stats: Arc<Counters>,
) {
    while let Some(batch) = next_batch(&jobs, max_batch).await {
        if batch.len() > 1 {
            stats.transactions.fetch_add(1, Ordering::Relaxed);
            stats
                .requests
                .fetch_add(u64::try_from(batch.len()).unwrap_or(0), Ordering::Relaxed);
            match together(&pool, &batch).await {
                Ok(Some(outcomes)) => {
                    for (job, outcome) in batch.into_iter().zip(outcomes) {
                        let _ = job.answer.send(Ok(outcome));
                    }
                    continue;
                }
                // The transaction or its commit failed (the connection, the server): whether
                // it committed is unknown, as for a lone checkpoint whose answer was lost.
                // Every caller gets the error and retries as it would then.
                Err(e) => {
                    for job in batch {
                        let _ = job.answer.send(Err(e.clone()));
                    }
                    continue;
                }
                // A guard or a statement failed and the batch was rolled back: each is redone
                // alone below and gets its own answer.
                Ok(None) => {}
            }
        }
        for job in batch {
            stats.transactions.fetch_add(1, Ordering::Relaxed);
            stats.requests.fetch_add(1, Ordering::Relaxed);
            let outcome = alone(&pool, &job.request).await;
            let _ = job.answer.send(outcome);
        }
    }
}

/// Sends a job to the writer and waits for its answer.
pub(crate) async fn submit(
    queue: &mpsc::UnboundedSender<Job>,
    request: CheckpointRequest,
) -> StorageResult<CheckpointOutcome> {
    let (answer, reply) = oneshot::channel();
    queue
        .send(Job { request, answer })
        .map_err(|_| taskhub_storage::StorageError::Unavailable("the store is closed".into()))?;
    reply.await.unwrap_or_else(|_| {
        Err(taskhub_storage::StorageError::Unavailable(
            "the checkpoint writer stopped".into(),
        ))
    })
}
