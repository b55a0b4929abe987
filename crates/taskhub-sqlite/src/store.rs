//! [`SqliteStore`]: opening the database and routing reads and writes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use taskhub_core::InstanceId;
use taskhub_storage::{Clock, StorageError, StorageResult, TaskHubStore};

use crate::errors::SqlResultExt;
use crate::options::{Durability, SqliteOptions};
use crate::reader::ReadPool;
use crate::schema::{connect, migrate, user_version, Role};
use crate::writer::{Tx, Writer, WriterSetup, WriterStats};

/// A task hub in one SQLite file (WAL mode). Several processes may open the same file: every
/// write is a `BEGIN IMMEDIATE` transaction, so they serialize on SQLite's write lock.
///
/// Writes go to a dedicated writer thread that group-commits; reads use a small pool of read
/// connections on Tokio's blocking threads, so the async methods need a Tokio runtime.
pub struct SqliteStore {
    writer: Writer,
    readers: Arc<ReadPool>,
    path: PathBuf,
    durability: Durability,
    schema_version: u32,
    // Declared last: dropped after the writer thread has closed its connection.
    _temp: Option<TempFiles>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("schema_version", &self.schema_version)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `options.path`, migrates its schema, and
    /// starts the writer thread. Blocks while it waits for locks (up to the busy timeout).
    ///
    /// # Errors
    /// `Corrupt` naming the path if the file is not a SQLite database; `NewerSchema` if its
    /// schema is newer than this build; `OlderProcesses` if a migration is due while
    /// processes of an older build are alive on the hub (named); `Busy` if another process held the write lock past the busy timeout;
    /// `Unavailable` for I/O errors.
    pub fn open(options: SqliteOptions) -> StorageResult<Self> {
        Self::open_inner(options, None)
    }

    /// Opens a fresh database in the system temporary directory, deleted when the store is
    /// dropped. For tests and demos.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_temp(clock: Arc<dyn Clock>) -> StorageResult<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        #[expect(
            clippy::disallowed_methods,
            reason = "a file name unique across processes, not a decision about time (a \
                      ManualClock's time repeats from test to test)"
        )]
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!(
            "taskhub-{}-{}-{nanos}.sqlite",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        let temp = TempFiles(path.clone());
        Self::open_inner(SqliteOptions::new(path).with_clock(clock), Some(temp))
    }

    fn open_inner(options: SqliteOptions, temp: Option<TempFiles>) -> StorageResult<Self> {
        let path = options.path.clone();
        let conn = connect(
            &path,
            Role::Writer,
            options.durability,
            options.busy_timeout,
        )?;
        let schema_version = migrate(&conn, &path, options.busy_timeout, options.clock.now())?;
        let readers = Arc::new(ReadPool::new(
            path.clone(),
            options.busy_timeout,
            options.read_connections,
        ));
        let checkpoint_conn = connect(
            &path,
            Role::Writer,
            options.durability,
            options.busy_timeout,
        )?;
        let writer = Writer::start(WriterSetup {
            conn,
            clock: options.clock,
            max_batch: options.max_batch,
            name: "taskhub-sqlite-writer".into(),
            durability: options.durability,
            busy_timeout: options.busy_timeout,
            checkpoint_conn,
        })?;
        Ok(Self {
            writer,
            readers,
            path,
            durability: options.durability,
            schema_version,
            _temp: temp,
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability this store was opened with.
    #[must_use]
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The schema version of the file (after migration).
    #[must_use]
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// How many write requests and transactions the writer has handled: with group commit,
    /// `transactions` stays below `requests` under concurrent load.
    #[must_use]
    pub fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }

    /// The value of a `PRAGMA` as the writer connection sees it (e.g. `synchronous`:
    /// 1 = NORMAL, 2 = FULL; `journal_mode`: `wal`).
    ///
    /// # Errors
    /// As any write.
    pub async fn writer_pragma(&self, name: &str) -> StorageResult<String> {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(StorageError::InvalidArgument(format!(
                "{name:?} is not a pragma name"
            )));
        }
        let sql = format!("PRAGMA {name}");
        self.write(move |tx| {
            tx.conn
                .query_row(&sql, [], |r| {
                    let v: rusqlite::types::Value = r.get(0)?;
                    Ok(match v {
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        other => format!("{other:?}"),
                    })
                })
                .ctx("pragma")
        })
        .await
    }

    /// Reads the schema version from the file now (another process may have migrated it).
    ///
    /// # Errors
    /// As any read.
    pub async fn stored_schema_version(&self) -> StorageResult<u32> {
        self.read(|tx| user_version(tx).ctx("schema version")).await
    }

    /// How errors name this store's file.
    pub(crate) fn describe(&self) -> String {
        crate::schema::describe(&self.path)
    }

    /// `err`, or `NewerSchema` when it is a table or column this build needs that is gone
    /// because a newer build migrated the file under this process (so that the runtime stops
    /// taking work instead of failing every message until it is dead-lettered).
    async fn explain(&self, err: StorageError) -> StorageError {
        let missing = matches!(&err, StorageError::Backend(m)
            if m.contains("no such table") || m.contains("no such column"));
        if !missing {
            return err;
        }
        let what = self.describe();
        match self
            .readers
            .read(move |conn| crate::processes::check_version(conn, &what))
            .await
        {
            Err(newer @ StorageError::NewerSchema { .. }) => newer,
            _ => err,
        }
    }

    /// Runs a write on the writer thread, in the next group-commit batch.
    pub(crate) async fn write<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: Fn(&Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        match self.writer.write(false, work).await {
            Err(e) => Err(self.explain(e).await),
            ok => ok,
        }
    }

    /// Runs a write that need not survive a power loss (see [`writer`](crate::writer)): under
    /// `FULL` durability a batch of only such writes commits without an fsync.
    pub(crate) async fn write_relaxed<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: Fn(&Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        match self.writer.write(true, work).await {
            Err(e) => Err(self.explain(e).await),
            ok => ok,
        }
    }

    /// Runs a read in one snapshot on a pooled read connection.
    pub(crate) async fn read<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StorageResult<T> + Send + 'static,
    {
        match self.readers.read(work).await {
            Err(e) => Err(self.explain(e).await),
            ok => ok,
        }
    }

    /// Runs `sql`, a `DELETE` of the rows of `instance` (its `?1`), in a write; how many it
    /// deleted.
    pub(crate) async fn delete_rows_of(
        &self,
        what: &'static str,
        sql: &'static str,
        instance: &InstanceId,
    ) -> StorageResult<usize> {
        let instance = instance.clone();
        self.write(move |tx| {
            tx.conn
                .prepare_cached(sql)
                .and_then(|mut s| s.execute([instance.as_str()]))
                .ctx(what)
        })
        .await
    }

    /// Runs a point read (one row by key) on the calling thread, falling back to a blocking
    /// thread while the database is busy (see [`reader`](crate::reader)).
    pub(crate) async fn read_point<T, F>(&self, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> StorageResult<T> + Send + Sync + 'static,
    {
        match self.readers.read_point(work).await {
            Err(e) => Err(self.explain(e).await),
            ok => ok,
        }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.readers.close();
    }
}

impl TaskHubStore for SqliteStore {
    fn backend_name(&self) -> &'static str {
        "sqlite"
    }

    fn atomic_checkpoints(&self) -> bool {
        true
    }
}

/// A temporary database: its file and WAL files are removed on drop.
struct TempFiles(PathBuf);

impl Drop for TempFiles {
    fn drop(&mut self) {
        let _ = crate::delete_hub_files(&self.0);
    }
}
