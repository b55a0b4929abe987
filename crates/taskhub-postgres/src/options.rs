//! The PostgreSQL backend's options: from code, or from configuration — the `[postgres]` table
//! of `taskhub.toml`, `TASKHUB_POSTGRES_<NAME>` environment variables, and explicit values such
//! as `--set postgres.pool_size=32` (later sources win; the layering is the seam's
//! [`BackendOptions`], this file writes only `set()`).
//!
//! The connection URL holds a password: keep it in the environment
//! (`TASKHUB_POSTGRES_URL`); it is never printed (`Debug` and every message show the host,
//! port, database and user only).
//!
//! ```
//! # fn main() -> Result<(), taskhub_postgres::PostgresConfigError> {
//! use taskhub_postgres::{BackendOptions, PostgresOptions};
//!
//! let mut options = PostgresOptions::default();
//! options.set("url", "postgres://app:secret@db.example:5432/jobs", "my flag")?;
//! options.set("pool_size", "32", "my flag")?;
//! assert!(!format!("{options:?}").contains("secret"));
//! let err = options.set("pool_size", "0", "TASKHUB_POSTGRES_POOL_SIZE").unwrap_err();
//! assert!(err.to_string().contains("postgres.pool_size"));
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use taskhub_storage::backend::{parse, BackendOptions, OptionError};

/// The table of `taskhub.toml` these options live in.
pub const TABLE: &str = "postgres";

/// The default of `max_batch`: the most checkpoints committed in one transaction.
pub const DEFAULT_MAX_BATCH: usize = 64;

/// The default pool size (connections per store; the `LISTEN` connection is one more).
pub const DEFAULT_POOL_SIZE: usize = 8;

/// The default `lock_timeout`: three times the idle-in-transaction timeout, so a lease write
/// outwaits a stopped worker's transaction, and a checkpoint stuck on a lock gives up.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(15);

/// The default `statement_timeout`.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach the server and how many connections to keep.
#[derive(Clone)]
pub struct PostgresOptions {
    /// The connection URL (`postgres://user:password@host:port/database?sslmode=require`) or
    /// key-value string. A secret: never printed.
    pub url: Option<String>,
    /// The most connections the store's pool opens.
    pub pool_size: usize,
    /// How long opening one connection may take.
    pub connect_timeout: Duration,
    /// A PEM file of extra root certificates to trust (a managed server's private CA), on top
    /// of the Mozilla roots. TLS itself is chosen by the URL's `sslmode` (`prefer`, the
    /// default, uses it when the server offers it; `require` insists).
    pub tls_ca_file: Option<PathBuf>,
    /// Wake other processes' pollers with `LISTEN/NOTIFY` when messages are written (one
    /// extra connection per store; on by default).
    pub notify: bool,
    /// The most checkpoints group-committed in one transaction (1: each alone).
    pub max_batch: usize,
    /// How long a statement waits for a lock before it fails (`Busy`, retried): a checkpoint
    /// stuck behind a lock does not hold its partition's fence for ever (0: no limit).
    pub lock_timeout: Duration,
    /// How long one statement may run before the server cancels it (`Unavailable`, retried;
    /// 0: no limit). Migrations run without either limit.
    pub statement_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            url: None,
            pool_size: DEFAULT_POOL_SIZE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            tls_ca_file: None,
            notify: true,
            max_batch: DEFAULT_MAX_BATCH,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &self.url.as_deref().map(redact))
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("tls_ca_file", &self.tls_ca_file)
            .field("notify", &self.notify)
            .field("max_batch", &self.max_batch)
            .field("lock_timeout", &self.lock_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .finish()
    }
}

/// The URL with what it says about where to connect, and nothing secret: `user@host:port/db`.
#[must_use]
pub fn redact(url: &str) -> String {
    match url.parse::<tokio_postgres::Config>() {
        Ok(c) => {
            let host = c
                .get_hosts()
                .first()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".to_owned());
            let port = c.get_ports().first().copied().unwrap_or(5432);
            format!(
                "{}@{host}:{port}/{}",
                c.get_user().unwrap_or("?"),
                c.get_dbname().unwrap_or("?")
            )
        }
        Err(_) => "(an unreadable connection URL)".to_owned(),
    }
}

/// A PostgreSQL option that cannot be applied, or a missing one: the seam's
/// [`OptionError`], naming `postgres.<name>` and its source.
pub type PostgresConfigError = OptionError;

impl PostgresOptions {
    /// Options for `url`, the rest default.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// The defaults with the `[postgres]` table of `file` (if given) and `env` applied.
    ///
    /// # Errors
    /// [`PostgresConfigError`] naming the option and its source.
    pub fn from_config(
        file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, PostgresConfigError> {
        Self::default().with_sources(file, env)
    }

    /// The connection URL, or the error that says how to set it.
    ///
    /// # Errors
    /// An error naming `postgres.url` and `TASKHUB_POSTGRES_URL`.
    pub fn require_url(&self) -> Result<&str, PostgresConfigError> {
        self.url.as_deref().ok_or_else(|| {
            Self::missing(
                "url",
                "set TASKHUB_POSTGRES_URL (postgres://user:password@host:port/database)",
            )
        })
    }
}

impl BackendOptions for PostgresOptions {
    const TABLE: &'static str = TABLE;
    const NAMES: &'static [&'static str] = &[
        "url",
        "pool_size",
        "connect_timeout",
        "tls_ca_file",
        "notify",
        "max_batch",
        "lock_timeout",
        "statement_timeout",
    ];

    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError> {
        let invalid = |reason: String| Self::invalid(name, origin, reason);
        match name {
            "url" => {
                let url = value.trim();
                // The parser's message may quote the value: say only that it is unreadable.
                url.parse::<tokio_postgres::Config>().map_err(|_| {
                    invalid(
                        "not a PostgreSQL connection URL (postgres://user:password@host:port/database) \
                         or key=value string"
                            .into(),
                    )
                })?;
                self.url = Some(url.to_owned());
            }
            "pool_size" => self.pool_size = parse::count(value).map_err(invalid)?,
            "max_batch" => self.max_batch = parse::count(value).map_err(invalid)?,
            "connect_timeout" => self.connect_timeout = duration(value).map_err(invalid)?,
            "lock_timeout" => self.lock_timeout = duration(value).map_err(invalid)?,
            "statement_timeout" => self.statement_timeout = duration(value).map_err(invalid)?,
            "notify" => self.notify = parse::switch(value).map_err(invalid)?,
            "tls_ca_file" if value.trim().is_empty() => self.tls_ca_file = None,
            "tls_ca_file" => self.tls_ca_file = Some(PathBuf::from(value.trim())),
            _ => return Err(Self::unknown(name, origin)),
        }
        Ok(())
    }

    /// The URL (a secret) and the CA file have no default.
    fn text_of(&self, name: &str) -> String {
        match name {
            "pool_size" => self.pool_size.to_string(),
            "notify" => self.notify.to_string(),
            "max_batch" => self.max_batch.to_string(),
            "connect_timeout" => humantime::format_duration(self.connect_timeout).to_string(),
            "lock_timeout" => humantime::format_duration(self.lock_timeout).to_string(),
            "statement_timeout" => humantime::format_duration(self.statement_timeout).to_string(),
            _ => String::new(),
        }
    }
}

/// A duration option's value, or the reason it is not one.
fn duration(value: &str) -> Result<Duration, String> {
    parse::duration(value)
        .ok_or_else(|| format!("expected a duration such as 10, 10s or 500ms, got {value:?}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn file_then_env_and_errors_name_the_option_without_the_secret() {
        let dir = std::env::temp_dir().join(format!("taskhub-pg-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("taskhub.toml");
        std::fs::write(
            &file,
            "[postgres]\npool_size = 4\nconnect_timeout = \"2s\"\nnotify = false\n",
        )
        .unwrap();
        let env = HashMap::from([(
            "TASKHUB_POSTGRES_URL".to_owned(),
            "postgres://u:hunter2@db:5433/x".to_owned(),
        )]);
        let o = PostgresOptions::from_config(Some(&file), &env).unwrap();
        assert_eq!(o.pool_size, 4);
        assert_eq!(o.connect_timeout, Duration::from_secs(2));
        assert!(!o.notify);
        let shown = format!("{o:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("u@db:5433/x"),
            "{shown}"
        );

        let env = HashMap::from([(
            "TASKHUB_POSTGRES_URL".to_owned(),
            "postgres://u:hunter2@db:notaport/x".to_owned(),
        )]);
        let err = PostgresOptions::from_config(None, &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("postgres.url")
                && err.contains("TASKHUB_POSTGRES_URL")
                && !err.contains("hunter2"),
            "{err}"
        );
        std::fs::write(&file, "[postgres]\nbogus = 1\n").unwrap();
        let err = PostgresOptions::from_config(Some(&file), &HashMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("postgres.bogus") && err.contains("unknown option"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
