//! A small pool of read connections; reads run on Tokio's blocking threads.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use taskhub_storage::{StorageError, StorageResult};

use crate::errors::SqlResultExt;
use crate::options::Durability;
use crate::schema::{connect, Role};

/// Idle read connections, opened on demand.
pub(crate) struct ReadPool {
    path: PathBuf,
    busy_timeout: Duration,
    max_idle: usize,
    idle: Mutex<Vec<Connection>>,
}

impl ReadPool {
    /// An empty pool for `path`.
    pub(crate) fn new(path: PathBuf, busy_timeout: Duration, max_idle: usize) -> Self {
        Self {
            path,
            busy_timeout,
            max_idle,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` in a read transaction (one consistent snapshot) on a blocking thread.
    pub(crate) async fn read<T, F>(self: &std::sync::Arc<Self>, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> StorageResult<T> + Send + 'static,
    {
        let pool = std::sync::Arc::clone(self);
        tokio::task::spawn_blocking(move || pool.read_blocking(f))
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
