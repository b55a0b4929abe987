//! The SQLite backend's options: [`SqliteOptions`], the request struct of
//! [`SqliteStore::open`](crate::SqliteStore::open), from code or from configuration — the
//! `[sqlite]` table of `taskhub.toml`, `TASKHUB_SQLITE_<NAME>` variables (and the older
//! `TASKHUB_DURABILITY`), and explicit values such as a CLI flag, later sources winning. The
//! layering is the seam's ([`BackendOptions`]); this file writes only `set()`. Errors name
//! `sqlite.<name>` and the value's source. The runtime's `Settings` hold only
//! backend-independent settings and skip the `[sqlite]` table.
//!
//! ```toml
//! # taskhub.toml
//! partition_count = 8        # runtime settings
//!
//! [sqlite]                   # read by this crate only
//! path = "hub.db"
//! durability = "full"
//! busy_timeout = "5s"
//! ```
//!
//! ```
//! # fn main() -> Result<(), taskhub_sqlite::SqliteConfigError> {
//! use taskhub_sqlite::{BackendOptions, Durability, SqliteOptions};
//!
//! let mut options = SqliteOptions::new("hub.db");
//! options.set("durability", "full", "my flag")?;
//! assert_eq!(options.durability, Durability::Full);
//! let err = options.set("durability", "fast", "TASKHUB_SQLITE_DURABILITY").unwrap_err();
//! assert!(err.to_string().contains("sqlite.durability"));
//! assert!(err.to_string().contains("TASKHUB_SQLITE_DURABILITY"));
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::backend::{parse, BackendOptions, OptionError};
use taskhub_storage::{Clock, SystemClock};

/// The table of `taskhub.toml` these options live in.
pub const TABLE: &str = "sqlite";

/// The older environment variable for `sqlite.durability`, still honoured.
pub const LEGACY_DURABILITY_VAR: &str = "TASKHUB_DURABILITY";

/// A SQLite option that cannot be applied: the seam's [`OptionError`], naming
/// `sqlite.<name>` and its source.
pub type SqliteConfigError = OptionError;

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

    /// Its name in settings: `normal` or `full`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Full => "full",
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

impl SqliteOptions {
    /// Options for `default_path` with the `[sqlite]` table of `file` (if given) and the
    /// environment `env` applied, in that order. What a library user calls to honour the same
    /// configuration as the `taskhub` CLI.
    ///
    /// # Errors
    /// [`SqliteConfigError`] naming the option and its source.
    pub fn from_config(
        default_path: impl Into<PathBuf>,
        file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, SqliteConfigError> {
        Self::new(default_path).with_sources(file, env)
    }
}

impl BackendOptions for SqliteOptions {
    const TABLE: &'static str = TABLE;
    const NAMES: &'static [&'static str] = &[
        "path",
        "durability",
        "busy_timeout",
        "read_connections",
        "max_batch",
    ];
    const LEGACY_ENV: &'static [(&'static str, &'static str)] =
        &[(LEGACY_DURABILITY_VAR, "durability")];

    /// Durations take seconds (`5`, `0.5`) or a unit (`500ms`, `5s`, `1m`).
    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError> {
        let invalid = |reason: String| Self::invalid(name, origin, reason);
        match name {
            "path" if value.trim().is_empty() => return Err(invalid("must not be empty".into())),
            "path" => self.path = PathBuf::from(value.trim()),
            "durability" => {
                self.durability = match value.trim().to_ascii_lowercase().as_str() {
                    "normal" => Durability::Normal,
                    "full" => Durability::Full,
                    _ => return Err(invalid(format!("expected normal or full, got {value:?}"))),
                }
            }
            "busy_timeout" => {
                self.busy_timeout = parse::duration(value).ok_or_else(|| {
                    invalid(format!(
                        "expected a duration such as 5, 5s or 500ms, got {value:?}"
                    ))
                })?;
            }
            "read_connections" => self.read_connections = parse::count(value).map_err(invalid)?,
            "max_batch" => self.max_batch = parse::count(value).map_err(invalid)?,
            _ => return Err(Self::unknown(name, origin)),
        }
        Ok(())
    }

    fn text_of(&self, name: &str) -> String {
        match name {
            "path" => self.path.display().to_string(),
            "durability" => self.durability.as_str().to_owned(),
            "busy_timeout" => humantime::format_duration(self.busy_timeout).to_string(),
            "read_connections" => self.read_connections.to_string(),
            "max_batch" => self.max_batch.to_string(),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_and_errors_name_the_option_and_source() {
        let dir =
            std::env::temp_dir().join(format!("taskhub-sqlite-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("taskhub.toml");
        std::fs::write(
            &file,
            "partition_count = 8\n[sqlite]\npath = \"x.db\"\ndurability = \"full\"\nbusy_timeout = \"250ms\"\n",
        )
        .unwrap();
        let o = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()).unwrap();
        assert_eq!(o.path, PathBuf::from("x.db"));
        assert_eq!(o.durability, Durability::Full);
        assert_eq!(o.busy_timeout, Duration::from_millis(250));

        let env = HashMap::from([(LEGACY_DURABILITY_VAR.to_owned(), "normal".to_owned())]);
        let o = SqliteOptions::from_config("d.db", Some(&file), &env).unwrap();
        assert_eq!(
            o.durability,
            Durability::Normal,
            "the variable wins over the file"
        );
        let env = HashMap::from([
            (LEGACY_DURABILITY_VAR.to_owned(), "normal".to_owned()),
            ("TASKHUB_SQLITE_DURABILITY".to_owned(), "full".to_owned()),
        ]);
        let o = SqliteOptions::from_config("d.db", None, &env).unwrap();
        assert_eq!(o.durability, Durability::Full);

        let env = HashMap::from([(LEGACY_DURABILITY_VAR.to_owned(), "weird".to_owned())]);
        let err = SqliteOptions::from_config("d.db", None, &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sqlite.durability")
                && err.contains("TASKHUB_DURABILITY")
                && err.contains("weird"),
            "{err}"
        );
        for (text, wants) in [
            (
                "[sqlite]\nbusy_timeout = \"soon\"\n",
                ["sqlite.busy_timeout", "taskhub.toml"],
            ),
            ("[sqlite]\nbogus = 1\n", ["sqlite.bogus", "unknown option"]),
            (
                "[sqlite]\nmax_batch = 0\n",
                ["sqlite.max_batch", "at least 1"],
            ),
        ] {
            std::fs::write(&file, text).unwrap();
            let err = SqliteOptions::from_config("d.db", Some(&file), &HashMap::new())
                .unwrap_err()
                .to_string();
            assert!(wants.iter().all(|w| err.contains(w)), "{err}");
        }
        std::fs::write(&file, "sqlite = 3\n").unwrap();
        assert!(SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()).is_err());
        std::fs::write(&file, "[sqlite\n").unwrap();
        assert!(matches!(
            SqliteOptions::from_config("d.db", Some(&file), &HashMap::new()),
            Err(OptionError::File { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}
