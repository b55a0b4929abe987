//! The writer thread: owns the write connection and group-commits.
//!
//! Every write (enqueue, dequeue, delete, checkpoint, row writes...) is a job sent over a
//! channel. The writer takes the first job, drains whatever else is already queued (up to
//! `max_batch`), and applies them all in ONE `BEGIN IMMEDIATE` transaction. Each job runs inside
//! its own `SAVEPOINT`, so a job that fails (say, an ETag conflict) rolls back only itself and
//! gets its own error. After the single `COMMIT` every caller is answered through its oneshot
//! channel. With `synchronous = FULL` that is one fsync for the whole batch.
//!
//! A *relaxed* write (a dequeue: it only hides messages and counts a delivery) does not need
//! to survive a power loss: losing it makes the messages visible again, which at-least-once
//! delivery allows. Under `FULL`, a batch of relaxed writes only commits with
//! `synchronous = NORMAL` (no fsync); the next synced commit syncs the WAL up to and including
//! it, so what survives a power loss is always a prefix of the commits.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use taskhub_core::Timestamp;
use taskhub_storage::{Clock, StorageError, StorageResult};
use tokio::sync::oneshot;

use crate::checkpointer::Checkpointer;
use crate::errors::SqlResultExt;
use crate::options::Durability;

/// What a job sees while it runs: the connection inside the batch's transaction, the batch's
/// time, and the store-wide counter for ETags and receipts.
pub(crate) struct Tx<'c> {
    /// The write connection, inside `BEGIN IMMEDIATE` and the job's savepoint.
    pub(crate) conn: &'c Connection,
    now: Timestamp,
    counter: Cell<i64>,
}

impl Tx<'_> {
    /// The time of this batch, read from the store's clock once the write lock was taken.
    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }

    /// A value never handed out before in this database (an ETag or a receipt token).
    pub(crate) fn next_version(&self) -> i64 {
        let next = self.counter.get().saturating_add(1);
        self.counter.set(next);
        next
    }
}

/// One queued write.
trait Job: Send {
    /// Runs the write; true if it succeeded (and its savepoint is to be kept).
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// True if the write may commit without an fsync (see the module docs).
    fn relaxed(&self) -> bool;
    /// Answers the caller once the batch's fate is known.
    fn finish(self: Box<Self>, commit: Result<(), StorageError>);
}

struct TypedJob<T, F> {
    relaxed: bool,
    work: Option<F>,
    result: Option<StorageResult<T>>,
    reply: oneshot::Sender<StorageResult<T>>,
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnOnce(&Tx<'_>) -> StorageResult<T> + Send,
{
    fn run(&mut self, tx: &Tx<'_>) -> bool {
        let result = match self.work.take() {
            Some(work) => work(tx),
            None => Err(StorageError::Backend("a write ran twice".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn relaxed(&self) -> bool {
        self.relaxed
    }

    fn finish(self: Box<Self>, commit: Result<(), StorageError>) {
        let answer = match (self.result, commit) {
            (Some(Err(own)), _) => Err(own),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(batch)) => Err(batch),
            (None, Ok(())) => Err(StorageError::Backend("a write was never run".into())),
        };
        // The caller may have stopped waiting; the write stands either way.
        let _ = self.reply.send(answer);
    }
}

/// Counters of the writer, to observe group commit.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    transactions: AtomicU64,
    requests: AtomicU64,
}

/// A snapshot of the writer's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriterStats {
    /// Write transactions committed (each holds one or more requests).
    pub transactions: u64,
    /// Write requests applied (committed or rolled back to their savepoint).
    pub requests: u64,
    /// WAL checkpoints run by the checkpointer thread (see the crate docs).
    pub wal_checkpoints: u64,
}

/// The handle to the writer thread.
pub(crate) struct Writer {
    sender: Option<Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    /// Checkpoints the WAL the writer fills; dropped after the writer thread has ended.
    checkpointer: Checkpointer,
}

/// What the writer thread needs.
pub(crate) struct WriterSetup {
    /// The write connection (already migrated).
    pub(crate) conn: Connection,
    /// The store's clock.
    pub(crate) clock: Arc<dyn Clock>,
    /// Most jobs per transaction.
    pub(crate) max_batch: usize,
    /// Thread name.
    pub(crate) name: String,
    /// The connection's sync policy.
    pub(crate) durability: Durability,
    /// The connection the WAL checkpoints run on.
    pub(crate) checkpoint_conn: Connection,
}

impl Writer {
    /// Starts the writer thread.
    pub(crate) fn start(mut setup: WriterSetup) -> StorageResult<Self> {
        let checkpointer = Checkpointer::start(setup.checkpoint_conn)?;
        checkpointer.watch(&mut setup.conn)?;
        let setup = RunSetup {
            conn: setup.conn,
            clock: setup.clock,
            max_batch: setup.max_batch,
            durability: setup.durability,
            name: setup.name,
        };
        let (sender, receiver) = mpsc::channel::<Box<dyn Job>>();
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name(setup.name.clone())
            .spawn(move || run(&setup, &receiver, &thread_counters))
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the writer thread: {e}"))
            })?;
        Ok(Self {
            sender: Some(sender),
            thread: Some(thread),
            counters,
            checkpointer,
        })
    }

    /// Queues a write and waits for its commit; `relaxed` writes may commit without an fsync
    /// (see the module docs).
    pub(crate) async fn write<T, F>(&self, relaxed: bool, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(TypedJob {
            relaxed,
            work: Some(work),
            result: None,
            reply,
        });
        self.sender
            .as_ref()
            .ok_or_else(stopped)?
            .send(job)
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            transactions: self.counters.transactions.load(Ordering::Relaxed),
            requests: self.counters.requests.load(Ordering::Relaxed),
            wal_checkpoints: self.checkpointer.checkpoints(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the batch in hand.
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn stopped() -> StorageError {
    StorageError::Unavailable("the sqlite writer thread has stopped".into())
}

/// What the writer thread keeps of its setup.
struct RunSetup {
    conn: Connection,
    clock: Arc<dyn Clock>,
    max_batch: usize,
    durability: Durability,
    name: String,
}

fn run(setup: &RunSetup, receiver: &Receiver<Box<dyn Job>>, counters: &Counters) {
    // Whether the connection is switched to `synchronous = NORMAL` for relaxed batches.
    let mut unsynced = false;
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < setup.max_batch.max(1) {
            match receiver.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let count = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        let relax = setup.durability == Durability::Full && batch.iter().all(|j| j.relaxed());
        if relax != unsynced {
            let level = if relax {
                Durability::Normal
            } else {
                setup.durability
            };
            // If the switch fails the batch simply commits with the current setting.
            if setup
                .conn
                .pragma_update(None, "synchronous", level.pragma_value())
                .is_ok()
            {
                unsynced = relax;
            }
        }
        let outcome = apply(&setup.conn, setup.clock.as_ref(), &mut batch);
        if outcome == Ok(true) {
            counters.transactions.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = outcome.map(drop);
        counters.requests.fetch_add(count, Ordering::Relaxed);
        for job in batch {
            job.finish(outcome.clone());
        }
    }
}

/// Applies one batch in one transaction; true if it committed. An error here fails every job
/// of the batch.
fn apply(conn: &Connection, clock: &dyn Clock, batch: &mut [Box<dyn Job>]) -> StorageResult<bool> {
    const WHAT: &str = "write transaction";
    exec(conn, "BEGIN IMMEDIATE").ctx(WHAT)?;
    let result = apply_in_transaction(conn, clock, batch);
    let result = match result {
        Ok(Keep::Commit) => exec(conn, "COMMIT").ctx(WHAT).map(|()| true),
        // The batch's only job failed: nothing to keep, and the job answers with its own error.
        Ok(Keep::Nothing) => exec(conn, "ROLLBACK").ctx(WHAT).map(|()| false),
        Err(e) => Err(e),
    };
    if result.is_err() && !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
    result
}

/// What a batch leaves to commit.
enum Keep {
    /// Commit the transaction.
    Commit,
    /// Roll it back: its only job failed.
    Nothing,
}

fn apply_in_transaction(
    conn: &Connection,
    clock: &dyn Clock,
    batch: &mut [Box<dyn Job>],
) -> StorageResult<Keep> {
    const WHAT: &str = "write transaction";
    let start: i64 = conn
        .prepare_cached("SELECT value FROM counters WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ctx("counters")?;
    let tx = Tx {
        conn,
        now: clock.now(),
        counter: Cell::new(start),
    };
    if let [only] = batch {
        // One job needs no savepoint (whose sub-journal copies every page it touches): if it
        // fails, the whole transaction is rolled back instead.
        let ok = only.run(&tx);
        if conn.is_autocommit() {
            return Err(rolled_back());
        }
        if !ok {
            return Ok(Keep::Nothing);
        }
        save_counter(conn, start, tx.counter.get())?;
        return Ok(Keep::Commit);
    }
    for job in batch.iter_mut() {
        exec(conn, "SAVEPOINT job").ctx(WHAT)?;
        let ok = job.run(&tx);
        if conn.is_autocommit() {
            return Err(rolled_back());
        }
        if !ok {
            exec(conn, "ROLLBACK TO job").ctx(WHAT)?;
        }
        exec(conn, "RELEASE job").ctx(WHAT)?;
    }
    save_counter(conn, start, tx.counter.get())?;
    Ok(Keep::Commit)
}

/// SQLite rolled the whole transaction back by itself (I/O error, full disk...).
fn rolled_back() -> StorageError {
    StorageError::Unavailable("the write transaction was rolled back by SQLite".into())
}

/// Stores the version counter if the batch used it.
fn save_counter(conn: &Connection, start: i64, end: i64) -> StorageResult<()> {
    if end != start {
        conn.prepare_cached("UPDATE counters SET value = ?1 WHERE id = 1")
            .and_then(|mut s| s.execute([end]))
            .ctx("counters")?;
    }
    Ok(())
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}
