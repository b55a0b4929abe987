//! A small pool of read connections; reads run on Tokio's blocking threads.
//!
//! At most `max_idle` async reads run at once (the others wait for a permit), so a burst of
//! concurrent reads reuses the pooled connections instead of opening, using once and closing
//! a new connection for each read beyond the pool size (opening one parses the schema and
//! sets the pragmas: far more work than a point read).
//!
//! A *point* read (one row by its key: tens of microseconds) runs on the calling task's thread
//! instead: handing it to a blocking thread and back costs more than the read. It uses its own
//! connections with no busy timeout, so it never waits on the async thread: if SQLite answers
//! `BUSY` (a reader only sees that while another connection recovers the WAL), or no such
//! connection is free, the read is handed to a blocking thread after all, where the busy
//! timeout applies (and which opens another point-read connection, up to the pool's size).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use taskhub_storage::{StorageError, StorageResult};
use tokio::sync::Semaphore;

use crate::errors::SqlResultExt;
use crate::options::Durability;
use crate::schema::{connect, exec_cached as exec, Role};

/// Idle read connections, opened on demand.
pub(crate) struct ReadPool {
    path: PathBuf,
    busy_timeout: Duration,
    max_idle: usize,
    idle: Mutex<Vec<Connection>>,
    /// Connections for point reads on the async threads (busy timeout zero), at most
    /// `max_idle` of them (`inline_open` counts them, in use or not).
    inline: Mutex<Vec<Connection>>,
    inline_open: AtomicUsize,
    permits: Arc<Semaphore>,
}

impl ReadPool {
    /// An empty pool for `path`.
    pub(crate) fn new(path: PathBuf, busy_timeout: Duration, max_idle: usize) -> Self {
        Self {
            path,
            busy_timeout,
            max_idle,
            idle: Mutex::new(Vec::new()),
            inline: Mutex::new(Vec::new()),
            inline_open: AtomicUsize::new(0),
            permits: Arc::new(Semaphore::new(max_idle.max(1))),
        }
    }

    /// Runs `f` in a read transaction (one consistent snapshot) on a blocking thread.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StorageResult<T> + Send + 'static,
    {
        self.on_blocking_thread(move |pool| pool.read_blocking(f))
            .await
    }

    /// Runs `job` on a blocking thread once a permit is free.
    async fn on_blocking_thread<T, J>(self: &Arc<Self>, job: J) -> StorageResult<T>
    where
        T: Send + 'static,
        J: FnOnce(&Self) -> StorageResult<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StorageError::Unavailable("the read pool is closed".into()))?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(&pool)
        })
        .await
        .map_err(|e| StorageError::Backend(format!("a read task failed: {e}")))?
    }

    /// Runs `f` in a read transaction on the calling thread.
    pub(crate) fn read_blocking<T, F>(&self, f: F) -> StorageResult<T>
    where
        F: FnOnce(&Connection) -> StorageResult<T>,
    {
        let conn = self.take()?;
        let result = in_snapshot(&conn, f);
        if conn.is_autocommit() {
            put(&self.idle, conn, self.max_idle);
        }
        result
    }

    /// Runs a point read (one row by key) on the calling thread, or on a blocking thread if the
    /// database is busy or no point-read connection is free (see the module docs). `f` may run
    /// twice, so it takes its input by reference.
    pub(crate) async fn read_point<T, F>(self: &Arc<Self>, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> StorageResult<T> + Send + Sync + 'static,
    {
        match self.try_inline(&f) {
            Some(Err(StorageError::Busy { .. })) | None => {
                self.on_blocking_thread(move |pool| {
                    let value = pool.read_blocking(|conn| f(conn));
                    // Point-read connections are opened here, never on the async thread
                    // (opening one parses the schema), up to the pool's size.
                    pool.open_inline();
                    value
                })
                .await
            }
            Some(other) => other,
        }
    }

    /// `None` if no point-read connection is free.
    fn try_inline<T, F>(&self, f: &F) -> Option<StorageResult<T>>
    where
        F: Fn(&Connection) -> StorageResult<T>,
    {
        let conn = lock(&self.inline).pop()?;
        let result = in_snapshot(&conn, f);
        if conn.is_autocommit() {
            lock(&self.inline).push(conn);
        } else {
            self.inline_open.fetch_sub(1, Ordering::SeqCst);
        }
        Some(result)
    }

    /// Opens one more point-read connection if there are fewer than the pool's size.
    fn open_inline(&self) {
        let opened = self
            .inline_open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_idle.max(1)).then_some(n + 1)
            });
        if opened.is_err() {
            return;
        }
        match connect(&self.path, Role::Reader, Durability::Normal, Duration::ZERO) {
            Ok(conn) => lock(&self.inline).push(conn),
            // The next fallback read tries again.
            Err(_) => {
                self.inline_open.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Closes the idle connections.
    pub(crate) fn close(&self) {
        lock(&self.idle).clear();
        lock(&self.inline).clear();
    }

    fn take(&self) -> StorageResult<Connection> {
        if let Some(conn) = lock(&self.idle).pop() {
            return Ok(conn);
        }
        // The sync policy only affects commits, and readers never commit a write.
        connect(
            &self.path,
            Role::Reader,
            Durability::Normal,
            self.busy_timeout,
        )
    }
}

/// Runs `f` in one read transaction (one consistent snapshot) on `conn`.
fn in_snapshot<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> StorageResult<T>,
) -> StorageResult<T> {
    const WHAT: &str = "read transaction";
    exec(conn, "BEGIN").ctx(WHAT)?;
    let result = f(conn);
    // Ending a read transaction cannot lose anything; either way it just releases the snapshot.
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = exec(conn, end).ctx(WHAT);
    let value = result?;
    ended?;
    Ok(value)
}

fn put(pool: &Mutex<Vec<Connection>>, conn: Connection, max_idle: usize) {
    let mut idle = lock(pool);
    if idle.len() < max_idle {
        idle.push(conn);
    }
}

fn lock(pool: &Mutex<Vec<Connection>>) -> std::sync::MutexGuard<'_, Vec<Connection>> {
    pool.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn pool(dir: &std::path::Path) -> Arc<ReadPool> {
        let path = dir.join("points.db");
        let conn = connect(&path, Role::Writer, Durability::Normal, Duration::ZERO).unwrap();
        crate::schema::migrate(
            &conn,
            &path,
            Duration::ZERO,
            taskhub_core::Timestamp::from_millis(0),
        )
        .unwrap();
        Arc::new(ReadPool::new(path, Duration::from_secs(1), 2))
    }

    fn scratch() -> std::path::PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "taskhub-reader-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Where a point read counting the instances ran.
    async fn read_here(pool: &Arc<ReadPool>) -> std::thread::ThreadId {
        pool.read_point(|conn| {
            conn.query_row("SELECT count(*) FROM instances", [], |r| r.get::<_, i64>(0))
                .ctx("count")?;
            Ok(std::thread::current().id())
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_point_read_runs_on_the_calling_thread_once_its_connection_is_open() {
        let dir = scratch();
        let pool = pool(&dir);
        let caller = std::thread::current().id();
        // The first read finds no point-read connection: it runs on a blocking thread, which
        // opens one (never the async thread).
        assert_ne!(read_here(&pool).await, caller);
        assert_eq!(pool.inline_open.load(Ordering::SeqCst), 1);
        assert_eq!(read_here(&pool).await, caller);
        assert_eq!(read_here(&pool).await, caller);
        assert_eq!(pool.inline_open.load(Ordering::SeqCst), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_busy_point_read_is_retried_on_a_blocking_thread() {
        let dir = scratch();
        let pool = pool(&dir);
        let caller = std::thread::current().id();
        read_here(&pool).await;
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let ran_on = pool
            .read_point(move |_conn| {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(StorageError::Busy { retry_after: None });
                }
                Ok(std::thread::current().id())
            })
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_ne!(ran_on, caller, "the retry must not run on the async thread");
        // Any other error is the answer, not retried.
        let err = pool
            .read_point(|_conn| Err::<(), _>(StorageError::Backend("broken".into())))
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::Backend("broken".into()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
