//! How to open a SQLite task hub: the request struct of [`SqliteStore::open`](crate::SqliteStore::open).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::{Clock, SystemClock};

/// How hard a commit tries to survive a power loss.
///
/// The database is in WAL mode either way, so a crash of the process (kill -9) never loses a
/// committed transaction; the setting only matters when the machine itself goes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `PRAGMA synchronous = NORMAL`: the WAL is synced at checkpoints, not at every commit.
    /// A power loss may roll back the last commits, never corrupt the file.
    #[default]
    Normal,
    /// `PRAGMA synchronous = FULL`: every commit is synced to disk before it is acknowledged.
    /// Group commit (one transaction for everything queued at the writer) keeps this fast.
    Full,
}

impl Durability {
    /// The value of `PRAGMA synchronous` for this setting.
    #[must_use]
    pub fn pragma_value(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }
}

/// The default time a connection waits for a lock held by another connection or process.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The default number of idle read connections kept open.
pub const DEFAULT_READ_CONNECTIONS: usize = 4;

/// The default cap on the requests the writer applies in one transaction.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// Everything needed to open a SQLite task hub.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// The database file; created (with its directory's WAL files beside it) if missing.
    pub path: PathBuf,
    /// Sync policy of commits.
    pub durability: Durability,
    /// How long an operation waits for another connection's lock before it fails with
    /// `StorageError::Busy`.
    pub busy_timeout: Duration,
    /// The clock behind visibility timeouts and enqueue times.
    pub clock: Arc<dyn Clock>,
    /// Idle read connections kept open (more are opened on demand and closed after use).
    pub read_connections: usize,
    /// The most requests the writer applies in one transaction.
    pub max_batch: usize,
}

impl SqliteOptions {
    /// Options for `path` with the defaults: normal durability, a 5 s busy timeout, the
    /// system clock.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            durability: Durability::Normal,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            clock: Arc::new(SystemClock::new()),
            read_connections: DEFAULT_READ_CONNECTIONS,
            max_batch: DEFAULT_MAX_BATCH,
        }
    }

    /// The same options with another durability.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The same options with another clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same options with another busy timeout.
    #[must_use]
    pub fn with_busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}
