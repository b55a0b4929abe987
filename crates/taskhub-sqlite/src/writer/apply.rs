//! Applying writes in one transaction: the batch of the writer thread, or one write on the
//! caller's thread.

use std::cell::Cell;

use rusqlite::Connection;
use taskhub_core::Timestamp;
use taskhub_storage::{Clock, StorageError, StorageResult};

use super::job::Job;
use crate::errors::SqlResultExt;

/// What a job sees while it runs: the connection inside the batch's transaction, the batch's
/// time, and the store-wide counter for ETags and receipts.
pub(crate) struct Tx<'c> {
    /// The write connection, inside `BEGIN IMMEDIATE` (and the job's savepoint, in a batch).
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

const WHAT: &str = "write transaction";

/// Takes the write lock: `BEGIN IMMEDIATE`.
pub(super) fn begin(conn: &Connection) -> StorageResult<()> {
    exec(conn, "BEGIN IMMEDIATE").ctx(WHAT)
}

/// Applies `batch` inside the transaction [`begin`] opened, then commits it (or rolls it back);
/// true if it committed. An error here fails every job of the batch.
pub(super) fn apply_and_commit(
    conn: &Connection,
    clock: &dyn Clock,
    batch: &mut [&mut dyn Job],
) -> StorageResult<bool> {
    let result = match apply(conn, clock, batch) {
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

fn apply(conn: &Connection, clock: &dyn Clock, batch: &mut [&mut dyn Job]) -> StorageResult<Keep> {
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
