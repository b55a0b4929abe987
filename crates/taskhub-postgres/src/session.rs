//! What every pooled connection of a hub runs with — the settings a DBA asks of an
//! application — set by one `SET` batch when the pool opens the connection, so they hold
//! behind a pooler in session mode as on a direct connection:
//!
//! * `search_path`: the hub's schema;
//! * `default_transaction_isolation = 'read committed'`, pinned whatever the role's or the
//!   database's default: the fence (`checkpoint.rs`) and the conditional writes are written for
//!   it;
//! * `lock_timeout` and `statement_timeout` ([`PostgresOptions`]): a checkpoint waiting on a
//!   lock gives up and is retried (`Busy`), rather than holding its partition's fence for ever;
//! * `idle_in_transaction_session_timeout`: a worker stopped inside its transaction (SIGSTOP, a
//!   host's long pause) loses it, and the new owner's lease stops waiting
//!   ([`IDLE_IN_TRANSACTION_TIMEOUT`]).
//!
//! The connection's `application_name` ([`application_name`]: host and process) is a startup
//! parameter, so `pg_stat_activity` shows whose each connection is. The server's version is
//! checked when a hub is opened ([`check_server_version`]), and each connection's cache of
//! prepared statements is bounded ([`bound_statement_cache`]).

use deadpool_postgres::Object;
use taskhub_storage::{StorageError, StorageResult};

use crate::errors::PgResultExt;
use crate::options::PostgresOptions;

/// How long a transaction may sit idle (its client stopped) before the server ends it.
pub const IDLE_IN_TRANSACTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The oldest server the backend supports, as `server_version_num` says it (13.0).
pub const MIN_SERVER_VERSION: i32 = 130_000;

/// The most prepared statements one connection keeps: past it, the cache is emptied (the
/// server frees each statement as the client drops it), so queries whose text varies (a
/// listing's filters) cannot grow a connection's memory on the server without bound.
pub const STATEMENT_CACHE_MAX: usize = 256;

/// The `SET` batch a new pooled connection runs.
pub(crate) fn settings_sql(schema: &str, options: &PostgresOptions) -> String {
    format!(
        "SET search_path TO \"{schema}\";
         SET default_transaction_isolation TO 'read committed';
         SET lock_timeout TO {};
         SET statement_timeout TO {};
         SET idle_in_transaction_session_timeout TO {};",
        options.lock_timeout.as_millis(),
        options.statement_timeout.as_millis(),
        IDLE_IN_TRANSACTION_TIMEOUT.as_millis()
    )
}

/// `taskhub <host> <pid>`, cut to the 63 bytes the server keeps: which process a connection in
/// `pg_stat_activity` belongs to.
#[must_use]
pub fn application_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let mut name = format!("taskhub {host} {}", std::process::id());
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// Refuses a server older than [`MIN_SERVER_VERSION`], naming its version.
///
/// # Errors
/// `Backend` naming the server's version and the oldest supported.
pub fn check_server_version(version_num: i32, version: &str) -> StorageResult<()> {
    if version_num >= MIN_SERVER_VERSION {
        return Ok(());
    }
    Err(StorageError::Backend(format!(
        "the server runs PostgreSQL {version}; Taskhub needs PostgreSQL 13 or later"
    )))
}

/// Reads the server's version and refuses one older than [`MIN_SERVER_VERSION`].
pub(crate) async fn check_server(client: &Object) -> StorageResult<()> {
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int, current_setting('server_version')",
            &[],
        )
        .await
        .ctx("server version")?;
    check_server_version(row.get(0), row.get(1))
}

/// Empties the connection's statement cache once it holds more than [`STATEMENT_CACHE_MAX`].
pub(crate) fn bound_statement_cache(client: &Object) {
    if client.statement_cache.size() > STATEMENT_CACHE_MAX {
        client.statement_cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_13_are_refused_by_version() {
        assert!(check_server_version(130_000, "13.0").is_ok());
        assert!(check_server_version(170_002, "17.2").is_ok());
        let err = check_server_version(120_017, "12.17")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("12.17") && err.contains("13 or later"),
            "{err}"
        );
    }

    #[test]
    fn the_settings_pin_isolation_and_bound_waits() {
        let options = PostgresOptions::default();
        let sql = settings_sql("taskhub_x", &options);
        assert!(sql.contains("search_path TO \"taskhub_x\""));
        assert!(sql.contains("default_transaction_isolation TO 'read committed'"));
        assert!(sql.contains(&format!(
            "lock_timeout TO {}",
            options.lock_timeout.as_millis()
        )));
        assert!(sql.contains("idle_in_transaction_session_timeout TO 5000"));
    }

    #[test]
    fn the_application_name_fits_and_names_the_process() {
        let name = application_name();
        assert!(name.len() <= 63 && name.starts_with("taskhub "));
        assert!(name.ends_with(&std::process::id().to_string()) || name.len() == 63);
    }
}
