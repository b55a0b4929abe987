//! A small pool of read connections; reads run on Tokio's blocking threads.
//!
//! At most `max_idle` async reads run at once (the others wait for a permit), so a burst of
//! concurrent reads reuses the pooled connections instead of opening, using once and closing
//! a new connection for each read beyond the pool size (opening one parses the schema and
//! sets the pragmas: far more work than a point read).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use taskhub_storage::{StorageError, StorageResult};
use tokio::sync::Semaphore;

use crate::errors::SqlResultExt;
use crate::options::Durability;
use crate::schema::{connect, Role};

/// Idle read connections, opened on demand.
pub(crate) struct ReadPool {
    path: PathBuf,
    busy_timeout: Duration,
    max_idle: usize,
    idle: Mutex<Vec<Connection>>,
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
            permits: Arc::new(Semaphore::new(max_idle.max(1))),
        }
    }

    /// Runs `f` in a read transaction (one consistent snapshot) on a blocking thread.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> StorageResult<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StorageError::Unavailable("the read pool is closed".into()))?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            pool.read_blocking(f)
        })
        .await
        .map_err(|e| StorageError::Backend(format!("a read task failed: {e}")))?
    }

    /// Runs `f` in a read transaction on the calling thread.
    pub(crate) fn read_blocking<T, F>(&self, f: F) -> StorageResult<T>
    where
        F: FnOnce(&rusqlite::Transaction<'_>) -> StorageResult<T>,
    {
        let mut conn = self.take()?;
        let result = (|| {
            let tx = conn.transaction().ctx("read transaction")?;
            let value = f(&tx)?;
            // Ending a read transaction cannot lose anything; commit just releases the snapshot.
            tx.commit().ctx("read transaction")?;
            Ok(value)
        })();
        if conn.is_autocommit() {
            self.put(conn);
        }
        result
    }

    /// Closes the idle connections.
    pub(crate) fn close(&self) {
        self.lock().clear();
    }

    fn take(&self) -> StorageResult<Connection> {
        if let Some(conn) = self.lock().pop() {
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

    fn put(&self, conn: Connection) {
        let mut idle = self.lock();
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
