//! Mapping PostgreSQL's and the pool's errors onto [`StorageError`].

use std::time::Duration;

use deadpool_postgres::PoolError;
use taskhub_storage::StorageError;
use tokio_postgres::error::SqlState;

/// The back-off hint given with a `Busy` error.
const BUSY_RETRY_AFTER: Duration = Duration::from_millis(50);

/// Maps a client error; `what` names the object the operation touched (for messages).
///
/// * serialization failures, deadlocks, lock timeouts, too many connections → `Busy`
///   (retryable);
/// * a lost connection, a server shutting down or starting, I/O → `Unavailable` (retryable);
/// * a unique violation (a conditional insert that lost a race) → `Conflict`;
/// * a missing schema or table (the hub was deleted) → `NotFound`;
/// * data corruption, and values that do not convert back → `Corrupt`;
/// * anything else → `Backend`.
pub(crate) fn map_pg(what: &str, err: &tokio_postgres::Error) -> StorageError {
    if let Some(db) = err.as_db_error() {
        let code = db.code();
        let detail = db.message();
        return if [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(code)
        {
            StorageError::Busy {
                retry_after: Some(BUSY_RETRY_AFTER),
            }
        } else if [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::CONNECTION_EXCEPTION,
            SqlState::QUERY_CANCELED,
            SqlState::IO_ERROR,
            SqlState::DISK_FULL,
            SqlState::OUT_OF_MEMORY,
        ]
        .contains(code)
        {
            StorageError::Unavailable(format!("{what}: {detail}"))
        } else if *code == SqlState::UNIQUE_VIOLATION {
            StorageError::Conflict {
                what: what.to_owned(),
            }
        } else if [SqlState::UNDEFINED_TABLE, SqlState::INVALID_SCHEMA_NAME].contains(code) {
            StorageError::NotFound {
                what: format!("{what} (the task hub's schema: was the hub deleted?)"),
            }
        } else if [SqlState::DATA_CORRUPTED, SqlState::INDEX_CORRUPTED].contains(code) {
            StorageError::Corrupt {
                what: what.to_owned(),
                detail: detail.to_owned(),
            }
        } else {
            StorageError::Backend(format!("{what}: {detail} (SQLSTATE {})", code.code()))
        };
    }
    let text = with_causes(err);
    if text.starts_with("error deserializing") || text.starts_with("error serializing") {
        return StorageError::Corrupt {
            what: what.to_owned(),
            detail: text,
        };
    }
    // Closed connections, I/O and timeouts: the server or the network.
    StorageError::Unavailable(format!("{what}: {text}"))
}

/// The error's message followed by its causes' (`error performing TLS handshake: invalid peer
/// certificate: UnknownIssuer`): the client's own message often says only which step failed.
fn with_causes(err: &tokio_postgres::Error) -> String {
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Maps an error of the pool (waiting for or opening a connection).
pub(crate) fn map_pool(err: PoolError) -> StorageError {
    match err {
        PoolError::Backend(e) => map_pg("connection", &e),
        PoolError::PostCreateHook(deadpool_postgres::HookError::Backend(e)) => {
            map_pg("connection settings", &e)
        }
        PoolError::Timeout(_) => StorageError::Busy {
            retry_after: Some(BUSY_RETRY_AFTER),
        },
        other => StorageError::Unavailable(format!("connection pool: {other}")),
    }
}

/// A `Corrupt` error for a stored value that does not decode.
pub(crate) use taskhub_storage::sql::codec::corrupt;

/// Extension to map client results with a context.
pub(crate) trait PgResultExt<T> {
    /// Maps the error with [`map_pg`].
    fn ctx(self, what: &str) -> Result<T, StorageError>;
}

impl<T> PgResultExt<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, what: &str) -> Result<T, StorageError> {
        self.map_err(|e| map_pg(what, &e))
    }
}
