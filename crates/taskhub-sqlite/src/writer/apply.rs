//! Applying writes in one transaction: the batch of the writer thread, or one write on the
//! caller's thread.

use std::cell::Cell;

use rusqlite::Connection;
use taskhub_core::Timestamp;
use taskhub_storage::{Clock, StorageError, StorageResult};

use super::job::Job;
use crate::errors::SqlResultExt;
use crate::schema::exec_cached as exec;

/// What a job sees while it runs: the connection inside the batch's transaction, the batch's
/// time, and the store-wide counter for ETags and receipts.
pub(crate) struct Tx<'c> {
    /// The write connection, inside `BEGIN IMMEDIATE` (and the job's savepoint, in a batch).
    pub(crate) conn: &'c Connection,
    now: Timestamp,
    start: i64,
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

    /// Stores the version counter if the transaction used it.
    fn save_counter(&self) -> StorageResult<()> {
        let end = self.counter.get();
        if end != self.start {
            self.conn
                .prepare_cached("UPDATE counters SET value = ?1 WHERE id = 1")
                .and_then(|mut s| s.execute([end]))
                .ctx("counters")?;
        }
        Ok(())
    }
}

const WHAT: &str = "write transaction";

/// Takes the write lock: `BEGIN IMMEDIATE`.
/// Takes the write lock: `BEGIN IMMEDIATE`. A transaction still open here was left by a write
/// that panicked (its task or thread unwound with the connection's lock): it is rolled back
/// first, so one panic does not fail every later write or hold the lock against other processes.
pub(super) fn begin(conn: &Connection) -> StorageResult<()> {
    if !conn.is_autocommit() {
        exec(conn, "ROLLBACK").ctx(WHAT)?;
    }
    exec(conn, "BEGIN IMMEDIATE").ctx(WHAT)
}

/// Applies `batch` inside the transaction [`begin`] opened, then commits it (or rolls it back);
/// true if it committed. An error here fails every job of the batch.
///
/// A batch of several jobs first runs without savepoints: each savepoint copies every page its
/// job touches into a sub-journal, and jobs rarely fail. If one does fail, the whole
/// transaction is rolled back and the batch runs again with a savepoint per job, so the failed
/// job's partial writes are undone alone (each job's work can run twice: it only touches the
/// database).
pub(super) fn apply_and_commit(
    conn: &Connection,
    clock: &dyn Clock,
    batch: &mut [&mut dyn Job],
) -> StorageResult<bool> {
    let result = apply(conn, clock, batch).and_then(|keep| match keep {
        Keep::Commit => exec(conn, "COMMIT").ctx(WHAT).map(|()| true),
        // The batch's only job failed: nothing to keep, and the job answers with its own error.
        Keep::Nothing => exec(conn, "ROLLBACK").ctx(WHAT).map(|()| false),
        Keep::Retry => {
            // Another process may take the write lock in between: then this waits for it (up
            // to the busy timeout, and fails the batch with a retryable `Busy` after that).
            exec(conn, "ROLLBACK").ctx(WHAT)?;
            begin(conn)?;
            with_savepoints(conn, clock, batch)?;
            exec(conn, "COMMIT").ctx(WHAT).map(|()| true)
        }
    });
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
    /// Roll it back and run the batch again, each job in a savepoint: one of its jobs failed.
    Retry,
}

/// The transaction's time and the version counter's value at its start.
fn open<'c>(conn: &'c Connection, clock: &dyn Clock) -> StorageResult<Tx<'c>> {
    let start: i64 = conn
        .prepare_cached("SELECT value FROM counters WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ctx("counters")?;
    Ok(Tx {
        conn,
        now: clock.now(),
        start,
        counter: Cell::new(start),
    })
}

fn apply(conn: &Connection, clock: &dyn Clock, batch: &mut [&mut dyn Job]) -> StorageResult<Keep> {
    let tx = open(conn, clock)?;
    for job in batch.iter_mut() {
        let ok = job.run(&tx);
        if conn.is_autocommit() {
            return Err(rolled_back());
        }
        if !ok {
            return Ok(if batch.len() == 1 {
                Keep::Nothing
            } else {
                Keep::Retry
            });
        }
    }
    tx.save_counter()?;
    Ok(Keep::Commit)
}

fn with_savepoints(
    conn: &Connection,
    clock: &dyn Clock,
    batch: &mut [&mut dyn Job],
) -> StorageResult<()> {
    let tx = open(conn, clock)?;
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
    tx.save_counter()
}

/// SQLite rolled the whole transaction back by itself (I/O error, full disk...).
fn rolled_back() -> StorageError {
    StorageError::Unavailable("the write transaction was rolled back by SQLite".into())
}
